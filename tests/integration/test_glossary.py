"""Glossaries in PostgreSQL: adding TBX and CSV files (all or nothing, idempotent), matching
sentences on lemmas with the real French pipeline, the glossary block in the prompts a job
sends to a (fake, real HTTP) OpenAI server, the stored term check and its summary in
``scoi eval``."""

from __future__ import annotations

from pathlib import Path

import psycopg

from scoi.core.prompt import Example, render_prompt
from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.worker import Worker, WorkerOptions
from scoi.selection.selector import Selector
from tests.helpers.cli import last_json, refused, scoi_cli
from tests.helpers.fake_openai import FakeOpenAI, ok_length
from tests.helpers.jobs import items, submit_lines

DATA = Path(__file__).resolve().parents[1] / "data" / "glossary"
TBX = DATA / "board.fr-en.tbx"
CSV = DATA / "board.fr-en.csv"


def add(url: str, file: Path, *extra: str) -> dict:
    return last_json(scoi_cli(["glossary", "add", str(file), "--src", "fr", "--tgt", "en", "--json", *extra], url))


def test_adding_a_tbx_twice_stores_its_entries_once(db_url: str) -> None:
    assert add(db_url, TBX) == {"glossary": "board", "src": "fr", "tgt": "en", "read": 4, "added": 4, "present": 0}
    assert add(db_url, TBX) == {"glossary": "board", "src": "fr", "tgt": "en", "read": 4, "added": 0, "present": 4}
    assert add(db_url, CSV, "--name", "board")["added"] == 3
    listed = scoi_cli(["glossary", "list", "--json"], db_url)
    assert listed.returncode == 0 and '"entries": 7' in listed.stdout and '"fr-en"' in listed.stdout
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT src_term, tgt_term, note FROM glossary_terms WHERE glossary = 'board' "
                            "ORDER BY src_term").fetchall()
        keys = conn.execute("SELECT src_key, src_lemmas, meta->>'entry' FROM glossary_entry "
                            "WHERE src_term = 'ONU'").fetchone()
    assert ("ONU", "UN", "Toujours en majuscules.") in rows and len(rows) == 7
    assert keys == (["ONU"], None, "c3")  # an acronym keeps its case and is not lemmatised


def test_a_bad_file_stores_nothing_and_names_its_line(db_url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("src,tgt\nconseil,board\nchambre\n", encoding="utf-8")
    refused(scoi_cli(["glossary", "add", str(bad), "--src", "fr", "--tgt", "en"], db_url), "bad.csv:3",
            "expected 2")
    with psycopg.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM glossary").fetchone() == (0,)
    refused(scoi_cli(["glossary", "match", "x", "--src", "fr", "--tgt", "en", "--glossary", "bad"], db_url),
            "no glossary named 'bad'")


def test_match_finds_inflected_multi_word_terms_longest_first(db_url: str) -> None:
    add(db_url, TBX)
    out = last_json(scoi_cli(["glossary", "match", "Les conseils d'administration de l'ONU et le conseil.",
                              "--src", "fr", "--tgt", "en", "--glossary", "board", "--json"], db_url))
    assert out["glossary"] == [
        {"src": "conseil d'administration", "tgt": "board of directors", "note": "Gouvernance"},
        {"src": "ONU", "tgt": "UN", "note": "Toujours en majuscules."},
        {"src": "conseil", "tgt": "council", "note": None}]
    lower = last_json(scoi_cli(["glossary", "match", "l'onu", "--src", "fr", "--tgt", "en", "--glossary", "board",
                                "--json"], db_url))
    assert lower["glossary"] == []  # the acronym only as written
    assert scoi_cli(["glossary", "rm", "board"], db_url).returncode == 0
    refused(scoi_cli(["glossary", "rm", "board"], db_url), "no glossary named 'board'")


def test_select_and_prompt_show_the_terms_found(job_db: str) -> None:
    add(job_db, TBX)
    sel = last_json(scoi_cli(["select", "Le conseil d'administration se réunit.", "--src", "fr", "--tgt", "en",
                              "--glossary", "board", "--json"], job_db))
    assert sel["glossary"] == [{"src": "conseil d'administration", "tgt": "board of directors",
                                "note": "Gouvernance"}]
    prompt = scoi_cli(["prompt", "Le conseil d'administration se réunit.", "--src", "fr", "--tgt", "en",
                       "--glossary", "board"], job_db)
    assert prompt.stdout.startswith("Glossary:\n- conseil d'administration \u2192 board of directors (Gouvernance)"
                                    "\n\nFrench Sentence: ")
    plain = scoi_cli(["prompt", "Le conseil d'administration se réunit.", "--src", "fr", "--tgt", "en"], job_db)
    assert plain.stdout.startswith("French Sentence: ")


def answer(prompt: str) -> str:
    """The council's line translated with the glossary's term, the other without."""
    return " \"The board of directors met.\"\n" if "administration" in prompt.splitlines()[-2] else \
        " \"The UN council met.\"\n"


def test_job_prompts_hold_the_glossary_and_outputs_are_checked(job_db: str, tmp_path: Path) -> None:
    add(job_db, TBX)
    sources = ["Le conseil d'administration s'est réuni.", "Le conseil de l'ONU s'est réuni.", "Il pleut."]
    with FakeOpenAI(answer=answer) as fake:
        job = submit_lines(job_db, tmp_path / "in.txt", sources, "openai:stub", "--method", "zero", "-k", "0",
                           "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={fake.url}",
                           "--glossary", "board", refs=["The board met.", "The UN council met.", "It rains."])
        run = scoi_cli(["worker", "--burst", "--job", str(job)], job_db)
        assert run.returncode == 0, run.stderr
        prompts = sorted(c["body"]["prompt"] for c in fake.calls)
    assert "Glossary:\n- conseil d'administration \u2192 board of directors (Gouvernance)\n\n" in prompts[1]
    assert prompts[2].startswith("Glossary:\n- conseil \u2192 council\n- ONU \u2192 UN (Toujours en majuscules.)\n\n")
    assert prompts[0] == 'French Sentence: "Il pleut."\nEnglish Sentence: '  # no term: the plain prompt
    got = items(job_db, job)
    assert [i["term_check"] for i in got] == [
        [{"src": "conseil d'administration", "tgt": "board of directors", "found": True}],
        [{"src": "conseil", "tgt": "council", "found": True}, {"src": "ONU", "tgt": "UN", "found": True}],
        []]
    ev = last_json(scoi_cli(["eval", str(job), "--json"], job_db))
    assert ev["terms"] == {"glossary": "board", "found": 3, "required": 3, "accuracy": 100.0}
    text = scoi_cli(["eval", str(job)], job_db).stdout
    assert "terms  100.00%  3 of 3 required target terms found (glossary board)" in text
    compared = last_json(scoi_cli(["eval", str(job), "--compare", "--json"], job_db))
    assert compared["rows"][0]["terms"] == ev["terms"]
    table = scoi_cli(["eval", str(job), "--compare"], job_db)
    header, *rows = table.stdout.splitlines()  # piped: TSV, one line per job and metric
    assert table.returncode == 0 and header.split("\t")[-1] == "terms_accuracy", table.stdout
    assert rows and all(r.split("\t")[-1] == "100.0" for r in rows), table.stdout


def test_a_reused_translation_is_checked_for_the_glossary_terms(job_db: str, tmp_path: Path) -> None:
    """An exact match's stored translation (no model call) gets the term check the model's
    outputs get: here it lacks the required "UN"."""
    from tests.helpers.ingest import ingest_inprocess
    from tests.helpers.jobs import write_lines

    add(job_db, TBX)
    fr = "Le conseil de l'ONU s'est réuni."
    ingest_inprocess(job_db, [write_lines(tmp_path / "tm.tsv", ["fr\ten", f"{fr}\tThe United Nations council met."])],
                     corpus="tm")
    with FakeOpenAI(answer=answer) as fake:
        job = submit_lines(job_db, tmp_path / "in.txt", [fr], "openai:stub", "--method", "zero", "-k", "0",
                           "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={fake.url}",
                           "--glossary", "board", refs=["The UN council met."])
        run = scoi_cli(["worker", "--burst", "--job", str(job)], job_db)
        assert run.returncode == 0, run.stderr
        assert fake.calls == []
    [item] = items(job_db, job)
    assert (item["origin"], item["output"]) == ("tm", "The United Nations council met.")
    assert item["term_check"] == [{"src": "conseil", "tgt": "council", "found": True},
                                  {"src": "ONU", "tgt": "UN", "found": False}]
    ev = last_json(scoi_cli(["eval", str(job), "--json"], job_db))
    assert ev["terms"] == {"glossary": "board", "found": 1, "required": 2, "accuracy": 50.0}


def test_a_job_naming_a_missing_glossary_is_refused(job_db: str, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("Bonjour.\n", encoding="utf-8")
    proc = scoi_cli(["job", "submit", "--input", str(tmp_path / "in.txt"), "--src", "fr", "--tgt", "en",
                     "--model", "openai:stub", "--method", "zero", "-k", "0", "--glossary", "nope"], job_db)
    refused(proc, "--glossary", "no glossary named 'nope'")
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone() == (0,)


def test_a_glossary_for_another_pair_is_refused_by_jobs(job_db: str, tmp_path: Path) -> None:
    add(job_db, TBX)
    (tmp_path / "in.txt").write_text("Bonjour.\n", encoding="utf-8")
    proc = scoi_cli(["job", "submit", "--input", str(tmp_path / "in.txt"), "--src", "fr", "--tgt", "de",
                     "--model", "openai:stub", "--method", "zero", "-k", "0", "--glossary", "board"], job_db)
    refused(proc, "glossary 'board' has no fr -> de entries")


def test_the_api_returns_terms_and_the_job_view_sums_up_the_check(job_db: str) -> None:
    from fastapi.testclient import TestClient

    from scoi.service.app import create_app
    from scoi.service.config import ModelConfig, ServeConfig

    add(job_db, TBX)
    text = "Le conseil d'administration se réunit."
    with FakeOpenAI(answer=answer) as fake, TestClient(create_app(ServeConfig(url=job_db, models={
            "stub": ModelConfig("stub", "openai:stub", {"base_url": fake.url, "max_retries": 0})})),
                                           base_url="http://127.0.0.1:8765") as api:  # a loopback Host
        assert api.get("/api/config").json()["glossaries"] == ["board"]
        sel = api.post("/api/select", json={"text": text, "src": "fr", "tgt": "en", "glossary": "board"}).json()
        assert sel["glossary"] == [{"src": "conseil d'administration", "tgt": "board of directors",
                                    "note": "Gouvernance"}]
        assert "glossary" not in api.post("/api/select", json={"text": text, "src": "fr", "tgt": "en"}).json()
        prompt = api.post("/api/prompt", json={"text": text, "src": "fr", "tgt": "en", "glossary": "board"}).json()
        assert prompt["prompt"].startswith("Glossary:\n- conseil d'administration \u2192 board of directors")
        bad = api.post("/api/select", json={"text": text, "src": "fr", "tgt": "en", "glossary": "nope"})
        assert bad.status_code == 400 and "no glossary named 'nope'" in bad.json()["error"]
        r = api.post("/api/jobs", json={"sentences": [text, "Il pleut."], "src": "fr", "tgt": "en", "model": "stub",
                                        "k": 0, "method": "zero", "glossary": "board"})
        assert r.status_code == 201, r.text
        with Worker(job_db, WorkerOptions(burst=True, batch_size=2)) as w:
            w.run()
        got = api.get(f"/api/jobs/{r.json()['job_id']}").json()
    assert got["job"]["terms"] == {"glossary": "board", "found": 1, "required": 1, "accuracy": 100.0}


def test_match_uses_the_only_glossary_and_asks_for_a_name_when_there_are_several(db_url: str) -> None:
    refused(scoi_cli(["glossary", "match", "le conseil", "--src", "fr", "--tgt", "en"], db_url), "no glossary")
    add(db_url, TBX)
    out = last_json(scoi_cli(["glossary", "match", "le conseil", "--src", "fr", "--tgt", "en", "--json"], db_url))
    assert out["glossary"] == [{"src": "conseil", "tgt": "council", "note": None}]
    add(db_url, CSV, "--name", "commerce")
    refused(scoi_cli(["glossary", "match", "le conseil", "--src", "fr", "--tgt", "en"], db_url),
            "give --glossary NAME; the glossaries are: board, commerce")


def test_a_prompt_fitted_to_the_context_keeps_its_glossary_block(job_db: str) -> None:
    """Fitting drops last-ranked examples, never the terms: every attempt is rendered
    with the item's glossary block (context counted in words by the server's /tokenize)."""

    add(job_db, TBX)
    query = "Le conseil d'administration de l'ONU joue dans le parc."
    terms = [{"src": "conseil d'administration", "tgt": "board of directors", "note": "Gouvernance"},
             {"src": "ONU", "tgt": "UN", "note": "Toujours en majuscules."}]
    with Selector("fr", "en", url=job_db) as sel:
        ranked = [Example(p.src, p.tgt) for p in sel.select(query, k=4, method="scoi").selected]
    assert len(ranked) == 4
    new_tokens = 16
    fitted = render_prompt(query, ranked[:2], "fr", "en", glossary=terms)
    context = len(fitted.split()) + new_tokens  # room for the block and two examples

    with FakeOpenAI(answer=ok_length, tokenize=lambda text: len(text.split())) as server, \
            psycopg.connect(job_db, autocommit=True) as conn:
        job = submit(conn, JobSpec("fr", "en", model="openai:stub", method="scoi", k=4, max_new_tokens=new_tokens,
                                   glossary="board", backend_options={"base_url": server.url, "max_retries": 0,
                                                                      "context": context}), [query])
        with Worker(job_db, WorkerOptions(burst=True)) as w:
            assert w.run().done == 1
        sent = [c["body"]["prompt"] for c in server.calls if c["path"].endswith("/completions")]
    [row] = items(job_db, job)
    assert row["examples_used"] == 2 and sent == [row["prompt"]] == [fitted]
    assert fitted.startswith("Glossary:\n- conseil d'administration \u2192 board of directors")
