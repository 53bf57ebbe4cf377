"""Shared set-up for the job and eval tests: a database holding the demo fr-en corpus
(ingested once per session, then cloned per test), the tiny random model, a stub
OpenAI-compatible server, and small DB helpers."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg
import pytest
from conftest import fresh_database

from conftest import TEMPLATE, run_scoi

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "scoi" / "data" / "demo.fr-en.tsv"
DEMO_TEST = ROOT / "scoi" / "data" / "demo_test.fr-en.tsv"

_cache: dict[str, object] = {}


def demo_test_pairs() -> list[tuple[str, str]]:
    lines = DEMO_TEST.read_text(encoding="utf-8").splitlines()[1:]
    return [tuple(line.split("\t")) for line in lines if line]  # type: ignore[misc]


def demo_pairs() -> list[tuple[str, str]]:
    lines = DEMO.read_text(encoding="utf-8").splitlines()[1:]
    return [tuple(line.split("\t")) for line in lines if line]  # type: ignore[misc]


@pytest.fixture(scope="session")
def corpus_template(server_url: str, template_url: str):
    """Name of a database with the demo corpus ingested (once per session)."""
    from scoi.db.engine import create_database, drop_database

    if "corpus_template" in _cache:
        yield _cache["corpus_template"]
        return
    name = f"scoi_jobs_corpus_{uuid.uuid4().hex[:8]}"
    url = create_database(server_url, name, template=TEMPLATE, drop=True)
    run_scoi(["ingest", str(DEMO), "--src", "fr", "--tgt", "en", "--workers", "0", "--json"], url, check=True)
    _cache["corpus_template"] = name
    yield name
    drop_database(server_url, name)


@pytest.fixture()
def job_db(server_url: str, corpus_template: str):
    """A fresh database holding the demo corpus, for one test."""
    with fresh_database(server_url, corpus_template) as url:
        yield url


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """Backend spec of a tiny random-weight Llama built in a temp dir."""
    if "tiny_model" not in _cache:
        from tiny_model import build_tiny_model

        _cache["tiny_model"] = "hf:" + str(build_tiny_model(tmp_path_factory.mktemp("tiny_llama")))
    return _cache["tiny_model"]  # type: ignore[return-value]


def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubCompletions:
    """An OpenAI-compatible /completions server on 127.0.0.1:``port`` answering
    ' "ok <prompt length>"\\n' to every prompt, after ``delay`` seconds. Workers using it
    start in a second (no torch), which keeps the concurrency and crash tests short."""

    def __init__(self, port: int = 0, delay: float = 0.0) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if delay:
                    time.sleep(delay)
                data = json.dumps({"choices": [{"text": f' "ok {len(body["prompt"])}"\n'}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "StubCompletions":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def stub_model_args(url: str) -> list[str]:
    """``job submit`` options for a zero-shot job on a StubCompletions server."""
    return ["--method", "zero", "-k", "0", "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={url}"]


def last_json(proc) -> object:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def items(url: str, job_id: int) -> list[dict]:
    with psycopg.connect(url) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM job_item WHERE job_id = %s ORDER BY idx", (job_id,)).fetchall()


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path
