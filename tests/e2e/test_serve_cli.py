"""``scoi serve`` as a user runs it: a real uvicorn process on a localhost port, its token
taken from the environment; and the start-up refusals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.helpers.cli import cli, scoi_env

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")


TOKEN = "tok-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_process_with_a_token(job_db):
    port = _free_port()
    env = scoi_env(job_db, SCOI_SERVE_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "serve", "--port", str(port), "--warm", "fr-en"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "scoi serve did not answer"
            time.sleep(0.2)
        assert httpx.get(base + "/api/corpora").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = httpx.post(base + "/api/select", json={"text": "Le chat dort sur le canapé.", "src": "fr", "tgt": "en"},
                       headers=auth, timeout=60)
        assert r.status_code == 200 and len(r.json()["selected"]) == 4
        assert "fr-en" in httpx.get(base + "/api/config", headers=auth).json()["warm"]
        assert httpx.get(base + "/").headers["content-security-policy"].startswith("default-src 'self'")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert TOKEN not in out  # the token is never printed


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
