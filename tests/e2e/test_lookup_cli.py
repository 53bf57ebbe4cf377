"""``scoi lookup`` and ``scoi select --min-match`` as a user runs them, on the demo corpus:
JSON and table output, and one clear line with a non-zero exit on bad input."""

from __future__ import annotations

import json

from tests.helpers.cli import cli, run_scoi

QUERY = "Bonjour, comment allez-vous ce soir ?"


def test_lookup_json_lists_the_best_matches_first(job_db):
    r = cli(["lookup", QUERY, "--src", "fr", "--tgt", "en", "-n", "3", "--min-match", "0", "--json"], job_db)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert [m["match"] for m in out["matches"]] == sorted((m["match"] for m in out["matches"]), reverse=True)
    assert len(out["matches"]) == 3 and out["pool"] == 1000 and out["certified"] is True
    assert out["search"]["path"] == "pool"  # below 50 %: the BM25 pool
    best = out["matches"][0]
    assert (best["src"], best["tgt"], best["match"], best["meta"]) == (
        "Bonjour, comment allez-vous ?", "Hello, how are you?", 71.43, {})


def test_lookup_shows_only_tm_matches_by_default(job_db):
    r = cli(["lookup", QUERY, "--src", "fr", "--tgt", "en", "--json"], job_db)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["min_match"] == 70 and out["search"]["path"] == "count"  # every stored sentence that can reach 70
    assert [(m["src"], m["match"]) for m in out["matches"]] == [("Bonjour, comment allez-vous ?", 71.43)]
    shown = cli(["lookup", "--help"], job_db).stdout
    assert "Default 70, the CAT tools'" in shown and "[default: 70.0]" in shown


def test_lookup_table_and_no_match_message(job_db):
    r = cli(["lookup", QUERY, "--src", "fr", "--tgt", "en", "--min-match", "70"], job_db)
    assert r.exit_code == 0 and "71.43" in r.stdout and "Hello, how are you?" in r.stdout
    r = cli(["lookup", "Zorglub blorp.", "--src", "fr", "--tgt", "en", "--min-match", "90"], job_db)
    assert r.exit_code == 0 and "no stored fr sentence matches at 90% or more" in r.stdout
    assert "closest by BM25" not in r.stdout  # every stored sentence was in reach
    r = cli(["lookup", "Zorglub blorp.", "--src", "fr", "--tgt", "en", "--min-match", "40"], job_db)
    assert r.exit_code == 0 and "matches at 40% or more (among the 1000 closest by BM25)" in r.stdout


def test_select_min_match_says_when_fewer_than_k_qualify(job_db):
    r = cli(["select", QUERY, "--src", "fr", "--tgt", "en", "--min-match", "70"], job_db)
    assert r.exit_code == 0, r.stderr
    assert "match %" in r.stdout and "71.43" in r.stdout
    assert "reach 70% match: 1 example instead of 4" in r.stdout


def test_bad_min_match_fails_with_one_line(job_db):
    proc = run_scoi(["lookup", QUERY, "--src", "fr", "--tgt", "en", "--min-match", "150"], job_db)
    assert proc.returncode == 2 and "--min-match" in proc.stderr and "less than or equal to 100" in proc.stderr
    proc = run_scoi(["lookup", QUERY, "--src", "de", "--tgt", "en"], job_db)
    assert proc.returncode == 1 and "no corpus holds de-en pairs" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_lookup_where_keeps_only_pairs_with_that_metadata(job_db):
    """--where KEY=VALUE (as select and jobs take it): only pairs whose pair.meta holds it;
    a value that looks like SQL is a value like any other."""
    import psycopg

    with psycopg.connect(job_db, autocommit=True) as conn:
        [(pair_id, meta)] = conn.execute(
            "SELECT p.id, p.meta FROM pair p JOIN example e ON e.pair_id = p.id JOIN sentence s ON s.id = e.src_id "
            "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en' AND s.text = 'Bonjour, comment allez-vous ?'").fetchall()
        conn.execute("UPDATE pair SET meta = meta || '{\"domain\": \"greeting\"}' WHERE id = %s", [pair_id])
        pairs = conn.execute("SELECT count(*) FROM pair").fetchone()[0]
        try:
            def found(*where: str) -> list[int]:
                args = [a for w in where for a in ("--where", w)]
                r = cli(["lookup", QUERY, "--src", "fr", "--tgt", "en", "--json", *args], job_db)
                assert r.exit_code == 0, r.stderr
                return [m["pair_id"] for m in json.loads(r.stdout.strip().splitlines()[-1])["matches"]]

            assert found("domain=greeting") == [pair_id] == found()
            assert found("domain=legal") == [] and found("domain=greeting'; DROP TABLE pair; --") == []
            assert conn.execute("SELECT count(*) FROM pair").fetchone()[0] == pairs
            bad = cli(["lookup", QUERY, "--src", "fr", "--tgt", "en", "--where", "no equals"], job_db)
            assert bad.exit_code != 0 and "expected KEY=VALUE" in bad.stderr
        finally:
            conn.execute("UPDATE pair SET meta = %s WHERE id = %s", [psycopg.types.json.Jsonb(meta), pair_id])
