"""Every input format (TSV with and without header, Moses pair, TMX 1.4, JSONL), plain and
gzipped, stores the same rows; a reversed direction finds the same pairs."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.helpers.ingest import (
    FORMATS,
    assert_consistent,
    ingest_inprocess,
    make_input,
    snapshot,
    stored_pairs,
    write_tsv,
)


@pytest.fixture(scope="module")
def reference_snapshot(server_url, template_url, few, tmp_path_factory):
    """The few pairs ingested from a plain TSV: what every other format must store."""
    from tests.helpers.database import scratch_database

    path = write_tsv(tmp_path_factory.mktemp("ref") / "c.fr-en.tsv", few)
    with scratch_database(server_url) as url:
        s = ingest_inprocess(url, [path])
        assert (s.read, s.inserted) == (len(few), len(few))
        yield _without_lines(snapshot(url))


def _without_lines(snap: dict) -> dict:
    # Line numbers differ between formats (header, TMX); everything else must not.
    return {**snap, "pairs": sorted((a, b) for a, b, _ in snap["pairs"])}


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_stores_the_same_rows(db_url, tmp_path, few, reference_snapshot, fmt, gz):
    files = make_input(fmt, tmp_path, few, gz)
    s = ingest_inprocess(db_url, files)
    assert (s.read, s.inserted, s.duplicates, s.rejected) == (len(few), len(few), 0, 0)
    assert stored_pairs(db_url) == Counter(few)
    assert _without_lines(snapshot(db_url)) == reference_snapshot
    assert_consistent(db_url)


def test_reversed_direction_collides_with_the_same_pairs(db_url, tmp_path, few):
    """An en-fr file of the same pairs adds nothing: a pair is stored once whatever the direction."""
    write_tsv(tmp_path / "a.tsv", few)
    (tmp_path / "b.tsv").write_text("".join(f"{en}\t{fr}\n" for fr, en in few), encoding="utf-8")
    first = ingest_inprocess(db_url, [tmp_path / "a.tsv"], corpus="a")
    second = ingest_inprocess(db_url, [tmp_path / "b.tsv"], corpus="b", src="en", tgt="fr")
    assert (first.inserted, second.inserted, second.duplicates) == (len(few), 0, len(few))
    assert second.parsed_sentences == 0  # nothing parsed again
    assert stored_pairs(db_url) == Counter(few)
