"""The analysis scheme's name (pipeline, version, tree tokens) as stored and signed."""

from __future__ import annotations

from scoi.analysis import TREE_TOKENS, Scheme


def test_scheme_string():
    assert TREE_TOKENS == "spacy"
    assert str(Scheme("fr_core_news_sm", "3.8.0")) == "fr_core_news_sm==3.8.0/spacy-tokens"
    assert str(Scheme("fr_core_news_sm", "3.8.0", "moses")) == "fr_core_news_sm==3.8.0/moses-tokens"
