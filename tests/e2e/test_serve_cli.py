"""``scoi serve`` as a user runs it: a real uvicorn process on a localhost port, its token
taken from the environment; and the start-up refusals."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.helpers.cli import cli, scoi_env
from tests.helpers.serve import free_port, start_serve, stop_serve

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")

TOKEN = "tok-0123456789abcdef"


def test_serve_process_with_a_token(job_db):
    port = free_port()
    proc = start_serve(port, scoi_env(job_db, SCOI_SERVE_TOKEN=TOKEN), "--warm", "fr-en")
    base = f"http://127.0.0.1:{port}"
    try:
        assert httpx.get(base + "/api/corpora").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = httpx.post(base + "/api/select", json={"text": "Le chat dort sur le canapé.", "src": "fr", "tgt": "en"},
                       headers=auth, timeout=60)
        assert r.status_code == 200 and len(r.json()["selected"]) == 4
        assert "fr-en" in httpx.get(base + "/api/config", headers=auth).json()["warm"]
        assert httpx.get(base + "/").headers["content-security-policy"].startswith("default-src 'self'")
    finally:
        out = stop_serve(proc)
    assert TOKEN not in out  # the token is never printed


def test_serve_process_without_token_answers_this_machines_names_only(job_db):
    """DNS rebinding: a page whose own name resolves to 127.0.0.1 sends its name as Host."""
    port = free_port()
    env = scoi_env(job_db)
    env.pop("SCOI_SERVE_TOKEN", None)
    proc = start_serve(port, env, "--warm", "fr-en")
    base = f"http://127.0.0.1:{port}"
    job = {"sentences": ["Le chat dort."], "src": "fr", "tgt": "en", "model": "none"}
    try:
        for path in ("/api/jobs", "/api/corpora", "/"):
            r = httpx.get(base + path, headers={"Host": f"evil.example:{port}"})
            assert r.status_code == 421 and "is not this server's" in r.json()["error"]
        r = httpx.post(base + "/api/jobs", json=job, headers={"Host": f"evil.example:{port}",
                                                              "Origin": f"http://evil.example:{port}"})
        assert r.status_code == 421
        r = httpx.post(base + "/api/jobs", json=job, headers={"Origin": "http://localhost:18999"})
        assert r.status_code == 403
        assert httpx.get(base + "/api/jobs").json() == []
        assert httpx.get(f"http://localhost:{port}/api/corpora").status_code == 200
        assert "frame-ancestors 'none'" in httpx.get(base + "/static/index.html").headers["content-security-policy"]
    finally:
        stop_serve(proc)


def test_serve_refuses_weak_tokens_and_bad_models_atstart_serve(job_db, monkeypatch):
    for token in (" ", "a", "short-token"):
        monkeypatch.setenv("SCOI_SERVE_TOKEN", token)
        result = cli(["serve", "--host", "0.0.0.0"], job_db)
        assert result.exit_code == 1 and "SCOI_SERVE_TOKEN" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    monkeypatch.delenv("SCOI_SERVE_TOKEN")
    for args, words in ((["--model", "bad=nonsense"], "cannot make a backend from 'nonsense'"),
                        (["--model", "f=openai:a", "--backend-opt", "f:concurency=2"], "did you mean 'concurrency'"),
                        (["--model", "f=gguf:/nonexistent/model.gguf"], "GGUF file not found")):
        result = cli(["serve", *args], job_db)
        assert result.exit_code == 1 and words in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_serve_refuses_other_hosts_without_token(job_db, monkeypatch):
    monkeypatch.delenv("SCOI_SERVE_TOKEN", raising=False)
    result = cli(["serve", "--host", "0.0.0.0"], job_db)
    assert result.exit_code == 1
    assert "requires a token: set SCOI_SERVE_TOKEN" in result.stderr
    result = cli(["serve", "--model", "gemma"], job_db)
    assert result.exit_code == 1 and "expected NAME=SPEC" in result.stderr
    result = cli(["serve", "--warm", "fr"], job_db)
    assert result.exit_code == 1 and "expected SRC-TGT" in result.stderr
    assert os.environ.get("SCOI_SERVE_TOKEN") is None
