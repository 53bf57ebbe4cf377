"""The progress bar of long CLI work (ingest, reanalyze): it needs the real rich Console
behind the CLI's lazily built one (rich's Live enters the console as a context manager)."""

from __future__ import annotations

from scoi.cli.common import rate_bar


def test_rate_bar_counts_and_hides() -> None:
    with rate_bar("ingest", "pairs", True) as (advance, set_total):
        assert advance is not None and set_total is not None
        set_total(10)
        advance(4)
        advance(6)
    with rate_bar("ingest", "pairs", False) as (advance, set_total):
        assert advance is None and set_total is None
