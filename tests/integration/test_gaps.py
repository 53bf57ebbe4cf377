"""Coverage gaps (migration 0021's views, scoi.gaps, ``scoi gaps``, ``/api/gaps``) over the
demo corpus: checked against a plain Python reading of the recorded selections."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest

from scoi.gaps import GapError, job_gaps, rank, schedule_gaps, sentence_gaps
from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.worker import Worker, WorkerOptions
from scoi.selection.selector import Selector
from tests.helpers.cli import cli, last_json
from tests.helpers.jobs import ok_server

# Invented words no demo sentence holds, and words the demo corpus does hold.
SENTENCES = ["Le zorglub mange une pomme dans le jardin.",
             "Mon zorglub dort sur le canapé avec le chat.",
             "Le train part à huit heures pour Paris.",
             "Les bibliothécaires xylophonistes chantent sous la pluie."]


def expected_gaps(url: str, selection_ids: list[int]) -> dict[str, Counter]:
    """Per kind, in how many selections each unit is missing: read back in Python from the
    recorded tables (query tokens/terms against the pool's and picks' source sentences)."""
    out = {"word": Counter(), "term": Counter()}
    with psycopg.connect(url) as conn:
        for sid in selection_ids:
            src, tgt, tokens = conn.execute("SELECT src_lang, tgt_lang, query_tokens FROM selection WHERE id = %s",
                                            (sid,)).fetchone()
            terms = [r[0] for r in conn.execute("SELECT key FROM selection_query_term WHERE selection_id = %s", (sid,))]
            rows = conn.execute(
                "SELECT se.tokens, se.term_keys FROM sentence se WHERE se.id IN ("
                " SELECT CASE WHEN p.a_lang = %(src)s THEN p.a_id ELSE p.b_id END FROM pair p WHERE p.id IN ("
                "  SELECT pair_id FROM selection_candidate WHERE selection_id = %(id)s"
                "  UNION SELECT pair_id FROM selection_pick WHERE selection_id = %(id)s))",
                {"src": src, "id": sid}).fetchall()
            have_tokens = {t for r in rows for t in r[0]}
            have_terms = {t for r in rows for t in r[1]}
            out["word"].update({t for t in tokens if any(c.isalnum() for c in t) and t not in have_tokens})
            out["term"].update({t for t in terms if t not in have_terms})
    return out


def run_job(url: str, sentences: list[str], **spec) -> int:
    with ok_server() as fake, psycopg.connect(url, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:stub", k=2,
                                      backend_options={"base_url": fake.url, "max_retries": 0}, **spec), sentences)
        with Worker(url, WorkerOptions(burst=True, batch_size=4)) as w:
            w.run()
    return job_id


def selection_ids(url: str, job_id: int) -> list[int]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT selection_id FROM job_item WHERE job_id = %s ORDER BY idx",
                                           (job_id,))]


def test_job_gaps_match_the_recorded_selections(job_db):
    job_id = run_job(job_db, SENTENCES, name="gapjob")
    ids = selection_ids(job_db, job_id)
    assert len(ids) == len(SENTENCES) and all(ids)
    want = expected_gaps(job_db, ids)
    with psycopg.connect(job_db) as conn:
        report = job_gaps(conn, ["gapjob"], limit=1000)
        view = {(k, u): n for k, u, n in conn.execute(
            "SELECT kind, unit, sentences FROM job_gap WHERE job_id = %s", (job_id,))}
    assert report.selections == len(SENTENCES)
    assert {r["unit"]: r["sentences"] for r in report.words} == dict(want["word"])
    assert {r["unit"]: r["sentences"] for r in report.terms} == dict(want["term"])
    assert view == {**{("word", u): n for u, n in want["word"].items()},
                    **{("term", u): n for u, n in want["term"].items()}}
    # the invented word lacks in two sentences and in the whole memory; ranked first
    top = report.words[0]
    assert (top["unit"], top["sentences"], top["occurrences"], top["in_memory"]) == ("zorglub", 2, 2, False)
    assert top["example"] in SENTENCES[:2]
    sentences = [r["sentences"] for r in report.words]
    assert sentences == sorted(sentences, reverse=True)


def test_sentence_gaps_keep_nothing_and_agree_with_a_job(job_db):
    job_id = run_job(job_db, SENTENCES)
    with psycopg.connect(job_db) as conn:
        from_job = job_gaps(conn, [job_id], limit=1000)
        before = conn.execute("SELECT count(*) FROM selection").fetchone()[0]
    with Selector("fr", "en", url=job_db, k=2) as sel:
        got = sentence_gaps(sel, SENTENCES + ["  "], scope="file", k=2, limit=1000)
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM selection").fetchone()[0] == before
    assert got.selections == len(SENTENCES)
    assert got.words == from_job.words and got.terms == from_job.terms


def test_schedule_gaps_and_errors(job_db):
    job_id = run_job(job_db, SENTENCES[:2])
    with psycopg.connect(job_db, autocommit=True) as conn:
        with pytest.raises(GapError, match="no schedule 'nightly'"):
            schedule_gaps(conn, "nightly")
        conn.execute("INSERT INTO schedule (name, cron, spec) VALUES ('nightly', '0 2 * * *', '{}')")
        with pytest.raises(GapError, match="has not run yet"):
            schedule_gaps(conn, "nightly")
        conn.execute("UPDATE schedule SET job_id = %s WHERE name = 'nightly'", (job_id,))
        report = schedule_gaps(conn, "nightly")
        assert report.scope.startswith("schedule nightly") and report.words[0]["unit"] == "zorglub"
        zero = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0), ["Un."])
        with pytest.raises(GapError, match="no recorded selection"):
            job_gaps(conn, [zero])
        assert rank(conn, [], "nothing").words == []


def test_gaps_cli(job_db, tmp_path):
    path = tmp_path / "sents.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    result = cli(["gaps", "--file", str(path), "--src", "fr", "--tgt", "en", "-k", "2", "--json"], job_db)
    assert result.exit_code == 0, result.stderr
    report = last_json(result)
    assert report["selections"] == 4 and report["words"][0]["unit"] == "zorglub"
    result = cli(["gaps", "--file", str(path), "--src", "fr", "--tgt", "en"], job_db)
    assert result.exit_code == 0 and "zorglub" in result.stdout
    for args, message in ((["gaps"], "give one of --job"),
                          (["gaps", "--job", "1", "--schedule", "x"], "give one of --job"),
                          (["gaps", "--file", str(path)], "--file needs --src and --tgt"),
                          (["gaps", "--job", "nope"], "no job 'nope'"),
                          (["gaps", "--schedule", "nope"], "no schedule 'nope'")):
        result = cli(args, job_db)
        assert result.exit_code == 1 and message in result.stderr, (args, result.stderr)


def test_gaps_api(job_db):
    pytest.importorskip("fastapi", reason="scoi[serve] is not installed")
    from fastapi.testclient import TestClient

    from scoi.service.app import create_app
    from scoi.service.config import ServeConfig

    job_id = run_job(job_db, SENTENCES)
    with TestClient(create_app(ServeConfig(url=job_db)), base_url="http://127.0.0.1") as api:  # a loopback Host
        got = api.get("/api/gaps", params={"job": str(job_id)}).json()
        assert got["selections"] == 4 and got["words"][0]["unit"] == "zorglub"
        posted = api.post("/api/gaps", json={"sentences": SENTENCES, "src": "fr", "tgt": "en", "k": 2}).json()
        assert posted["words"] == got["words"]
        r = api.get("/api/gaps", params={"schedule": "nope"})
        assert r.status_code == 404 and r.json()["error"] == "no schedule 'nope'; see `scoi schedule list`"
        assert api.get("/api/gaps").status_code == 400
