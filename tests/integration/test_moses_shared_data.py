"""scoi.text.moses against sacremoses 0.2.0 on real text: every French and English line of
the development data (Europarl, Multi30k, Tatoeba; $SCOI_DEV_DATA, as for benchmarks/shared_data.py); skipped where it is
absent. The parity on all code points and on arbitrary text: tests/unit/test_moses.py."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from tests.helpers.moses import ours, run, theirs

# SCOI_DEV_DATA, else shared/data beside the repository's folder (benchmarks/shared_data.py)
SHARED = Path(os.environ.get("SCOI_DEV_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def shared_lines(lang):
    for path in sorted(SHARED.glob(f"*/*.{lang}")) + sorted(SHARED.glob(f"*/*.{lang}.gz")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            yield from (line.rstrip("\n") for line in f)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_equals_sacremoses_on_shared_data(lang):
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent")
    n = 0
    for line in shared_lines(lang):
        assert run(ours(lang), line) == run(theirs(lang), line), line
        n += 1
    assert n > 10_000
