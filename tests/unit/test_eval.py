"""``scoi eval`` without a database: a COMET model name that is not on this machine is a
quick, clear error (no download attempted)."""

from __future__ import annotations

import time

import pytest

from scoi.jobs.eval import EvalError, resolve_comet_checkpoint


def test_comet_hub_name_not_in_cache_fails_offline():
    t0 = time.monotonic()
    with pytest.raises(EvalError, match="not available offline.*does not download"):
        resolve_comet_checkpoint("scoi-test/no-such-comet-model")
    assert time.monotonic() - t0 < 10  # no network attempt
