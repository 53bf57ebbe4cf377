"""A memory stored under a regional code (fr-FR, as TMX files name languages) is parsed and
tokenized by the language's own parser and Moses rules, so tree methods work on it."""

from __future__ import annotations

import pytest

from scoi.analysis import Analyzer
from scoi.core.names import base_language
from scoi.parsers import choose_parser
from tests.helpers.cli import cli_json
from tests.helpers.ingest import write_tmx


@pytest.mark.parametrize(("code", "base"), [("fr", "fr"), ("fr-FR", "fr"), ("pt_BR", "pt"), ("zh-Hant-TW", "zh"),
                                            ("FRA", "fra")])
def test_base_language_is_the_primary_subtag(code: str, base: str) -> None:
    assert base_language(code) == base

def test_a_regional_code_gets_the_languages_parser_and_moses_rules() -> None:
    plain, regional = choose_parser("fr"), choose_parser("fr-fr")
    assert regional.name == plain.name and regional.lang == "fr-fr"
    text = "L'homme n'a pas « vu » 1 000,5 chats."
    assert Analyzer("fr-fr", regional.name).tokenize(text) == Analyzer("fr", plain.name).tokenize(text)

def test_ingest_under_fr_FR_stores_trees_and_scoi_selects(tmp_path, db_url) -> None:
    pairs = [("Le chat dort sur le canapé.", "The cat sleeps on the sofa."),
             ("Le chien mange dans la cuisine.", "The dog eats in the kitchen."),
             ("Un homme lit un livre.", "A man reads a book.")]
    path = write_tmx(tmp_path / "m.tmx", pairs)
    report = cli_json(["ingest", str(path), "--src", "fr-FR", "--tgt", "en-GB", "--workers", "0"], db_url)
    assert report["inserted"] == 3, report
    out = cli_json(["select", "Le chat mange.", "--src", "fr-fr", "--tgt", "en-gb", "--method", "scoi", "-k", "2",
                    "--json"], db_url)
    assert len(out["selected"]) == 2
