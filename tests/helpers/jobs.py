"""Shared pieces of the job and eval tests: the fake OpenAI-compatible server answering
"ok <n>", the demo pairs, and small DB helpers. The fixtures (``corpus_template``,
``job_db``, ``tiny_model``) are in ``tests/conftest.py``."""

from __future__ import annotations

from pathlib import Path

import psycopg

from tests.helpers.cli import last_json, scoi_cli
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
    """``job submit`` options for a zero-shot job on an ``ok_server`` that sends every item to
    it (``--reuse off``: the tests using it pick corpus sentences, which would otherwise be
    reused from the memory without a model call)."""
    return ["--method", "zero", "-k", "0", "--reuse", "off", "--backend-opt", "max_retries=0",
            "--backend-opt", f"base_url={url}"]


def items(url: str, job_id: int) -> list[dict]:
    with psycopg.connect(url) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM job_item WHERE job_id = %s ORDER BY idx", (job_id,)).fetchall()


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def submit_lines(url: str, path: Path, lines, model: str, *extra: str, refs=None, name: str | None = None) -> int:
    """``scoi job submit`` of ``lines`` (written to ``path``) from fr to en on ``model``,
    with ``extra`` options; the new job's id."""
    args = ["job", "submit", "--input", str(write_lines(path, lines)), "--src", "fr", "--tgt", "en",
            "--model", model, "--json", *extra]
    if refs is not None:
        args += ["--references", str(write_lines(path.with_name(path.stem + ".ref"), refs))]
    if name:
        args += ["--name", name]
    return last_json(scoi_cli(args, url))["job_id"]


def prepared(claimed):
    """A claimed item made ready to generate (prompt "prompt", 0.5 s of selection), for
    tests that call a worker's steps one by one."""
    from scoi.jobs.batch_items import Prepared

    return Prepared(claimed, None, None, "prompt", 0.5)

