"""Translation-memory reuse: exact matches (scoi.core.exact, migration 0031, scoi.reuse) and
jobs that insert the stored translation instead of asking the model."""

from __future__ import annotations

import psycopg
from hypothesis import HealthCheck, given, settings, strategies as st

from scoi.core.exact import WHITESPACE, exact_sha, normalize
from scoi.reuse import exact_matches
from tests.helpers.hypothesis import examples

# Text the normalisation must treat as the database does: letters, combining marks,
# every whitespace character and a few that are not (U+200B, U+001F).
_TEXT = st.text(st.sampled_from(list(WHITESPACE) + list("ae\u0301\u00e9\u212b\u0041\u030a,.\u200b\x1fZ")),
                max_size=24)


@given(texts=st.lists(_TEXT, min_size=1, max_size=20))
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sql_normalisation_equals_python_normalisation(db_url, texts):
    # read only: the one database serves every example
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT exact_text(t), exact_sha(t), exact_changes(t) FROM unnest(%s::text[]) AS t",
                            (texts,)).fetchall()
    assert [r[0] for r in rows] == [normalize(t) for t in texts]
    assert [bytes(r[1]) for r in rows] == [exact_sha(t) for t in texts]
    assert [r[2] for r in rows] == [normalize(t) != t for t in texts]  # the partial index's predicate


def test_exact_match_ignores_spacing_and_composition_but_not_case(job_db):
    with psycopg.connect(job_db) as conn:
        stored = "Je m'appelle Marie."
        # a stored text that is not normalised (two spaces, decomposed é) is found too
        conn.execute("UPDATE sentence SET text = %(new)s, text_sha = sha256(convert_to(%(new)s, 'UTF8')) "
                     "WHERE lang = 'fr' AND text = %(old)s",
                     {"new": "Il fait  beau aujourd'hui.", "old": "Il fait beau aujourd'hui."})
        found = exact_matches(conn, "fr", "en", [stored, "  Je  m'appelle\tMarie. ", "je m'appelle marie.",
                                                  "Il fait beau aujourd'hui.", "Personne ne dit cela.", ""])
    assert found[stored].target == "My name is Marie."
    assert found["  Je  m'appelle\tMarie. "] == found[stored]
    assert found["Il fait beau aujourd'hui."].target == "The weather is nice today."
    assert set(found) == {stored, "  Je  m'appelle\tMarie. ", "Il fait beau aujourd'hui."}


# ------------------------------------------------------------------ jobs
def _run_job(url: str, stub, sources: list[str], *, name: str, prefetch: bool = True, **spec) -> list[dict]:
    """Submit a fr-en few-shot job on the fake server, run a burst worker over it, and
    return its item rows."""
    from scoi.jobs.create import submit
    from scoi.jobs.spec import JobSpec
    from scoi.jobs.worker import Worker, WorkerOptions
    from tests.helpers.jobs import items

    with psycopg.connect(url, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:stub", k=2, name=name,
                                      backend_options={"max_retries": 0, "base_url": stub.url}, **spec), sources)
    with Worker(url, WorkerOptions(batch_size=3, burst=True, job_id=job_id, prefetch=prefetch)) as w:
        assert w.run().done == len(sources)
    return items(url, job_id)


def _completions(stub) -> int:
    return sum(c["path"].endswith("/completions") for c in stub.calls)


def _pair_id(url: str, fr: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT e.pair_id FROM example e JOIN sentence s ON s.id = e.src_id "
                            "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en' AND s.text = %s", (fr,)).fetchone()[0]


def test_job_inserts_exact_matches_and_sends_only_the_rest_to_the_model(job_db):
    from tests.helpers.jobs import demo_pairs, demo_test_pairs, ok_server

    stored = demo_pairs()[:4]
    new = [fr for fr, _ in demo_test_pairs()[:3]]
    # stored sentences (one with extra spaces), new ones between them
    sources = [stored[0][0], new[0], "  " + stored[1][0].replace(" ", "  ") + " ", new[1], stored[2][0], new[2]]
    for prefetch in (True, False):
        with ok_server() as stub:
            rows = _run_job(job_db, stub, sources, name=f"reuse-{prefetch}", prefetch=prefetch)
            assert _completions(stub) > 0
            prompts = [c["body"]["prompt"] for c in stub.calls]
        assert sum(len(p) if isinstance(p, list) else 1 for p in prompts) == 3  # one prompt per new sentence
        assert [r["origin"] for r in rows] == ["tm", "llm", "tm", "llm", "tm", "llm"]
        assert [r["output"] for r in rows[::2]] == [stored[0][1], stored[1][1], stored[2][1]]
        assert [r["origin_pair_id"] for r in rows[::2]] == [_pair_id(job_db, fr) for fr, _ in stored[:3]]
        assert all(r["prompt"] is None and r["selection_id"] is None for r in rows[::2])
        assert all(r["output"].startswith("ok ") and r["origin_pair_id"] is None for r in rows[1::2])
    with ok_server() as stub:
        rows = _run_job(job_db, stub, [fr for fr, _ in stored], name="all-stored")
        assert stub.calls == []  # every item reused: the model is never asked
    assert [r["output"] for r in rows] == [en for _, en in stored]


def test_reuse_off_sends_every_item_to_the_model(job_db):
    from tests.helpers.jobs import demo_pairs, ok_server

    sources = [fr for fr, _ in demo_pairs()[:3]]
    with ok_server() as stub:
        rows = _run_job(job_db, stub, sources, name="off", reuse="off")
        prompts = [c["body"]["prompt"] for c in stub.calls]
    assert sum(len(p) if isinstance(p, list) else 1 for p in prompts) == 3
    assert [r["origin"] for r in rows] == ["llm"] * 3


def test_newest_pair_wins_and_metadata_filter_limits_reuse(job_db, tmp_path):
    """Two stored translations of one source: the newer is reused; with --where, only a pair
    whose metadata matches is."""
    from tests.helpers.ingest import ingest_inprocess
    from tests.helpers.jobs import ok_server, write_lines

    fr = "Je vous invite à vous lever pour cette minute de silence."
    for name, en in (("old", "Please rise for this minute of silence."),
                     ("new", "I invite you to stand for this minute's silence.")):
        tsv = write_lines(tmp_path / f"{name}.tsv", ["fr\ten", f"{fr}\t{en}"])
        ingest_inprocess(job_db, [tsv], corpus=name)
    with psycopg.connect(job_db, autocommit=True) as conn:
        conn.execute("UPDATE pair SET meta = '{\"domain\": \"parliament\"}' "
                     "WHERE corpus_id = (SELECT id FROM corpus WHERE name = 'old')")
    with ok_server() as stub:
        newest = _run_job(job_db, stub, [fr], name="newest")
        legal = _run_job(job_db, stub, [fr], name="legal", where={"domain": "legal"})
        parliament = _run_job(job_db, stub, [fr], name="parl", where={"domain": "parliament"})
        old_only = _run_job(job_db, stub, [fr], name="old-corpus", corpora=["old"])
    assert newest[0]["output"] == "I invite you to stand for this minute's silence." and newest[0]["origin"] == "tm"
    assert legal[0]["origin"] == "llm"
    assert parliament[0]["output"] == "Please rise for this minute of silence." and parliament[0]["origin"] == "tm"
    assert old_only[0]["output"] == parliament[0]["output"]


def test_cat_segments_with_inline_codes_go_to_the_model_and_reused_ones_are_qa_checked(job_db, tmp_path):
    """An XLIFF job reuses a segment without inline codes (QA-checked like a model answer:
    markup in the stored target is flagged); a segment with codes goes to the model even
    though its plain text is stored, since a stored translation has no placeholders."""
    from pathlib import Path

    from scoi.jobs.documents import export_document, submit_document
    from scoi.jobs.spec import JobSpec
    from scoi.jobs.worker import Worker, WorkerOptions
    from tests.helpers.ingest import ingest_inprocess
    from tests.helpers.jobs import items, ok_server, write_lines

    tsv = write_lines(tmp_path / "tm.tsv", ["fr\ten", "Bonjour , vous avez trois messages.\tHello, you have three messages.",
                                            "Le chien mange.\tThe dog <b>eats</b>."])
    ingest_inprocess(job_db, [tsv], corpus="ui")
    xlf = Path(__file__).resolve().parents[1] / "data" / "cat" / "app.fr-en.xlf"
    with ok_server() as stub, psycopg.connect(job_db, autocommit=True) as conn:
        job_id, n = submit_document(conn, JobSpec("fr", "en", model="openai:stub", method="zero", k=0, name="cat",
                                                  backend_options={"max_retries": 0, "base_url": stub.url}), xlf)
        with Worker(job_db, WorkerOptions(burst=True, job_id=job_id)) as w:
            assert w.run().reused == 2
        prompts = [c["body"]["prompt"] for c in stub.calls if c["path"].endswith("/completions")]
        got = {r["source_key"]: (r["origin"], r["origin_pair_id"] is not None, r["output"], r["qa"])
               for r in items(job_db, job_id)}
        data, written = export_document(conn, job_id, "xliff")
    assert n == 3 and len(prompts) == 1 and "Bonjour <1/>, vous avez <2>trois messages</2>." in str(prompts[0])
    assert got["f1/greeting/1"][:2] == ("llm", False) and got["f1/greeting/1"][2].startswith("ok ")
    assert got["f1/greeting/2"] == ("tm", True, "The cat is sleeping.", [])
    assert got["f1/plain/1"][:3] == ("tm", True, "The dog <b>eats</b>.") and "invented <b>" in got["f1/plain/1"][3]
    assert written == 3 and b"The cat is sleeping." in data


# ------------------------------------------------------------------ the API
def test_api_translate_reuses_an_exact_match_and_takes_the_filter_as_data(job_db):
    import pytest

    pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")
    from fastapi.testclient import TestClient

    from scoi.jobs.worker import Worker, WorkerOptions
    from scoi.service.app import create_app
    from scoi.service.config import ModelConfig, ServeConfig
    from tests.helpers.jobs import demo_pairs, ok_server

    fr, en = demo_pairs()[5]
    with psycopg.connect(job_db, autocommit=True) as conn:
        conn.execute("UPDATE pair SET meta = '{\"domain\": \"legal\"}' WHERE id = %s", (_pair_id(job_db, fr),))
    with ok_server() as fake, TestClient(create_app(ServeConfig(url=job_db, models={"stub": ModelConfig(
            "stub", "openai:stub", {"base_url": fake.url, "max_retries": 0})})),
            base_url="http://127.0.0.1:8765") as api:  # a server without a token answers loopback Hosts only
        body = {"text": f" {fr} ", "src": "fr", "tgt": "en", "model": "stub", "k": 2}
        reused = api.post("/api/translate", json=body).json()
        assert fake.calls == []
        assert (reused["output"], reused["origin"], reused["origin_pair_id"]) == (en, "tm", _pair_id(job_db, fr))
        assert reused["prompt"] is None and reused["selection"] is None
        assert api.post("/api/translate", json={**body, "where": {"domain": "legal"}}).json()["origin"] == "tm"
        news = api.post("/api/translate", json={**body, "where": {"domain": "news"}}).json()
        assert news["origin"] == "llm" and len(fake.calls) == 1
        # the filter applies to the selection too: no pair is about news, so no example
        assert news["selection"]["candidates"] == [] and news["selection"]["selected"] == []
        off = api.post("/api/translate", json={**body, "reuse": "off"}).json()
        assert off["origin"] == "llm" and off["output"].startswith("ok ") and len(fake.calls) == 2
        legal = api.post("/api/select", json={"text": fr, "src": "fr", "tgt": "en", "where": {"domain": "legal"}})
        assert [p["pair_id"] for p in legal.json()["selected"]] == [_pair_id(job_db, fr)]
        bad = api.post("/api/translate", json={**body, "where": {"domain; DROP TABLE pair": "x"}})
        assert bad.status_code == 400 and "bad key" in bad.json()["error"]
        assert api.post("/api/translate", json={**body, "where": {"domain": 3}}).status_code in (400, 422)
        assert api.post("/api/translate", json={**body, "reuse": "fuzzy"}).status_code == 400

        # a job submitted through the API reuses too, and its page shows each item's origin
        job = {"sentences": [fr, "Une phrase qui n'est pas en mémoire."], "src": "fr", "tgt": "en", "model": "stub",
               "k": 0, "method": "zero"}
        assert api.post("/api/jobs", json={**job, "where": {"bad key": "x"}}).status_code == 400
        created = api.post("/api/jobs", json={**job, "where": {"domain": "legal"}})
        assert created.status_code == 201, created.text
        with Worker(job_db, WorkerOptions(burst=True, job_id=created.json()["job_id"])) as w:
            assert w.run().reused == 1
        page = api.get(f"/api/jobs/{created.json()['job_id']}").json()
        assert [(i["origin"], i["origin_pair_id"]) for i in page["items"]] == [("tm", _pair_id(job_db, fr)),
                                                                               ("llm", None)]
        assert page["job"]["origins"] == {"llm": 1, "tm": 1} and len(fake.calls) == 3


def test_lookup_reads_the_indexes_not_every_sentence(job_db):
    """The exact-match query can use text_sha's unique index and the partial index of the
    non-normalised sentences (migration 0031): its expressions and predicate match theirs,
    so a 10M-sentence memory is probed, not scanned. Sequential scans off: a plan that
    still scans sentence means the query cannot use them."""
    from scoi.db.queries import load

    with psycopg.connect(job_db) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + load("reuse")["exact_matches"], {
            "shas": [exact_sha("Je m'appelle Marie.")], "lang": "fr", "tgt": "en", "corpora": None,
            "meta": None}))
    assert "sentence_lang_text_sha_key" in plan and "sentence_exact_idx" in plan, plan
    assert "Seq Scan on sentence" not in plan, plan
