"""``scoi serve``'s models in process (FastAPI TestClient) over a real database holding the
demo corpus: ``/api/translate`` fits its prompt to a local model's context as jobs do (a
tiny random GPT-2 whose learned positions stop at 160, loaded the real way), and a model
still loading answers 503 until it is ready."""

from __future__ import annotations

import threading

import pytest

from tests.helpers.jobs import demo_test_pairs, ok_server
from tests.tiny_model import build_tiny_gpt2

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")

from fastapi.testclient import TestClient  # noqa: E402

import scoi.service.state  # noqa: E402
from scoi.backends.loader import load_backend  # noqa: E402
from scoi.core.prompt import Example, render_prompt  # noqa: E402
from scoi.selection.selector import Selector  # noqa: E402
from scoi.service.app import create_app  # noqa: E402
from scoi.service.config import Limits, ModelConfig, ServeConfig  # noqa: E402

LOCAL = "http://127.0.0.1:8765"  # a server without a token answers to loopback Hosts only
POSITIONS = 160
NEW_TOKENS = 8


def client(url: str, models: dict[str, ModelConfig], warm: list[tuple[str, str]] | None = None, **kw) -> TestClient:
    return TestClient(create_app(ServeConfig(url=url, models=models, **kw), warm=warm), base_url=LOCAL)


@pytest.fixture(scope="module")
def short_model(tmp_path_factory) -> str:
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2_160"), n_positions=POSITIONS))


def test_translate_drops_last_ranked_examples_to_fit_the_models_context(job_db, short_model):
    query = demo_test_pairs()[0][0]
    with client(job_db, {"short": ModelConfig("short", f"hf:{short_model}")}) as api:
        r = api.post("/api/translate", json={"text": query, "src": "fr", "tgt": "en", "model": "short", "k": 4,
                                             "max_new_tokens": NEW_TOKENS, "reuse": "off"})
    assert r.status_code == 200, r.text
    body = r.json()
    used = body["examples_used"]
    assert 0 < used < 4 and body["examples_dropped"] == 4 - used and body["origin"] == "llm"
    with Selector("fr", "en", url=job_db) as sel:
        ranked = [Example(p.src, p.tgt) for p in sel.select(query, k=4, method="scoi").selected]
    assert [e["src"] for e in body["selection"]["selected"]] == [e.src for e in ranked]  # what was selected
    assert body["prompt"] == render_prompt(query, ranked[:used], "fr", "en")  # the best-ranked ones kept
    backend = load_backend(f"hf:{short_model}")
    assert backend.count_tokens(body["prompt"]) + NEW_TOKENS <= POSITIONS
    # ... and as many as fit: one more would not have
    assert backend.count_tokens(render_prompt(query, ranked[:used + 1], "fr", "en")) + NEW_TOKENS > POSITIONS


def test_translate_of_a_sentence_too_long_for_the_model_says_so_in_one_line(job_db, short_model):
    too_long = "Le chien dort dans sa niche pendant que le chat regarde la pluie tomber. " * 4
    with client(job_db, {"short": ModelConfig("short", f"hf:{short_model}")}) as api:
        r = api.post("/api/translate", json={"text": too_long, "src": "fr", "tgt": "en", "model": "short", "k": 2,
                                             "max_new_tokens": NEW_TOKENS, "reuse": "off"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error.startswith("the prompt needs ") and f"context of {POSITIONS} tokens" in error and "\n" not in error


def test_a_model_still_loading_answers_503_with_retry_after_until_it_is_ready(job_db, monkeypatch):
    """The load is held on an event (the real loader runs once it is set), so the request
    meets the model loading whatever the machine's speed."""
    gate, loading = threading.Event(), threading.Event()

    def held_load(spec: str, **options):
        loading.set()
        assert gate.wait(120), "the test never released the load"
        return load_backend(spec, **options)

    monkeypatch.setattr(scoi.service.state, "load_backend", held_load)
    body = {"text": demo_test_pairs()[0][0], "src": "fr", "tgt": "en", "model": "stub", "method": "zero", "k": 0,
            "reuse": "off"}
    with ok_server() as fake, client(job_db, {"stub": ModelConfig("stub", "openai:stub", {
            "base_url": fake.url, "max_retries": 0})}, warm=[("fr", "en")], limits=Limits(timeout_s=2)) as api:
        assert loading.wait(60)
        assert [(m["name"], m["state"]) for m in api.get("/api/models").json()] == [("stub", "loading")]
        r = api.post("/api/translate", json=body)
        assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
        assert r.json() == {"error": "model 'stub' is still loading; retry later (GET /api/models shows when it "
                                     "is ready)"}
        assert fake.calls == []  # nothing reached the model
        gate.set()
        r = api.post("/api/translate", json=body)  # waits for the load, then translates
        assert r.status_code == 200, r.text
        assert r.json()["output"] == f"ok {len(r.json()['prompt'])}" and len(fake.calls) == 1
        assert [(m["name"], m["state"]) for m in api.get("/api/models").json()] == [("stub", "ready")]
