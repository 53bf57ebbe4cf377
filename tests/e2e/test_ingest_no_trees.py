"""``scoi ingest --no-trees`` as a user runs it: the demo memory loaded with tokens and the
BM25 index only, the tree-free methods, the fuzzy lookup and exact reuse working at once, the tree
methods refused in one line naming ``scoi reanalyze``; after ``scoi reanalyze`` the stored
terms and the scoi selections are those of a normal ingest (``job_db``: the same demo
file ingested with its trees)."""

from __future__ import annotations

import json

import psycopg

from scoi.reuse import exact_matches
from tests.helpers.cli import cli, last_json, refused, run_scoi
from tests.helpers.database import scalar
from tests.helpers.ingest import DEMO, assert_consistent, demo_pairs

QUERIES = ["Bonjour, comment allez-vous ce soir ?", "Le chat dort sur le canapé du salon.",
           "Nous avons pris le train pour aller à la mer."]


def _select(db: str, query: str, method: str) -> list[tuple[str, str, str]]:
    """The pairs ``scoi select`` picks (in this process: many selections, the process is not the point)."""
    out = last_json(cli(["select", query, "--src", "fr", "--tgt", "en", "--method", method, "--json"], db))
    return [(p["src"], p["tgt"], p.get("criterion")) for p in out["selected"]]


def _stored(db: str) -> dict[tuple[str, str], tuple]:
    """(lang, text) -> (tokens, term keys, term multiplicities) of every stored sentence."""
    with psycopg.connect(db) as conn:
        rows = conn.execute("SELECT lang, text, tokens, term_keys, term_mults FROM sentence").fetchall()
    return {(lang, text): rest for lang, text, *rest in rows}


def test_no_trees_serves_bm25_at_once_and_reanalyze_adds_a_normal_ingests_trees(db_url, job_db):
    summary = last_json(run_scoi(["ingest", str(DEMO), "--src", "fr", "--tgt", "en", "--workers", "1",
                                  "--no-trees", "--json"], db_url))
    assert summary["inserted"] == len(demo_pairs()) and summary["parsers"] == {"fr": "none", "en": "none"}
    assert any("--no-trees" in n and "scoi reanalyze --lang fr" in n for n in summary["notes"])
    # Tokens and the index as a normal ingest stores them; no terms, no sentence_term rows.
    assert scalar(db_url, "SELECT count(*) FROM sentence_term") == 0
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE term_keys <> '{}'") == 0
    assert scalar(db_url, "SELECT count(*) FROM sentence s JOIN bm25_doc d ON d.sentence_id = s.id") == \
        scalar(db_url, "SELECT count(*) FROM sentence")
    normal = _stored(job_db)
    assert {k: v[0] for k, v in _stored(db_url).items()} == {k: v[0] for k, v in normal.items()}
    assert_consistent(db_url)

    # At once: the tree-free methods and the fuzzy lookup give what a normal ingest gives.
    for query in QUERIES:
        for method in ("bm25", "rbm25"):
            assert _select(db_url, query, method) == _select(job_db, query, method), (query, method)
    lookup = [cli(["lookup", QUERIES[0], "--src", "fr", "--tgt", "en", "--json"], db) for db in (db_url, job_db)]
    assert json.loads(lookup[0].stdout.splitlines()[-1])["matches"] == \
        json.loads(lookup[1].stdout.splitlines()[-1])["matches"] != []
    stored_fr, stored_en = demo_pairs()[5]  # a job's exact reuse finds the stored translation
    with psycopg.connect(db_url) as conn:
        assert exact_matches(conn, "fr", "en", [stored_fr])[stored_fr].target == stored_en
    # The tree methods: one line, the command that adds the trees (a parser is installed here).
    line = refused(run_scoi(["select", QUERIES[0], "--src", "fr", "--tgt", "en", "--method", "scoi"], db_url),
                   "method scoi needs dependency trees of the fr sentences", "--no-trees",
                   "scoi reanalyze --lang fr")
    assert "install one" not in line

    # Trees later: every sentence gets a normal ingest's terms; scoi selects as it does there.
    done = last_json(run_scoi(["reanalyze", "--workers", "1", "--json"], db_url))
    assert done["reanalyzed"] == scalar(db_url, "SELECT count(*) FROM sentence") == len(normal)
    assert _stored(db_url) == normal
    count = "SELECT count(*) FROM sentence_term"
    assert scalar(db_url, count) == scalar(job_db, count) > 0
    assert_consistent(db_url)
    for query in QUERIES:
        assert _select(db_url, query, "scoi") == _select(job_db, query, "scoi"), query


def test_no_trees_with_a_parser_option_is_refused_before_writing(db_url):
    for extra in (["--parser", "fr=fr_core_news_sm"], ["--require-parser"]):
        proc = run_scoi(["ingest", str(DEMO), "--src", "fr", "--tgt", "en", "--no-trees", *extra], db_url)
        refused(proc, "--no-trees", extra[0])
        assert scalar(db_url, "SELECT count(*) FROM corpus") == 0
