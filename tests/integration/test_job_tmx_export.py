"""``scoi job export --format tmx``: a job's translations become a memory that ``scoi
ingest`` takes back, each pair carrying the job, model, method, origin and QA flags as
metadata (fake OpenAI-compatible server, real worker and database, CLI in this process)."""

from __future__ import annotations

from pathlib import Path

import psycopg
from lxml import etree

from scoi.jobs.create import submit
from scoi.jobs.documents import submit_document
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import connect
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.cli import last_json, scoi_cli
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.jobs import demo_test_pairs, items, ok_server, stub_model_args, submit_lines

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
CAT = Path(__file__).resolve().parents[1] / "data" / "cat"


def test_job_translations_exported_as_tmx_are_ingested_with_their_props(job_db, tmp_path):
    sources = [fr for fr, _ in demo_test_pairs()[:4]] + [""]  # a blank line is passed through: not a pair
    with ok_server() as server:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", *stub_model_args(server.url),
                              name="week-12")
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
    assert summary["done"] == 4
    with psycopg.connect(job_db) as conn:  # what the TM lookup and the CAT QA would have recorded
        conn.execute("UPDATE job_item SET origin = 'tm' WHERE job_id = %s AND idx = 0", (job_id,))
        conn.execute("UPDATE job_item SET qa = ARRAY['placeholder {1} missing'] WHERE job_id = %s AND idx = 1",
                     (job_id,))
    done = {r["source"]: r for r in items(job_db, job_id) if r["source"]}

    out = tmp_path / "week-12.tmx"
    summary = last_json(scoi_cli(["job", "export", "week-12", "--format", "tmx", "-o", str(out), "--json"], job_db))
    assert summary["rows"] == 4
    root = etree.parse(str(out)).getroot()
    assert root.find("header").get("srclang") == "fr"
    assert [[tuv.get(XML_LANG) for tuv in tu.findall("tuv")] for tu in root.iter("tu")] == [["fr", "en"]] * 4
    assert all(tu.get("creationdate") for tu in root.iter("tu"))

    ingested = last_json(scoi_cli(["ingest", str(out), "--src", "fr", "--tgt", "en", "--corpus", "reviewed",
                                   "--workers", "0", "--json"], job_db))
    assert ingested["inserted"] == 4
    with psycopg.connect(job_db) as conn:
        stored = {src: (tgt, meta) for src, tgt, meta in conn.execute(
            "SELECT t.src, t.tgt, p.meta FROM pair_text t JOIN pair p ON p.id = t.pair_id WHERE t.corpus = 'reviewed'")}
    assert set(stored) == set(done)
    for source, row in done.items():
        tgt, meta = stored[source]
        assert tgt == row["output"].strip()
        assert {k: meta.get(k) for k in ("scoi:job", "scoi:model", "scoi:method")} == {
            "scoi:job": "week-12", "scoi:model": "openai:stub", "scoi:method": "zero"}
        assert meta.get("scoi:origin") == row["origin"]
        assert meta.get("scoi:qa") == row["qa"]
    assert stored[sources[0]][1]["scoi:origin"] == "tm"
    assert stored[sources[1]][1]["scoi:qa"] == ["placeholder {1} missing"]


def test_job_tmx_export_to_stdout_holds_the_same_units(job_db, tmp_path):
    with ok_server() as server:
        submit_lines(job_db, tmp_path / "in.fr", [demo_test_pairs()[0][0]], "openai:stub", *stub_model_args(server.url),
                     name="one")
        last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
    proc = scoi_cli(["job", "export", "one", "--format", "tmx", "-o", "-"], job_db)
    assert proc.returncode == 0
    root = etree.fromstring(proc.stdout.encode("utf-8"))
    assert [tu.findtext("tuv/seg") for tu in root.iter("tu")] == [demo_test_pairs()[0][0]]


def echo_sentence(prompt: str) -> str:
    """Answer with the prompt's sentence as it is, placeholders included (a model that keeps codes)."""
    return ' "' + prompt.rsplit('French Sentence: "', 1)[1].rsplit('"', 1)[0] + '"\n'


def test_a_cat_file_job_exports_plain_text_units_without_placeholders(job_db, tmp_path):
    spec = dict(model="openai:stub", method="zero", k=0)
    with FakeOpenAI(answer=echo_sentence) as fake, connect(job_db) as conn:
        options = {"base_url": fake.url, "max_retries": 0}
        submit_document(conn, JobSpec("fr", "en", name="app", backend_options=options, **spec),
                        CAT / "app.fr-en.xlf")
        submit(conn, JobSpec("fr", "en", name="plain", backend_options=options, **spec), ["Le chat <1/> dort."])
        with Worker(job_db, WorkerOptions(burst=True, batch_size=8)) as w:
            w.run()
    units = {}
    for job in ("app", "plain"):
        proc = scoi_cli(["job", "export", job, "--format", "tmx"], job_db)
        assert proc.returncode == 0, proc.stderr
        units[job] = [(tu.findtext("tuv[1]/seg"), tu.findtext("tuv[2]/seg"))
                      for tu in etree.fromstring(proc.stdout.encode("utf-8")).iter("tu")]
    # the CAT item's answer "Bonjour <1/>, vous avez <2>trois messages</2>." loses its
    # placeholders as its source did; a plain job's text is kept as it is
    assert ("Bonjour , vous avez trois messages.", "Bonjour , vous avez trois messages.") in units["app"]
    assert all("<" not in tgt for _, tgt in units["app"])
    assert units["plain"] == [("Le chat <1/> dort.", "Le chat <1/> dort.")]
