"""``scoi serve`` against hostile or broken input, in process (FastAPI TestClient) over a
real database: other Hosts and Origins, malformed bodies, a database that goes away and
comes back, backend failures that must not show URLs or paths, the OpenAPI document."""

from __future__ import annotations

import gzip
import json
import time

import psycopg
import pytest

from tests.helpers.fake_openai import closed_port
from tests.helpers.jobs import ok_server

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")

from fastapi.testclient import TestClient  # noqa: E402

from scoi.service.app import create_app  # noqa: E402
from scoi.service.config import Limits, ModelConfig, ServeConfig  # noqa: E402

SENTENCE = "Un homme joue de la guitare sur la scène."
LOCAL = "http://127.0.0.1:8765"
SELECT = {"text": SENTENCE, "src": "fr", "tgt": "en", "k": 2}


def client(url: str, **kw) -> TestClient:
    return TestClient(create_app(ServeConfig(url=url, **kw)), base_url=LOCAL)


@pytest.fixture()
def api(job_db):
    with ok_server() as fake, client(job_db, models={"stub": ModelConfig(
            "stub", "openai:stub", {"base_url": fake.url, "max_retries": 0})}) as c:
        yield c


def job_count(api: TestClient) -> int:
    return len(api.get("/api/jobs").json())


def job_body(**kw) -> dict:
    return {"sentences": ["Le chat dort."], "src": "fr", "tgt": "en", "model": "stub", "k": 1, **kw}


# --------------------------------------------------------------------------- Host and Origin
@pytest.mark.parametrize("path", ["/api/jobs", "/api/corpora", "/api/health", "/", "/docs", "/openapi.json"])
def test_a_server_without_token_refuses_other_hosts(api, path):
    r = api.get(path, headers={"Host": "evil.example:8765"})
    assert r.status_code == 421
    assert r.json()["error"].startswith("Host 'evil.example:8765' is not this server's")


def test_a_server_without_token_refuses_a_post_under_another_host(api):
    r = api.post("/api/jobs", json=job_body(name="rebound"),
                 headers={"Host": "evil.example:8765", "Origin": "http://evil.example:8765"})
    assert r.status_code == 421 and job_count(api) == 0


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "localhost", "127.0.0.1"])
def test_loopback_hosts_are_answered(api, host):
    assert api.get("/api/corpora", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("origin", ["http://localhost:18999", "http://evil.example:8765", "null",
                                    "http://127.0.0.1:8766", "file://"])
def test_changes_from_another_origin_are_refused(api, origin):
    r = api.post("/api/jobs", json=job_body(), headers={"Origin": origin})
    assert r.status_code == 403 and "is not this server's" in r.json()["error"]
    r = api.post("/api/select", json=SELECT, headers={"Origin": origin})
    assert r.status_code == 403
    assert job_count(api) == 0


def test_changes_from_the_servers_own_page_are_taken(api):
    r = api.post("/api/jobs", json=job_body(), headers={"Origin": LOCAL})
    assert r.status_code == 201, r.text
    assert api.post("/api/select", json=SELECT, headers={"Origin": "http://localhost:8765",
                                                         "Host": "localhost:8765"}).status_code == 200


def test_a_server_with_token_leaves_hosts_to_the_token(job_db):
    token = "tok-0123456789abcdef"
    with client(job_db, host="0.0.0.0", token=token) as api:
        r = api.get("/api/corpora", headers={"Host": "scoi.example.org", "Authorization": f"Bearer {token}"})
        assert r.status_code == 200
        assert api.get("/api/corpora", headers={"Host": "scoi.example.org"}).status_code == 401


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_json_bodies_need_a_json_content_type(api, content_type):
    """What a cross-site form or a no-cors fetch of a Blob can send is not taken as JSON."""
    headers = {"Content-Type": content_type} if content_type else {}
    r = api.post("/api/jobs", content=json.dumps(job_body(name="blob")).encode(), headers=headers)
    assert r.status_code == 422 and "details" in r.json()
    assert job_count(api) == 0


# --------------------------------------------------------------------------- headers
@pytest.mark.parametrize("path", ["/", "/static/index.html", "/static/app.js", "/api/health", "/api/corpora",
                                  "/docs", "/openapi.json", "/nowhere", "/docs-static/swagger-ui.css"])
def test_every_answer_forbids_framing_and_sniffing(api, path):
    headers = api.get(path).headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["content-security-policy"].startswith("default-src 'self'")
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"


def test_refusals_carry_the_headers_too(api):
    for r in (api.get("/api/corpora", headers={"Host": "evil.example"}),
              api.post("/api/select", content=b"x" * 2_000_000, headers={"Content-Type": "application/json"})):
        assert r.status_code in (413, 421) and r.headers["x-frame-options"] == "DENY"


def test_swaggers_demo_page_is_not_served(api):
    assert api.get("/docs-static/index.html").status_code == 404
    assert api.get("/docs-static/swagger-initializer.js").status_code == 404
    assert api.get("/docs-static/..%2Fapp.py").status_code == 404


# --------------------------------------------------------------------------- malformed bodies: 422 JSON
RAW_BODIES = {
    "a lone surrogate in text": b'{"text": "Un homme \\ud800 joue.", "src": "fr", "tgt": "en"}',
    "a lone surrogate as a key": b'{"text": "Un homme.", "src": "fr", "tgt": "en", "\\ud800": 1}',
    "k NaN": b'{"text": "Un homme.", "src": "fr", "tgt": "en", "k": NaN}',
    "k Infinity": b'{"text": "Un homme.", "src": "fr", "tgt": "en", "k": Infinity}',
    "not UTF-8": '{"text": "Un garçon.", "src": "fr", "tgt": "en"}'.encode("latin-1"),
    "gzip": gzip.compress(b'{"text": "Un homme.", "src": "fr", "tgt": "en"}'),
    "nested too deep": b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "not JSON": b'{"text": ',
    "a list": b'["Un homme."]',
}


@pytest.mark.parametrize("what", list(RAW_BODIES))
def test_malformed_select_bodies_get_422_json(api, what):
    r = api.post("/api/select", content=RAW_BODIES[what], headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    body = r.json()
    assert set(body) == {"error", "details"} and body["error"] and isinstance(body["details"], list)
    assert "\n" not in body["error"]


@pytest.mark.parametrize("path", ["/api/select", "/api/translate", "/api/jobs"])
@pytest.mark.parametrize("raw,headers", [
    (b'{"text": "Un gar\xffon.", "sentences": ["Un gar\xffon."], "src": "fr", "tgt": "en", "model": "stub"}', {}),
    (gzip.compress(b'{"text": "Un homme.", "src": "fr", "tgt": "en"}'), {"Content-Encoding": "gzip"}),
], ids=["raw xff byte", "gzip"])
def test_a_body_that_is_not_utf8_is_told_it_must_be_utf8_json(api, path, raw, headers):
    r = api.post(path, content=raw, headers={"Content-Type": "application/json", **headers})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "the body must be UTF-8 JSON: it holds bytes that are not UTF-8"
    assert job_count(api) == 0


@pytest.mark.parametrize("path,raw", [
    ("/api/gaps", b'{"sentences": ["Un."], "src": "fr", "tgt": "en", "limit": NaN}'),
    ("/api/translate", b'{"text": "Un.", "src": "fr", "tgt": "en", "model": "stub", "max_new_tokens": -Infinity}'),
    ("/api/jobs", b'{"sentences": ["Un."], "src": "fr", "tgt": "en", "model": "stub", "name": "a\\ud800b"}'),
])
def test_non_finite_numbers_and_surrogates_elsewhere_get_422(api, path, raw):
    r = api.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and set(r.json()) == {"error", "details"}, r.text
    assert job_count(api) == 0


def test_a_job_sentence_with_a_surrogate_is_named_by_its_index(api):
    raw = b'{"sentences": ["Le chien dort.", "Le chat \\udc00 dort."], "src": "fr", "tgt": "en", "model": "stub"}'
    r = api.post("/api/jobs", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert r.json()["error"] == ("sentences[1] contains a lone surrogate (U+DC00) at position 8; "
                                 "send valid UTF-8 text")
    assert job_count(api) == 0


def test_a_nul_in_a_job_name_or_sentence_gets_422(api):
    r = api.post("/api/jobs", json=job_body(name="a\x00b"))
    assert r.status_code == 422 and r.json()["error"] == "name contains a NUL character (U+0000) at position 1"
    r = api.post("/api/jobs", json=job_body(sentences=["Le chat\x00 dort."]))
    assert r.status_code == 422 and r.json()["error"].startswith("sentences[0] contains a NUL character")
    r = api.post("/api/select", json={**SELECT, "text": "Un\x00homme"})
    assert r.status_code == 422 and r.json()["error"].startswith("text contains a NUL character")
    assert job_count(api) == 0


def test_blank_text_is_refused(api):
    r = api.post("/api/select", json={**SELECT, "text": "  \t "})
    assert r.status_code == 422 and r.json()["error"] == "text is blank"
    r = api.post("/api/prompt", json={**SELECT, "text": "   "})
    assert r.status_code == 422 and r.json()["error"] == "text is blank"


def test_a_blank_job_sentence_is_refused_by_its_index(api):
    r = api.post("/api/jobs", json=job_body(sentences=["Le chat dort.", "   "]))
    assert r.status_code == 422 and r.json()["error"] == "sentences[1] is blank"
    r = api.post("/api/gaps", json={"sentences": ["", "Un."], "src": "fr", "tgt": "en"})
    assert r.status_code == 422 and r.json()["error"] == "sentences[0] is blank"
    assert job_count(api) == 0
    # a blank reference is no sentence to translate: taken
    assert api.post("/api/jobs", json=job_body(references=[" "])).status_code == 201


@pytest.mark.parametrize("path", ["/api/jobs/1?offset=9223372036854775808", "/api/jobs/1?offset=1e400",
                                  "/api/jobs/99999999999999999999999", "/api/jobs/a%00b",
                                  "/api/gaps?job=a%00b", "/api/gaps?schedule=a%00b"])
def test_out_of_range_numbers_and_nul_in_paths_get_422(api, path):
    api.post("/api/jobs", json=job_body())
    r = api.get(path)
    assert r.status_code == 422, r.text
    assert r.json()["error"]


# --------------------------------------------------------------------------- OpenAPI
def test_openapi_declares_the_errors_and_limits_the_server_answers(job_db):
    with client(job_db, limits=Limits(max_chars=300, max_sentences=7, max_k=9)) as api:
        doc = api.get("/openapi.json").json()
        assert doc["openapi"].startswith("3.1")
        schemas = doc["components"]["schemas"]
        select = doc["paths"]["/api/select"]["post"]["responses"]
        for status in ("400", "401", "404", "413", "502", "503", "504"):
            assert select[status]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody"), status
        invalid = select["422"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert set(schemas[invalid]["properties"]) == {"error", "details"}
        assert "HTTPValidationError" not in schemas  # FastAPI's {"detail": [...]}, which the server never sends
        assert schemas["SelectRequest"]["properties"]["k"]["maximum"] == 9
        assert schemas["SelectRequest"]["properties"]["text"]["maxLength"] == 300
        job = schemas["JobRequest"]["properties"]
        assert job["sentences"]["maxItems"] == 7 and job["sentences"]["items"]["maxLength"] == 300
        # what the document declares is what a request over the limits gets
        r = api.post("/api/select", json={**SELECT, "k": 10})
        assert str(r.status_code) in select and set(r.json()) == {"error"}


# --------------------------------------------------------------------------- the database goes away
def _set_connections(server_db: str, allowed: bool) -> None:
    """Refuse (or allow again) new connections to the test's database and end the open
    ones, as a stopped and restarted server does to its clients (AdminShutdown)."""
    name = psycopg.conninfo.conninfo_to_dict(server_db)["dbname"]
    admin_url = psycopg.conninfo.make_conninfo(server_db, dbname="postgres")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
            psycopg.sql.Identifier(name), psycopg.sql.SQL("true" if allowed else "false")))
        if not allowed:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
            deadline = time.monotonic() + 10
            while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()[0]:
                assert time.monotonic() < deadline, "the database's sessions did not end"
                time.sleep(0.05)


def test_a_dead_database_answers_503_and_the_first_request_after_it_returns_works(job_db):
    gaps = {"sentences": [SENTENCE], "src": "fr", "tgt": "en", "k": 2}
    with client(job_db) as api:
        before = api.post("/api/select", json=SELECT).json()
        assert api.post("/api/gaps", json=gaps).status_code == 200
        assert api.post("/api/select", json={**SELECT, "src": "en", "tgt": "fr",
                                             "text": "A man plays the guitar."}).status_code == 200
        _set_connections(job_db, allowed=False)
        try:
            for r in (api.post("/api/select", json=SELECT), api.get("/api/jobs"), api.get("/api/corpora"),
                      api.post("/api/gaps", json=gaps)):
                assert r.status_code == 503, r.text
                assert r.json() == {"error": "database unavailable"}
                assert r.headers["retry-after"]
            assert api.get("/api/health").json()["status"] == "degraded"
        finally:
            _set_connections(job_db, allowed=True)
        # the first request on each direction after the database is back works
        after = api.post("/api/select", json=SELECT)
        assert after.status_code == 200, after.text
        assert after.json()["selected"] == before["selected"]
        assert api.post("/api/gaps", json=gaps).status_code == 200
        assert api.get("/api/jobs").status_code == 200


def test_a_database_restart_costs_no_request_on_a_cached_selector(job_db):
    with client(job_db) as api:
        directions = [("fr", "en", SENTENCE), ("en", "fr", "A man plays the guitar.")]
        for src, tgt, text in directions:
            assert api.post("/api/select", json={**SELECT, "src": src, "tgt": tgt, "text": text}).status_code == 200
        _set_connections(job_db, allowed=False)
        _set_connections(job_db, allowed=True)  # restarted: every cached selector's connection is gone
        for src, tgt, text in directions:
            r = api.post("/api/select", json={**SELECT, "src": src, "tgt": tgt, "text": text})
            assert r.status_code == 200, r.text


# --------------------------------------------------------------------------- what clients see of backends
def test_backend_urls_never_reach_clients(job_db):
    secret = f"http://127.0.0.1:{closed_port()}/internal-secret-path/v1"
    models = {"priv": ModelConfig("priv", "openai:fake", {"base_url": secret, "max_retries": 0, "timeout": 2})}
    with client(job_db, models=models) as api:
        r = api.post("/api/translate", json={**SELECT, "model": "priv"})
        assert r.status_code == 502, r.text
        assert "internal-secret-path" not in r.text and "127.0.0.1" not in r.text
        assert r.json()["error"]
        assert "internal-secret-path" not in api.get("/api/models").text


def test_worker_errors_in_job_pages_show_no_paths(api, job_db):
    job_id = api.post("/api/jobs", json=job_body(name="pathy")).json()["job_id"]
    with psycopg.connect(job_db, autocommit=True) as conn:  # what a worker stores when a model cannot load
        conn.execute("UPDATE job_item SET status = 'failed', last_error = %s WHERE job_id = %s",
                     ("cannot load the tokenizer of /srv/private/evilmodel: no tokenizer.json", job_id))
    page = api.get(f"/api/jobs/{job_id}")
    assert page.status_code == 200
    error = page.json()["items"][0]["error"]
    assert "/srv/private" not in page.text and error.startswith("cannot load the tokenizer of <path>")


# --------------------------------------------------------------------------- models load at start
def test_models_load_at_start_and_report_their_state(job_db, tiny_model):
    models = {"tiny": ModelConfig("tiny", tiny_model, {"dtype": "float32"})}
    with client(job_db, models=models) as api:
        states = api.get("/api/models").json()
        assert [(m["name"], m["kind"]) for m in states] == [("tiny", "hf")]
        assert states[0]["state"] in ("loading", "ready")  # loading began at start, before any request
        deadline = time.monotonic() + 120
        while (state := api.get("/api/models").json()[0])["state"] == "loading":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert state["state"] == "ready" and state["error"] is None and state["load_s"] > 0
        r = api.post("/api/translate", json={**SELECT, "model": "tiny", "max_new_tokens": 4})
        assert r.status_code == 200, r.text
        assert tiny_model not in json.dumps(api.get("/api/models").json())


def test_a_model_that_cannot_load_is_reported_without_its_path(job_db, tmp_path):
    model = tmp_path / "private-model"
    model.mkdir()
    (model / "config.json").write_text("{ not json", encoding="utf-8")
    with client(job_db, models={"broken": ModelConfig("broken", f"hf:{model}", {})}) as api:
        deadline = time.monotonic() + 120
        while (state := api.get("/api/models").json()[0])["state"] in ("not loaded", "loading"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert state["state"] == "failed" and state["error"] and str(tmp_path) not in state["error"]
        r = api.post("/api/translate", json={**SELECT, "model": "broken"})
        assert r.status_code == 502 and r.json()["error"].startswith("model 'broken' cannot be loaded: ")
        assert str(tmp_path) not in r.text and "<path>" in r.text
