"""Jobs hardened against what models and users send them. Text PostgreSQL
refuses (NUL, lone surrogates) is cleaned per item and said so; `scoi job status` and
`job list` print user text as it is; done items carry no error of an earlier attempt;
`retry --failed-only` keeps a cancelled job cancelled; API keys come from the
environment and are never stored with a job. Real embedded PostgreSQL, the fake
OpenAI-compatible server, the real CLI."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest

from scoi.jobs.create import submit
from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.cli import run_scoi, scoi_cli
from tests.helpers.fake_openai import FakeOpenAI, ok_length
from tests.helpers.cli import last_json
from tests.helpers.jobs import items, ok_server, stub_model_args, submit_lines, write_lines


def _status(url: str, ref) -> dict:
    return last_json(scoi_cli(["job", "status", str(ref), "--json"], url))


def _odd_answers(prompt: str) -> str:
    """"Deux." gets an answer with a NUL, "Trois." one with a lone surrogate (JSON ``\\ud800``,
    which json.loads turns into an unencodable str); the others ``ok <n>``."""
    if '"Deux."' in prompt:
        return ' "Before\x00after"\n'
    if '"Trois."' in prompt:
        return ' "half \ud800 pair"\n'
    return ok_length(prompt)


# --------------------------------------------------------------------------- 1. text PostgreSQL refuses
def test_nul_and_lone_surrogate_in_model_output_are_cleaned_per_item(job_db, tmp_path):
    sources = ["Un.", "Deux.", "Trois.", "Quatre."]
    with FakeOpenAI(answer=_odd_answers) as fake:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *stub_model_args(fake.url), "--max-attempts", "1",
                         "--name", "odd-output")
        # One batch holds all four items: before the fix the NUL killed the worker (exit 1)
        # and every item of the batch ended failed.
        summary = last_json(run_scoi(["worker", "--burst", "--batch-size", "8", "--json"], job_db))
    assert (summary["done"], summary["failed"], summary["lost"]) == (4, 0, 0)
    got = {i["source"]: i for i in items(job_db, job_id)}
    assert all(i["status"] == "done" and i["last_error"] is None for i in got.values())
    assert got["Deux."]["output"] == "Beforeafter" and "\x00" not in got["Deux."]["raw_output"]
    assert "1 NUL" in got["Deux."]["warning"]
    assert got["Trois."]["output"] == "half \ufffd pair" and "surrogate" in got["Trois."]["warning"]
    assert got["Un."]["warning"] is None and got["Un."]["output"].startswith("ok ")

    # Where a user sees it: the export's warning column and `scoi job status`.
    rows = [json.loads(line) for line in scoi_cli(["job", "export", "odd-output"], job_db).stdout.splitlines()]
    assert [r["warning"] is not None for r in rows] == [False, True, True, False]
    st = _status(job_db, "odd-output")
    assert st["state"] == "done" and [w["idx"] for w in st["warnings"]] == [1, 2]
    text = scoi_cli(["job", "status", "odd-output"], job_db).stdout
    assert "item 1 [done]: output cleaned: removed 1 NUL" in text


# --------------------------------------------------------------------------- 2. what status, export and list show
def test_done_items_keep_no_error_of_an_earlier_attempt(job_db, tmp_path):
    with FakeOpenAI(failures=[(500, {})], answer=ok_length) as fake:  # the first request fails
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux."], "openai:stub", *stub_model_args(fake.url),
                         "--backend-opt", "concurrency=1", "--name", "flaky-once")
        summary = last_json(scoi_cli(["worker", "--burst", "--batch-size", "1", "--json"], job_db))
    assert (summary["done"], summary["requeued"], summary["failed"]) == (2, 1, 0)
    got = items(job_db, job_id)
    assert [(i["status"], i["attempts"], i["last_error"]) for i in got] == [("done", 2, None), ("done", 1, None)]
    st = _status(job_db, "flaky-once")
    assert st["state"] == "done" and st["errors"] == []
    rows = [json.loads(line) for line in scoi_cli(["job", "export", "flaky-once"], job_db).stdout.splitlines()]
    assert [r["error"] for r in rows] == [None, None]


def test_status_prints_brackets_as_they_are(job_db):
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:[m]", method="zero", k=0, name="news-[fr]"),
                        ["Un.", "Deux."])
        conn.execute("UPDATE job_item SET status = 'failed', attempts = 2, last_error = %s "
                     "WHERE job_id = %s AND idx = 0", ("ValueError: [bold]boom[/bold] in [red]x", job_id))
    out = scoi_cli(["job", "status", "news-[fr]"], job_db).stdout
    assert f"job {job_id} (news-[fr]):" in out
    assert "model:openai:[m]" in out
    assert "item 0 [failed, 2 attempts]: ValueError: [bold]boom[/bold] in [red]x" in out


def test_job_list_is_complete_when_stdout_is_not_a_terminal(job_db):
    name = "nightly-europarl-fr-en-with-a-long-descriptive-name-[v2]"
    model = "openai:" + "meta-llama/Llama-3.1-8B-Instruct-" * 3
    with psycopg.connect(job_db, autocommit=True) as conn:
        submit(conn, JobSpec("fr", "en", model=model, method="zero", k=0, name=name), ["Un."])
    proc = scoi_cli(["job", "list"], job_db)  # CliRunner: stdout is not a terminal
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split("\t")[:2] == ["id", "name"] and len(lines) == 2
    row = dict(zip(lines[0].split("\t"), lines[1].split("\t")))
    assert (row["name"], row["model"], row["done"]) == (name, model, "0/1")
    listed = last_json(scoi_cli(["job", "list", "--json"], job_db))
    assert (listed[0]["name"], listed[0]["model"]) == (name, model)


# --------------------------------------------------------------------------- 3. retry --failed-only
def test_retry_failed_only_keeps_a_cancelled_job_cancelled(job_db, tmp_path):
    submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux.", "Trois."], "openai:stub", *stub_model_args("http://x/v1"),
            "--name", "stopped")
    scoi_cli(["job", "cancel", "stopped"], job_db)
    proc = scoi_cli(["job", "retry", "stopped", "--failed-only"], job_db)
    assert proc.returncode == 0 and "no failed items" in proc.stdout and "stays cancelled" in proc.stdout
    out = last_json(scoi_cli(["job", "retry", "stopped", "--failed-only", "--json"], job_db))
    assert (out["requeued"], out["state"]) == (0, "cancelled")
    st = _status(job_db, "stopped")
    assert (st["state"], st["cancelled"], st["done"]) == ("cancelled", 3, 0)  # before the fix: "done"
    with Worker(job_db, WorkerOptions(burst=True)) as w:
        assert w.claim() == []


def test_retry_failed_only_reopens_only_the_failed_items(job_db, tmp_path):
    with ok_server() as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux.", "Trois."], "openai:stub", *stub_model_args(stub.url),
                         "--name", "half")
        with psycopg.connect(job_db, autocommit=True) as conn:
            conn.execute("UPDATE job_item SET status = 'failed', attempts = 3, last_error = 'HTTP 500' "
                         "WHERE job_id = %s AND idx = 0", (job_id,))
        scoi_cli(["job", "cancel", "half"], job_db)
        assert last_json(scoi_cli(["job", "retry", "half", "--failed-only", "--json"], job_db))["requeued"] == 1
        assert last_json(scoi_cli(["worker", "--burst", "--json"], job_db))["done"] == 1
        st = _status(job_db, "half")
        assert (st["state"], st["done"], st["cancelled"]) == ("cancelled", 1, 2)  # not "done": 2 never ran
        assert last_json(scoi_cli(["job", "retry", "half", "--json"], job_db))["requeued"] == 2
        assert last_json(scoi_cli(["worker", "--burst", "--json"], job_db))["done"] == 2
    assert _status(job_db, "half")["state"] == "done"


# --------------------------------------------------------------------------- 4. secrets
def test_api_key_comes_from_the_environment_and_is_never_stored(job_db, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOI_OPENAI_API_KEY", "sk-from-env")
    with ok_server() as stub:
        monkeypatch.setenv("SCOI_OPENAI_ALLOWED_BASE_URLS", stub.url)  # the key goes only where the env allows
        submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux."], "openai:stub", *stub_model_args(stub.url))
        assert last_json(scoi_cli(["worker", "--burst", "--json"], job_db))["done"] == 2
    auth = {v for c in stub.calls for k, v in c["headers"].items() if k.lower() == "authorization"}
    assert auth == {"Bearer sk-from-env"}

    src = str(write_lines(tmp_path / "more.fr", ["Trois."]))
    base = ["job", "submit", "--input", src, "--src", "fr", "--tgt", "en", "--model", "openai:stub",
            "--method", "zero", "-k", "0"]
    for opt in ["api_key=sk-on-the-command-line", "hf_token=sk-on-the-command-line",
                "password=sk-on-the-command-line", "base_url=http://me:sk-on-the-command-line@127.0.0.1:9/v1"]:
        proc = scoi_cli(base + ["--backend-opt", opt], job_db)
        assert proc.returncode == 1, (opt, proc.stdout)
        assert "never stored" in proc.stderr and "SCOI_OPENAI_API_KEY" in proc.stderr, proc.stderr
    proc = scoi_cli(["job", "sync", "--input", src, "--name", "nightly", "--src", "fr", "--tgt", "en",
                     "--model", "openai:stub", "--method", "zero", "-k", "0", "--backend-opt", "api_key=sk-x"], job_db)
    assert proc.returncode == 1 and "SCOI_OPENAI_API_KEY" in proc.stderr
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 1
        assert not any("sk-" in json.dumps(p) for (p,) in conn.execute("SELECT params FROM job"))
        with pytest.raises(JobError, match="never stored"):  # the Python API refuses them too
            submit(conn, JobSpec("fr", "en", model="openai:stub", method="zero", k=0,
                                 backend_options={"api_key": "sk-x"}), ["Un."])


def test_a_worker_says_items_cancelled_while_running_were_cancelled(job_db, tmp_path):
    """`scoi job cancel` while a worker runs the batch: its summary counts them as cancelled,
    not as "lost to other workers" (no other worker ran)."""
    with ok_server(delay=1.5) as slow:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux.", "Trois."], "openai:stub",
                              *stub_model_args(slow.url), "--backend-opt", "concurrency=1", "--name", "canc2b")

        def cancel_once_running() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and sum(i["status"] == "running" for i in items(job_db, job_id)) < 3:
                time.sleep(0.05)
            scoi_cli(["job", "cancel", "canc2b"], job_db)

        canceller = threading.Thread(target=cancel_once_running)
        canceller.start()
        proc = run_scoi(["worker", "--burst", "--no-prefetch", "--batch-size", "3"], job_db)
        canceller.join()
    assert proc.returncode == 0, proc.stderr
    assert "3 cancelled while running, 0 lost to other workers" in proc.stdout, proc.stdout
    assert [i["status"] for i in items(job_db, job_id)] == ["cancelled"] * 3
