"""``POST /api/lookup`` and ``/api/select``'s match % in process (FastAPI TestClient) over a
real database holding the demo corpus: the same answer as the library call."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")

from fastapi.testclient import TestClient  # noqa: E402

from scoi.lookup import lookup  # noqa: E402
from scoi.selection.selector import Selector  # noqa: E402
from scoi.service.app import create_app  # noqa: E402
from scoi.service.config import ServeConfig  # noqa: E402

QUERY = "Bonjour, comment allez-vous ce soir ?"


@pytest.fixture()
def api(job_db):
    with TestClient(create_app(ServeConfig(url=job_db)), base_url="http://127.0.0.1") as c:
        yield c


def test_lookup_answers_what_the_library_finds(api, job_db):
    r = api.post("/api/lookup", json={"text": QUERY, "src": "fr", "tgt": "en", "n": 3, "min_match": 10})
    assert r.status_code == 200, r.text
    got = r.json()
    with Selector("fr", "en", url=job_db, method="bm25") as sel:
        want = lookup(sel, QUERY, n=3, min_match=10).to_dict()
    assert got["matches"] == want["matches"] and len(got["matches"]) == 3
    assert set(got["matches"][0]) == {"pair_id", "match", "score", "src", "tgt", "corpus", "meta"}
    assert got["matches"][0]["match"] == 71.43 and got["min_match"] == 10


def test_lookup_default_minimum_is_the_clis(api, job_db):
    from scoi.core import defaults

    r = api.post("/api/lookup", json={"text": QUERY, "src": "fr", "tgt": "en"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["min_match"] == defaults.LOOKUP_MIN_MATCH == 70 and got["search"]["path"] == "count"
    assert [m["match"] for m in got["matches"]] == [71.43]  # the one stored sentence at 70 % or more


def test_lookup_refuses_bad_requests_with_one_line(api):
    r = api.post("/api/lookup", json={"text": QUERY, "src": "fr", "tgt": "en", "min_match": 150})
    assert r.status_code == 422 and "min_match" in r.json()["error"]
    r = api.post("/api/lookup", json={"text": QUERY, "src": "fr", "tgt": "en", "n": 500, "pool": 100})
    assert r.status_code == 422 and "n:" in r.json()["error"]
    r = api.post("/api/lookup", json={"text": QUERY, "src": "fr", "tgt": "en", "n": 50, "pool": 10})
    assert r.status_code == 400 and r.json() == {"error": "-n 50 is out of range; expected 1 to the pool size (10)"}
    r = api.post("/api/lookup", json={"text": QUERY, "src": "de", "tgt": "en"})
    assert r.status_code == 400 and "no corpus holds de-en pairs" in r.json()["error"]


def test_select_min_match_reaches_the_selection(api):
    r = api.post("/api/select", json={"text": QUERY, "src": "fr", "tgt": "en", "min_match": 70})
    assert r.status_code == 200, r.text
    got = r.json()
    assert [p["match"] for p in got["selected"]] == [71.43] and got["min_match"] == 70
    assert got["notice"].startswith("1 of ") and all(c["match"] >= 70 for c in got["candidates"])


def test_lookup_takes_the_metadata_filter_as_data(api, job_db):
    """``where`` in the body restricts the lookup to pairs whose pair.meta holds it, for
    that request only; a key that is not KEY-shaped is refused in one line."""
    body = {"text": QUERY, "src": "fr", "tgt": "en", "min_match": 10, "n": 3}
    everything = api.post("/api/lookup", json=body).json()["matches"]
    assert everything
    none = api.post("/api/lookup", json={**body, "where": {"domain": "nowhere'; DROP TABLE pair;--"}})
    assert none.status_code == 200 and none.json()["matches"] == []
    assert api.post("/api/lookup", json=body).json()["matches"] == everything  # the filter was this call's only
    bad = api.post("/api/lookup", json={**body, "where": {"no key": "x"}})
    assert bad.status_code in (400, 422) and "no key" in bad.text
