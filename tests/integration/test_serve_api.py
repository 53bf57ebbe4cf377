"""``scoi serve``'s API in process (FastAPI TestClient) over a real database holding the
demo corpus, real parsers and a real (fake-OpenAI) HTTP backend."""

from __future__ import annotations

import threading

import pytest

from tests.helpers.jobs import demo_test_pairs, ok_server

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")

from fastapi.testclient import TestClient  # noqa: E402

from scoi.service.app import create_app  # noqa: E402
from scoi.service.config import Limits, ModelConfig, ServeConfig  # noqa: E402

SENTENCE = "Un homme joue de la guitare sur la scène."
LOCAL = "http://127.0.0.1:8765"  # a server without a token answers to loopback Hosts only
TOKEN = "s3cret-token-0123456789"


def client(url: str, **kw) -> TestClient:
    models = kw.pop("models", {})
    limits = kw.pop("limits", Limits())
    return TestClient(create_app(ServeConfig(url=url, models=models, limits=limits, **kw)), base_url=LOCAL)


@pytest.fixture()
def api(job_db):
    with client(job_db) as c:
        yield c


def test_select_has_the_cli_shape_and_the_coverage_view(api, job_db):
    from scoi.selection.selector import Selector

    r = api.post("/api/select", json={"text": SENTENCE, "src": "fr", "tgt": "en", "k": 3, "coverage": True})
    assert r.status_code == 200, r.text
    got = r.json()
    with Selector("fr", "en", url=job_db, k=3) as sel:
        want = sel.select(SENTENCE).to_dict(explain=True)
    for key in ("query", "src_lang", "tgt_lang", "method", "k", "params", "signature", "selected", "certified"):
        assert got[key] == want[key], key
    assert [c["pair_id"] for c in got["candidates"]] == [c["pair_id"] for c in want["candidates"]]
    assert set(got["candidates"][0]) == {"pair_id", "score", "match", "src", "tgt"}
    cov = got["coverage"]
    assert [p["pair_id"] for p in cov["picks"]] == [p["pair_id"] for p in got["selected"]]
    # the page's picks name their value as the API's do (scoi: a coverage)
    assert [p["value"] for p in cov["picks"]] == [p["value"] for p in got["selected"]]
    assert {p["value"]["kind"] for p in got["selected"]} == {"coverage"}
    # a word is covered by the first pick whose source holds it, and only then
    for w in cov["words"]:
        holders = [i for i, p in enumerate(got["selected"]) if w["text"] in p["src"]]
        if w["covered_by"] is not None:
            assert w["text"] in got["selected"][w["covered_by"]]["src"]
        else:
            assert not any(f" {w['text']} " in f" {p['src']} " for p in got["selected"]), (w, holders)
    assert cov["uncovered_words"] == sorted({w["text"] for w in cov["words"]
                                             if w["word"] and w["covered_by"] is None})
    assert {t["key"] for t in cov["terms"]} == sel_terms(job_db, SENTENCE)
    tree = cov["tree"]
    assert tree["svg"].startswith("<svg") and "displacy" in tree["svg"]
    assert len(tree["arcs"]) == len(tree["tokens"]) - 1  # one root, every other token has an arc
    assert [p["rank"] for p in cov["pool"]] == list(range(1, len(got["candidates"]) + 1))
    assert sum(p["picked"] for p in cov["pool"]) == len(got["selected"])


def sel_terms(url: str, text: str) -> set[str]:
    from scoi.selection.selector import Selector

    with Selector("fr", "en", url=url) as sel:
        return set(sel.query.analyzer.terms(text))


def test_errors_are_json_with_the_cli_texts(api):
    from scoi.core.greedy import check_args

    with pytest.raises(ValueError) as cli_error:
        check_args("nope", "distance", "set", 4)
    r = api.post("/api/select", json={"text": SENTENCE, "src": "fr", "tgt": "en", "method": "nope"})
    assert r.status_code == 400 and r.json() == {"error": str(cli_error.value)}

    r = api.post("/api/select", json={"text": SENTENCE, "src": "de", "tgt": "en"})
    assert r.status_code == 400
    assert r.json()["error"] == "no corpus holds de-en pairs; load one first: scoi ingest FILE --src de --tgt en"

    r = api.get("/api/jobs/nosuchjob")
    assert r.status_code == 404
    assert r.json()["error"] == "no job 'nosuchjob' (give a job id or name; see `scoi job list`)"


@pytest.mark.parametrize("extra", [{"sql": "SELECT 1"}, {"template_path": "/etc/passwd"},
                                   {"base_url": "http://evil/v1"}])
def test_requests_carry_no_sql_paths_or_urls(api, extra):
    r = api.post("/api/prompt", json={"text": SENTENCE, "src": "fr", "tgt": "en", **extra})
    assert r.status_code == 422
    assert list(extra)[0] in r.json()["error"] and "Extra inputs are not permitted" in r.json()["error"]


def test_template_files_are_refused(api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.j2").write_text("{{ query }}", encoding="utf-8")
    r = api.post("/api/prompt", json={"text": SENTENCE, "src": "fr", "tgt": "en", "template": "t.j2"})
    assert r.status_code == 400
    assert r.json()["error"] == "unknown template 't.j2'; this server offers: xglm, alpaca"


def test_prompt_is_the_cli_prompt(api, job_db):
    from scoi.core.prompt import Example, render_prompt
    from scoi.selection.selector import Selector

    r = api.post("/api/prompt", json={"text": SENTENCE, "src": "fr", "tgt": "en", "k": 2, "template": "alpaca"})
    assert r.status_code == 200, r.text
    with Selector("fr", "en", url=job_db, k=2) as sel:
        res = sel.select(SENTENCE)
    want = render_prompt(SENTENCE, [Example(p.src, p.tgt) for p in res.selected], "fr", "en", template="alpaca")
    assert r.json()["prompt"] == want


def test_translate_with_a_configured_model_only(job_db):
    with ok_server() as fake, client(job_db, models={"stub": ModelConfig(
            "stub", "openai:stub", {"base_url": fake.url, "max_retries": 0})}) as api:
        r = api.post("/api/translate", json={"text": SENTENCE, "src": "fr", "tgt": "en", "model": "stub", "k": 2})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["output"] == f"ok {len(body['prompt'])}"
        assert fake.calls[-1]["body"]["prompt"] == body["prompt"]
        r = api.post("/api/translate", json={"text": SENTENCE, "src": "fr", "tgt": "en", "model": "openai:gpt"})
        assert r.status_code == 400
        assert r.json()["error"] == "unknown model 'openai:gpt'; this server has: stub"


def test_submit_and_follow_a_job(job_db):
    from scoi.jobs.worker import Worker, WorkerOptions

    sentences = [fr for fr, _ in demo_test_pairs()[:3]]
    with ok_server() as fake, client(job_db, models={"stub": ModelConfig(
            "stub", "openai:stub", {"base_url": fake.url, "max_retries": 0})}) as api:
        r = api.post("/api/jobs", json={"sentences": sentences, "src": "fr", "tgt": "en", "model": "stub",
                                        "k": 2, "name": "api-job"})
        assert r.status_code == 201, r.text
        job_id = r.json()["job_id"]
        assert r.json() == {"job_id": job_id, "name": "api-job", "items": 3, "model": "stub"}
        assert "openai:stub" not in api.get("/api/jobs").text  # clients see names, never specs
        listed = api.get("/api/jobs").json()
        assert [(j["job_id"], j["model"], j["total"]) for j in listed] == [(job_id, "stub", 3)]
        assert api.get("/api/jobs/api-job").json()["job"]["queued"] == 3
        with Worker(job_db, WorkerOptions(burst=True, batch_size=3)) as w:
            w.run()
        got = api.get(f"/api/jobs/{job_id}", params={"limit": 2}).json()
        assert got["job"]["done"] == 3 and got["job"]["state"] == "done" and got["job"]["model"] == "stub"
        assert [i["index"] for i in got["items"]] == [0, 1]
        assert all(i["output"].startswith("ok ") and i["selection_id"] for i in got["items"])
        assert [i["source"] for i in api.get(f"/api/jobs/{job_id}", params={"offset": 2}).json()["items"]] \
            == sentences[2:]
        # a job's bad option is refused with the CLI's text, nothing stored
        r = api.post("/api/jobs", json={"sentences": ["Un."], "src": "fr", "tgt": "en", "model": "stub",
                                        "order": "sideways"})
        assert r.status_code == 400 and "sideways" in r.json()["error"]
        assert len(api.get("/api/jobs").json()) == 1


def test_corpora_config_health(api):
    corpora = api.get("/api/corpora").json()
    assert [(c["src_lang"], c["tgt_lang"], c["pairs"] > 100) for c in corpora] == [("fr", "en", True)]
    cfg = api.get("/api/config").json()
    assert "fr-en" in cfg["directions"] and "en-fr" in cfg["directions"] and cfg["token_required"] is False
    from scoi import __version__

    assert api.get("/api/health").json() == {"status": "ok", "database": "ok", "version": __version__}
    assert "/api/select" in api.get("/openapi.json").json()["paths"]
    docs = api.get("/docs").text
    assert "swagger" in docs.lower() and "//" not in docs  # served offline, from fastapi-offline's files
    assert "/docs-static/swagger-ui-bundle.js" in docs
    assert api.get("/docs-static/swagger-ui-bundle.js").status_code == 200


# --------------------------------------------------------------------------- the token rule
def test_token_is_checked_on_every_api_call(job_db):
    with client(job_db, host="0.0.0.0", token=TOKEN) as api:
        assert api.get("/api/corpora").status_code == 401
        r = api.get("/api/corpora", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401 and "SCOI_SERVE_TOKEN" in r.json()["error"]
        assert r.headers["www-authenticate"] == "Bearer"
        r = api.post("/api/select", json={"text": SENTENCE, "src": "fr", "tgt": "en"})
        assert r.status_code == 401
        assert api.get("/api/corpora", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert api.get("/api/health").status_code == 200  # liveness needs no token
        assert api.get("/").status_code == 200  # the page itself holds no data


# --------------------------------------------------------------------------- limits
def test_request_size_and_text_limits(job_db):
    with client(job_db, limits=Limits(max_body_bytes=2048, max_chars=60, max_sentences=2, max_k=5)) as api:
        r = api.post("/api/select", json={"text": "x" * 4000, "src": "fr", "tgt": "en"})
        assert r.status_code == 413 and "2048 bytes" in r.json()["error"]
        r = api.post("/api/select", json={"text": "mot " * 20, "src": "fr", "tgt": "en"})
        assert r.status_code == 413 and r.json()["error"] == "text has 80 characters; the server's limit is 60"
        r = api.post("/api/select", json={"text": SENTENCE, "src": "fr", "tgt": "en", "k": 9})
        assert r.status_code == 400 and "limit of 5" in r.json()["error"]
        r = api.post("/api/jobs", json={"sentences": ["Un.", "Deux.", "Trois."], "src": "fr", "tgt": "en",
                                        "model": "none"})
        assert r.status_code == 400  # unknown model first
        # a body streamed without Content-Length is cut as well
        r = api.post("/api/select", content=iter([b'{"text": "' + b"y" * 3000, b'", "src": "fr", "tgt": "en"}']),
                     headers={"Content-Type": "application/json"})
        assert r.status_code == 413


def test_time_limit_answers_504(job_db):
    with client(job_db, limits=Limits(timeout_s=0.001)) as api:
        r = api.post("/api/select", json={"text": SENTENCE, "src": "fr", "tgt": "en"})
        assert r.status_code in (503, 504), r.text
        assert "limit" in r.json()["error"]


# --------------------------------------------------------------------------- concurrency
def test_two_clients_at_once_get_what_each_alone_gets(api):
    texts = {"fr-en": ["Un homme joue de la guitare.", "Deux enfants courent sur la plage."],
             "en-fr": ["A man plays the guitar.", "Two children run on the beach."]}
    alone = {}
    for direction, sents in texts.items():
        src, tgt = direction.split("-")
        for s in sents:
            alone[s] = api.post("/api/select", json={"text": s, "src": src, "tgt": tgt, "coverage": True}).json()
    got: dict[str, list] = {s: [] for sents in texts.values() for s in sents}
    errors: list[str] = []

    def hammer(direction: str, order: list[str]) -> None:
        src, tgt = direction.split("-")
        for _ in range(4):
            for s in order:
                r = api.post("/api/select", json={"text": s, "src": src, "tgt": tgt, "coverage": True})
                if r.status_code != 200:
                    errors.append(r.text)
                else:
                    got[s].append(r.json())

    threads = [threading.Thread(target=hammer, args=("fr-en", texts["fr-en"])),
               threading.Thread(target=hammer, args=("fr-en", texts["fr-en"][::-1])),
               threading.Thread(target=hammer, args=("en-fr", texts["en-fr"]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for s, results in got.items():
        assert results
        for res in results:
            assert res["selected"] == alone[s]["selected"]
            assert res["coverage"]["words"] == alone[s]["coverage"]["words"]
            assert res["coverage"]["tree"]["tokens"] == alone[s]["coverage"]["tree"]["tokens"]


# --------------------------------------------------------------------------- the fuzzy methods' embedder
def test_fuzzy_methods_use_the_embedder_the_server_names(job_db, tmp_path):
    from scoi.embedding.embedder import Embedder
    from scoi.embedding.embeddings import embed_missing
    from tests.tiny_model import build_tiny_sentence_transformer

    model_dir = str(build_tiny_sentence_transformer(tmp_path / "tiny-st"))
    embed_missing(job_db, Embedder(model_dir), langs=["fr"])
    body = {"text": SENTENCE, "src": "fr", "tgt": "en", "k": 2, "method": "fuzzy"}
    with client(job_db) as api:  # the default embedder, which nobody embedded with here
        r = api.post("/api/select", json=body)
        assert r.status_code == 400 and "scoi embed --model" in r.json()["error"]
    app = create_app(ServeConfig(url=job_db, embedder=model_dir), warm=[("fr", "en")])
    with TestClient(app, base_url=LOCAL) as api:
        r = api.post("/api/select", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["params"]["embedder"] == Embedder(model_dir).name and len(r.json()["selected"]) == 2
