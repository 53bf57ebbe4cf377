"""Ingest without a database: the header rule, and the rate in
ingest's summary."""

from __future__ import annotations


def test_header_rule_and_flags():
    from ingest.read_text import looks_like_header

    for cells in (["French", "English"], ["français", "ENGLISH"], ["fr", "en"], ["src", "tgt"], ["Source", "Target"]):
        assert looks_like_header(cells, "fr", "en"), cells
    for cells in (["Bonjour", "Hello"], ["German", "English"], ["Paris", "London"]):
        assert not looks_like_header(cells, "fr", "en"), cells


def test_rate_format():
    from scoi.cli.ingest_cmd import _rate

    assert [_rate(x) for x in (0.0, 0.4, 3.25, 12.6, 1234.4)] == ["0", "0.4", "3.2", "13", "1234"]
