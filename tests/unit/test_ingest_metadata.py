"""Reading metadata and language variants (ingest.readers, ingest.read_tmx): pure, no database."""

from __future__ import annotations

import pytest

from ingest.read_tmx import lang_matches
from ingest.readers import read_records


@pytest.mark.parametrize(("code", "wanted", "score"), [
    ("fr-FR", "fr-fr", 2), ("FR_fr", "fr-FR", 2), ("fr-CA", "fr", 1), ("fr", "fr-FR", 1), ("en-US", "fr", 0),
    ("", "fr", 0), ("frr", "fr", 0)])
def test_language_codes_match_case_insensitively_and_across_regions(code, wanted, score):
    assert lang_matches(code, wanted) == score


def test_jsonl_metadata_that_jsonb_cannot_store_is_a_bad_row(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"src": "Oui.", "tgt": "Yes.", "score": NaN}\n{"src": "Non.", "tgt": "No.", "n": "a\\u0000b"}\n'
                    '{"src": "Si.", "tgt": "If.", "tags": ["x", 2]}\n', encoding="utf-8")
    recs = list(read_records([str(path)], "jsonl"))
    assert [r.problem for r in recs[:2]] == ["metadata holds nan (not a JSON number), which PostgreSQL jsonb cannot store",
                                             "metadata contains a NUL character (U+0000), which PostgreSQL jsonb "
                                             "cannot store"]
    assert recs[2].meta == {"tags": ["x", 2]}


def test_tsv_header_extra_columns_need_names(tmp_path):
    from ingest.records import InputError

    path = tmp_path / "c.tsv"
    path.write_text("src\ttgt\t\nBonjour.\tHello.\tx\n", encoding="utf-8")
    with pytest.raises(InputError, match="extra columns need distinct, non-empty names"):
        list(read_records([str(path)], "tsv", src_lang="fr", tgt_lang="en"))


def test_a_tmx_tuv_with_another_language_only_is_a_bad_row_naming_the_codes(tmp_path):
    path = tmp_path / "m.tmx"
    path.write_text('<tmx version="1.4"><header/><body><tu><tuv xml:lang="de-DE"><seg>Hallo</seg></tuv>'
                    '<tuv xml:lang="en-GB"><seg>Hello</seg></tuv></tu></body></tmx>', encoding="utf-8")
    [rec] = list(read_records([str(path)], "tmx", src_lang="fr", tgt_lang="en"))
    assert rec.problem == "<tu> lacks a <tuv> with a <seg> for fr (languages found: de-DE, en-GB)"
