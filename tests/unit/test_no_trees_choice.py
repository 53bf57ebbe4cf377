"""``scoi ingest --no-trees`` stores both sides as a language without a parser is (scheme
``none``), whatever is installed, and the hint to add trees names only the command when a
parser is installed, the install step too when none is (German has none here)."""

from __future__ import annotations

import pytest

from ingest.options import IngestError, IngestOptions
from ingest.pipeline import ingest_files
from scoi.parsers import NO_TREES, add_trees_hint, choose_parser, without_trees


def test_no_trees_choice_is_the_scheme_of_a_language_without_parser():
    assert choose_parser("fr").scheme.has_trees  # a parser is installed, and not used
    choice = without_trees("fr")
    assert choice.scheme == NO_TREES and str(choice.scheme) == "none"
    assert "--no-trees" in choice.note and "scoi reanalyze --lang fr" in choice.note


def test_add_trees_hint_installs_a_parser_only_when_none_is():
    assert add_trees_hint("fr") == f"add them with {choose_parser('fr').name}: scoi reanalyze --lang fr"
    german = add_trees_hint("de")
    assert german.startswith("no de parser is installed: install one (") and "de_core_news_sm" in german
    assert german.endswith("then scoi reanalyze --lang de")


@pytest.mark.parametrize("extra", [{"parsers": {"fr": "fr_core_news_sm"}}, {"require_parser": True}])
def test_no_trees_with_a_parser_is_refused_before_the_database_is_touched(tmp_path, extra):
    tsv = tmp_path / "c.tsv"
    tsv.write_text("fr\ten\nBonjour.\tHello.\n", encoding="utf-8")
    opts = IngestOptions(files=[str(tsv)], src="fr", tgt="en", no_trees=True, **extra)
    with pytest.raises(IngestError, match="--no-trees stores no trees, which contradicts --(parser|require-parser)"):
        ingest_files(opts, "postgresql://nobody@/nothing?host=/nonexistent")
