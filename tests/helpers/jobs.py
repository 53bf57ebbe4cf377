"""Shared pieces of the job and eval tests: the fake OpenAI-compatible server answering
"ok <n>", the demo pairs, and small DB helpers. The fixtures (``corpus_template``,
``job_db``, ``tiny_model``) are in ``tests/conftest.py``."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from tests.helpers.fake_openai import FakeOpenAI, ok_length
from tests.helpers.ingest import DEMO_TEST
from tests.helpers.ingest import demo_pairs as _pairs


def demo_pairs() -> list[tuple[str, str]]:
    """(fr, en) pairs of the demo corpus the job database holds."""
    return _pairs()


def demo_test_pairs() -> list[tuple[str, str]]:
    """(fr, en) pairs of the held-out demo test set (not in the corpus)."""
    return _pairs(DEMO_TEST)


def ok_server(port: int = 0, delay: float = 0.0) -> FakeOpenAI:
    """The fake OpenAI server answering ``"ok <prompt length>"`` after ``delay`` seconds.
    Workers using it start in a second (no torch), which keeps the concurrency and crash
    tests short."""
    return FakeOpenAI(delay=delay, port=port, answer=ok_length)


def stub_model_args(url: str) -> list[str]:
    """``job submit`` options for a zero-shot job on an ``ok_server``."""
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
