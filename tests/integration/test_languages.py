"""Languages without a parser: stored without trees, a target always and a source for the
methods that read no tree; ``--require-parser`` keeps the strict behaviour; ``scoi
reanalyze`` adds the trees afterwards. German has no parser installed here (the real case
these tests stand for); French is stored without trees on purpose (``--parser fr=none``) to
check that reanalysing gives exactly the trees a normal ingest stores.
"""

from __future__ import annotations

import psycopg
import pytest

from ingest.options import IngestOptions
from ingest.pipeline import ingest_files
from ingest.reanalyze import ReanalyzeOptions, reanalyze
from scoi.corpora import language_trees
from scoi.parsers import ParserNotAvailable, choose_parser
from scoi.selection.selector import SelectionError, Selector
from tests.helpers.database import scalar
from tests.helpers.ingest import PIPELINES, assert_consistent

EN_DE = [
    ("A man is playing a guitar on the street.", "Ein Mann spielt auf der Straße Gitarre."),
    ("Two dogs run across a green field.", "Zwei Hunde rennen über eine grüne Wiese."),
    ("A woman in a red dress is dancing.", "Eine Frau in einem roten Kleid tanzt."),
    ("Children are playing football in the park.", "Kinder spielen im Park Fußball."),
    ("An old man reads a newspaper on a bench.", "Ein alter Mann liest auf einer Bank Zeitung."),
    ("A dog catches a ball in the water.", "Ein Hund fängt einen Ball im Wasser."),
]


def _en_de(tmp_path, pairs=EN_DE):
    en, de = tmp_path / "train.en", tmp_path / "train.de"
    en.write_text("".join(e + "\n" for e, _ in pairs), encoding="utf-8")
    de.write_text("".join(d + "\n" for _, d in pairs), encoding="utf-8")
    return [str(en), str(de)]


def test_german_has_no_parser_here():
    """The premise of these tests: if a German parser gets installed, they must change."""
    with pytest.raises(ParserNotAvailable, match="de_core_news_sm"):
        choose_parser("de")
    assert choose_parser("de", required=False).scheme.has_trees is False


def test_target_without_parser_is_stored_without_trees(tmp_path, db_url):
    s = ingest_files(IngestOptions(files=_en_de(tmp_path), src="en", tgt="de", workers=0), db_url)
    assert s.inserted == len(EN_DE) and s.parsers["de"] == "none"
    assert any("scoi reanalyze --lang de" in n for n in s.notes)
    with psycopg.connect(db_url) as conn:
        rows = {(r["lang"], r["tree_tokens"]): r["sentences"] for r in language_trees(conn)}
    assert rows == {("de", "none"): len(EN_DE), ("en", "spacy"): len(EN_DE)}
    # Every side's tokens and postings, trees only where a parser ran.
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE lang = 'de' AND term_keys = '{}'") == len(EN_DE)
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE lang = 'en' AND term_keys = '{}'") == 0
    assert scalar(db_url, "SELECT count(*) FROM bm25_doc d JOIN sentence s ON s.id = d.sentence_id "
                          "WHERE s.lang = 'de'") == len(EN_DE)
    assert_consistent(db_url)

    with Selector("en", "de", url=db_url, method="scoi", k=2) as sel:  # en has trees: every method
        picked = sel.select("A man is playing a guitar.")
        assert picked.selected[0].tgt == "Ein Mann spielt auf der Straße Gitarre."
    for method in ("bm25", "rbm25", "random", "zero"):  # de as a source: the tree-free methods
        with Selector("de", "en", url=db_url, method=method, k=2) as sel:
            r = sel.select("Ein Hund fängt einen Ball.")
            assert "parser:none" in r.signature
            if method in ("bm25", "rbm25"):
                assert r.selected[0].src == "Ein Hund fängt einen Ball im Wasser."
    for method in ("scoi", "poly-topk", "dpp", "syntax", "word", "scoi-word-first"):
        with pytest.raises(SelectionError, match=f"method {method} needs dependency trees of the de sentences.*"
                                                 "de_core_news_sm.*scoi reanalyze --lang de"):
            Selector("de", "en", url=db_url, method=method)
    with Selector("de", "en", url=db_url, method="bm25") as sel:  # a later call with a tree method too
        with pytest.raises(SelectionError, match="scoi reanalyze --lang de"):
            sel.select("Ein Hund.", method="scoi")


def test_require_parser_refuses_and_writes_nothing(tmp_path, db_url):
    with pytest.raises(ParserNotAvailable, match="no dependency parser installed for language 'de'"):
        ingest_files(IngestOptions(files=_en_de(tmp_path), src="en", tgt="de", workers=0, require_parser=True),
                     db_url)
    assert scalar(db_url, "SELECT count(*) FROM corpus") == 0
    assert scalar(db_url, "SELECT count(*) FROM sentence") == 0


def test_reanalyze_adds_trees_to_a_language_stored_without(tmp_path, db_url, few):
    from tests.helpers.ingest import write_tsv

    tsv = write_tsv(tmp_path / "few.tsv", few)
    s = ingest_files(IngestOptions(files=[str(tsv)], src="fr", tgt="en", workers=0, parsers={"fr": "none"}), db_url)
    assert s.parsers["fr"] == "none"
    with pytest.raises(SelectionError, match="scoi reanalyze --lang fr"):
        Selector("fr", "en", url=db_url, method="scoi")
    # Nothing to do without naming a language whose parser is missing; here fr's is installed.
    summary = reanalyze(ReanalyzeOptions(langs=["fr"], workers=0, batch_size=7), db_url)
    assert summary.reanalyzed == len({fr for fr, _ in few}) and summary.schemes["fr"].startswith(PIPELINES["fr"])
    stored = dict(psycopg.connect(db_url).execute(
        "SELECT text, term_keys FROM sentence WHERE lang = 'fr'").fetchall())

    # The same trees as an ingest that parsed French in the first place stores.
    from scoi.analysis import analyzer

    want = {t: sorted(a.terms) for t, a in zip(stored, analyzer("fr", PIPELINES["fr"]).analyze(list(stored)))}
    assert {t: sorted(k) for t, k in stored.items()} == want
    assert_consistent(db_url)
    with Selector("fr", "en", url=db_url, method="scoi", k=2) as sel:
        assert len(sel.select(few[0][0]).selected) == 2
    again = reanalyze(ReanalyzeOptions(langs=["fr"], workers=0), db_url)
    assert again.todo == {}


def test_reanalyze_without_parser_says_what_to_install(tmp_path, db_url):
    ingest_files(IngestOptions(files=_en_de(tmp_path), src="en", tgt="de", workers=0), db_url)
    with pytest.raises(ParserNotAvailable, match="de_core_news_sm"):
        reanalyze(ReanalyzeOptions(langs=["de"], workers=0), db_url)
    everything = reanalyze(ReanalyzeOptions(workers=0), db_url)  # every language: de is noted, left alone
    assert everything.todo == {} and any(n.startswith("de: left on none") for n in everything.notes)
