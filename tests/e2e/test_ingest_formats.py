"""TMX and Moses-pair input through ``scoi ingest``."""

from __future__ import annotations

from collections import Counter

from tests.helpers.cli import cli_json
from tests.helpers.ingest import (
    gzipped,
    stored_pairs,
    write_moses,
    write_tmx,
)


def test_tmx_through_the_cli(db_url, tmp_path, few):
    """TMX with region subtags (fr-FR / en-GB), gzipped, via `scoi ingest` (format guessed)."""
    path = gzipped(write_tmx(tmp_path / "memory.tmx", few, src_lang="fr-FR", tgt_lang="en-GB"))
    out = cli_json(["ingest", str(path), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url)
    assert (out["corpus"], out["inserted"], out["rejected"]) == ("memory", len(few), 0)
    assert stored_pairs(db_url) == Counter(few)


def test_moses_pair_through_the_cli(db_url, tmp_path, few):
    fr, en = write_moses(tmp_path, "europarl-v7.fr-en", few)
    out = cli_json(["ingest", str(fr), str(en), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url)
    assert (out["corpus"], out["inserted"]) == ("europarl-v7.fr-en", len(few))
    assert stored_pairs(db_url) == Counter(few)
