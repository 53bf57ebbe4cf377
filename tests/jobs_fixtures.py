"""Shared set-up for the job and eval tests: a database holding the demo fr-en corpus
(ingested once per session, then cloned per test), the tiny random model, the fake
OpenAI-compatible server answering "ok <n>", and small DB helpers."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
from conftest import fresh_database

from conftest import TEMPLATE, run_scoi
from fake_openai import FakeOpenAI, ok_length
from fixtures_ingest import cli

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


def ok_server(port: int = 0, delay: float = 0.0) -> FakeOpenAI:
    """The fake OpenAI server answering ``"ok <prompt length>"`` after ``delay`` seconds.
    Workers using it start in a second (no torch), which keeps the concurrency and crash
    tests short."""
    return FakeOpenAI(delay=delay, port=port, answer=ok_length)


def stub_model_args(url: str) -> list[str]:
    """``job submit`` options for a zero-shot job on an ``ok_server``."""
    return ["--method", "zero", "-k", "0", "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={url}"]


def scoi_cli(args: list[str], url: str) -> subprocess.CompletedProcess:
    """``scoi ARGS`` in this process (typer's CliRunner), as ``run_scoi`` returns it (exit
    code, stdout, stderr): for tests where a separate process is not the point."""
    result = cli(args, url)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def last_json(proc) -> object:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def items(url: str, job_id: int) -> list[dict]:
    with psycopg.connect(url) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM job_item WHERE job_id = %s ORDER BY idx", (job_id,)).fetchall()


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path
