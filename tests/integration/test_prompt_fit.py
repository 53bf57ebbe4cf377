"""Prompts fitted to the model's context, end to end in a worker: a tiny random GPT-2 whose
learned positions stop at 160 (the real loading path, no mock), the demo corpus, SCOI's
selection. Examples go last-ranked first until prompt + max_new_tokens fit; a sentence
that cannot fit even alone fails at once with one clear line."""

from __future__ import annotations

import psycopg
import pytest

from scoi.backends.loader import load_backend
from scoi.core.prompt import Example, render_prompt
from scoi.jobs.create import submit
from scoi.jobs.export import export_rows
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import status
from scoi.jobs.worker import Worker, WorkerOptions
from scoi.selection.selector import Selector
from tests.helpers.jobs import demo_test_pairs, items
from tests.tiny_model import build_tiny_gpt2

POSITIONS = 160
NEW_TOKENS = 8


@pytest.fixture(scope="module")
def short_model(tmp_path_factory) -> str:
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2_160"), n_positions=POSITIONS))


def test_the_tiny_model_fails_past_its_positions_as_real_ones_do(short_model):
    backend = load_backend(f"hf:{short_model}")
    assert backend.context_length == POSITIONS
    with pytest.raises(IndexError):
        backend.generate(["Le chien dort. " * 40], max_new_tokens=2)


def test_job_prompts_drop_last_ranked_examples_to_fit_the_context(job_db, short_model):
    queries = [q for q, _ in demo_test_pairs()[:3]]
    too_long = "Le chien dort dans sa niche pendant que le chat regarde la pluie tomber. " * 4
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model=f"hf:{short_model}", method="scoi", k=4,
                                      max_new_tokens=NEW_TOKENS, max_attempts=3), [*queries, too_long])
    with Worker(job_db, WorkerOptions(burst=True, batch_size=4)) as w:
        stats = w.run()
    assert stats.done == 3 and stats.failed == 1 and stats.requeued == 0

    backend = load_backend(f"hf:{short_model}")
    rows = items(job_db, job_id)
    with Selector("fr", "en", url=job_db) as sel:
        for row, query in zip(rows, queries):
            assert row["status"] == "done"
            used = row["examples_used"]
            assert 0 < used < 4
            ranked = [Example(p.src, p.tgt) for p in sel.select(query, k=4, method="scoi").selected]
            assert row["prompt"] == render_prompt(query, ranked[:used], "fr", "en")  # the best ones kept
            assert backend.count_tokens(row["prompt"]) + NEW_TOKENS <= POSITIONS
            # ... and as many as fit: one more would not have
            assert backend.count_tokens(render_prompt(query, ranked[:used + 1], "fr", "en")) + NEW_TOKENS > POSITIONS
    last = rows[3]
    assert (last["status"], last["attempts"], last["examples_used"]) == ("failed", 1, None)  # no retry
    assert last["last_error"].startswith("PromptTooLong: the prompt needs ")
    assert f"context of {POSITIONS} tokens" in last["last_error"] and "\n" not in last["last_error"]

    with psycopg.connect(job_db) as conn:
        exported = list(export_rows(conn, job_id))
        st = status(conn, job_id)
    assert [r["examples_used"] for r in exported] == [r["examples_used"] for r in rows]
    assert st["examples_dropped"] == {"items": 3, "fewest": min(r["examples_used"] for r in rows[:3])}


def test_openai_context_option_fits_prompts_counted_by_the_servers_tokenize(job_db):
    """``--backend-opt context=N``: the server's /tokenize counts (here: words), examples go
    last-ranked first, and only fitted prompts reach /completions."""
    from tests.helpers.fake_openai import FakeOpenAI, ok_length

    def words(text: str) -> int:
        return len(text.split())

    query = demo_test_pairs()[0][0]
    with Selector("fr", "en", url=job_db) as sel:
        ranked = [Example(p.src, p.tgt) for p in sel.select(query, k=4, method="scoi").selected]
    context = words(render_prompt(query, ranked[:2], "fr", "en")) + NEW_TOKENS  # room for two examples
    with FakeOpenAI(answer=ok_length, tokenize=words) as server, psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:stub", method="scoi", k=4, max_new_tokens=NEW_TOKENS,
                                      backend_options={"base_url": server.url, "max_retries": 0,
                                                       "context": context}), [query])
        with Worker(job_db, WorkerOptions(burst=True)) as w:
            assert w.run().done == 1
        sent = [c["body"]["prompt"] for c in server.calls if c["path"].endswith("/completions")]
        counted = [c for c in server.calls if c["path"] == "/tokenize"]
    [row] = items(job_db, job_id)
    assert row["examples_used"] == 2 and sent == [row["prompt"]] == [render_prompt(query, ranked[:2], "fr", "en")]
    assert len(counted) == 3  # four examples, three, two
