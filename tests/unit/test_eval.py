"""``scoi eval`` without a database: a COMET model name that is not on this machine is a
quick, clear error (no download attempted)."""

from __future__ import annotations


import pytest

from scoi.jobs.eval import EvalError, resolve_comet_checkpoint


def test_comet_hub_name_not_in_cache_fails_offline():
    with pytest.raises(EvalError, match="not available offline.*does not download"):  # cache only, no download
        resolve_comet_checkpoint("scoi-test/no-such-comet-model")
