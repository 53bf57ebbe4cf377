"""scoi against a real OpenAI-compatible server: llama.cpp's (llama-cpp-python[server])
serving Gemma 3 270M from its GGUF, through ``--model openai:`` (/completions) and
``openai-chat:`` (/chat/completions), and a server restart in the middle of a job.

Runs only where llama-cpp-python[server] is importable, by this interpreter or by the
python ``SCOI_TEST_LLAMA_PYTHON`` names (it compiles llama.cpp at install time, so it
usually has a venv of its own; CI does not build it), and the GGUF package is installed;
otherwise each test skips and says why."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest

from tests.helpers.cli import scoi_cli, scoi_env
from tests.helpers.cli import last_json
from tests.helpers.jobs import demo_test_pairs, items, submit_lines
from tests.helpers.llama_server import (
    MODEL_ALIAS,
    LlamaServer,
    gemma_gguf,
    llama_python,
)


@pytest.fixture(scope="session")
def llama(tmp_path_factory):
    """The llama.cpp server (skips when it cannot run here). Session-scoped and first in
    each test's arguments, so a skip comes before the database fixtures are built."""
    python, why = llama_python()
    if python is None:
        pytest.skip(why)
    gguf, why = gemma_gguf()
    if gguf is None:
        pytest.skip(why)
    server = LlamaServer(python, gguf, tmp_path_factory.mktemp("llama") / "server.log")
    with server:
        yield server


def _options(base_url: str) -> list[str]:
    """``job submit`` options of a one-shot SCOI job on the llama.cpp server."""
    return ["--method", "scoi", "-k", "1", "--max-new-tokens", "16", "--backend-opt", f"base_url={base_url}"]


def _count(url: str, job_id: int, status: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM job_item WHERE job_id = %s AND status = %s",
                            (job_id, status)).fetchone()[0]


@pytest.mark.slow
@pytest.mark.parametrize("model", [f"openai:{MODEL_ALIAS}", f"openai-chat:{MODEL_ALIAS}"])
def test_a_job_on_llama_cpp_server(llama, job_db, tmp_path, model):
    sources = [fr for fr, _ in demo_test_pairs()[:4]]
    job_id = submit_lines(job_db, tmp_path / "in.fr", sources, model, *_options(llama.url))

    summary = last_json(scoi_cli(["worker", "--burst", "--batch-size", "2", "--json"], job_db))
    assert summary["done"] == len(sources) and summary["failed"] == summary["lost"] == 0, summary

    final = items(job_db, job_id)
    assert all(i["status"] == "done" for i in final)
    assert all(i["output"].strip() for i in final), [i["raw_output"] for i in final]
    assert all(i["attempts"] == 1 and i["last_error"] is None for i in final)


@pytest.mark.slow
def test_a_server_restart_mid_job_loses_no_item(llama, job_db, tmp_path):
    """Kill the server while a worker is generating, start it again two seconds later: the
    backend retries the refused and reset requests, the job finishes, no item fails."""
    sources = [fr for fr, _ in demo_test_pairs()[:12]]
    job_id = submit_lines(job_db, tmp_path / "in.fr", sources, f"openai:{MODEL_ALIAS}", *_options(llama.url),
                          "--backend-opt", "base_delay=0.5", "--backend-opt", "max_retries=8")
    worker = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "worker", "--burst", "--batch-size", "2",
                               "--json"], env=scoi_env(job_db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        deadline = time.monotonic() + 300
        while _count(job_db, job_id, "done") < 2:
            assert time.monotonic() < deadline and worker.poll() is None, "the worker made no progress"
            time.sleep(0.1)
        llama.stop()
        done_at_kill = _count(job_db, job_id, "done")
        time.sleep(2)
        llama.start()
        out, err = worker.communicate(timeout=600)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert done_at_kill < len(sources), "the job finished before the restart; give it more items"
    assert worker.returncode == 0, err
    summary = last_json(subprocess.CompletedProcess([], 0, out, err))
    assert summary["failed"] == summary["lost"] == 0, summary
    assert summary["retries"] >= 1, summary  # the requests the kill cut off, or sent while it was down
    final = items(job_db, job_id)
    assert all(i["status"] == "done" and i["output"].strip() for i in final)
    assert all(i["attempts"] == 1 for i in final)  # retried inside the backend, not re-queued
