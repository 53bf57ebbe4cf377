"""Jobs over CAT files in the database: the file is stored with its job, items keep the masked
source for the prompt and the plain text for selection, the worker checks each answer's
placeholders (job_item.qa) and leaves plain-text items unchecked, and the API's job view
shows the QA state. Real PostgreSQL, a real worker, the fake OpenAI server."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import polib
import pytest

from scoi.jobs import schedules as S
from scoi.jobs.create import submit
from scoi.jobs.documents import export_document, submit_document
from scoi.jobs.destinations import Destination
from scoi.jobs.sources import Source
from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.store import connect, status
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.jobs import items

DATA = Path(__file__).resolve().parents[1] / "data" / "cat"


def drop_codes_of_the_first(prompt: str) -> str:
    """Echo the sentence; drop every placeholder of a sentence that has <1/> (a model that
    loses codes)."""
    source = prompt.rsplit('French Sentence: "', 1)[1].rsplit('"', 1)[0]
    if "<1/>" in source:
        source = source.replace("<1/>", "").replace("<2>", "").replace("</2>", "")
    return f' "{source}"\n'


def _spec(url: str, **kw) -> JobSpec:
    """A zero-shot job whose every item goes to the model (``reuse`` off: the stored demo
    pairs include some of these files' sentences)."""
    return JobSpec("fr", "en", model="openai:stub", method="zero", k=0, reuse="off",
                   backend_options={"base_url": url, "max_retries": 0}, **kw)


def _work(url: str, job_id: int | None = None) -> None:
    """A burst worker (bound to ``job_id``: it runs no schedules, the tests' runs are the
    injected-clock ones)."""
    with Worker(url, WorkerOptions(burst=True, batch_size=8, job_id=job_id)) as w:
        w.run()


def test_worker_flags_broken_codes_and_leaves_plain_items_unchecked(job_db):
    with FakeOpenAI(answer=drop_codes_of_the_first) as fake, connect(job_db) as conn:
        doc_id, n = submit_document(conn, _spec(fake.url, name="app"), DATA / "app.fr-en.xlf")
        plain_id = submit(conn, _spec(fake.url, name="plain"), ["Le chat <1/> dort."])
        _work(job_db)
        got = {i["source_key"]: (i["source"], i["masked"], i["qa"]) for i in items(job_db, doc_id)}
        assert n == 3 and got == {
            "f1/greeting/1": ("Bonjour , vous avez trois messages.", "Bonjour <1/>, vous avez <2>trois messages</2>.",
                              ["missing <1/>", "missing <2>"]),
            "f1/greeting/2": ("Le chat dort.", "Le chat dort.", []),
            "f1/plain/1": ("Le chien mange.", "Le chien mange.", []),
        }
        plain = items(job_db, plain_id)[0]
        assert plain["masked"] is None and plain["qa"] is None and plain["output"] == "Le chat  dort."
        st = status(conn, doc_id)
        assert st["qa"]["flagged"] == 1 and st["qa"]["items"][0]["source_key"] == "f1/greeting/1"
        assert status(conn, plain_id)["qa"] == {"flagged": 0, "items": []}
        data, written = export_document(conn, doc_id, "xliff")
        assert written == 3 and b'subState="scoi:qa"' in data
        with pytest.raises(JobError, match="not submitted from an XLIFF or PO file"):
            export_document(conn, plain_id, "xliff")


def test_api_job_view_shows_qa_and_keys(job_db):
    pytest.importorskip("fastapi", reason="scoi[serve] is not installed")
    from fastapi.testclient import TestClient

    from scoi.service.app import create_app
    from scoi.service.config import Limits, ServeConfig

    with FakeOpenAI(answer=drop_codes_of_the_first) as fake, connect(job_db) as conn:
        job_id, _ = submit_document(conn, _spec(fake.url, name="app"), DATA / "app.fr-en.xlf")
        _work(job_db)
    local = "http://127.0.0.1:8765"  # a server without a token answers to loopback Hosts only
    with TestClient(create_app(ServeConfig(url=job_db, models={}, limits=Limits())), base_url=local) as api:
        got = api.get(f"/api/jobs/{job_id}").json()
    assert got["job"]["qa"]["flagged"] == 1
    assert [(i["key"], i["qa"]) for i in got["items"]] == [
        ("f1/greeting/1", ["missing <1/>", "missing <2>"]), ("f1/greeting/2", []), ("f1/plain/1", [])]


def test_a_schedule_reads_a_po_file_and_writes_it_back_with_new_entries_only(job_db, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOI_DEST_DIR", str(tmp_path))  # the submitter's check and the worker's
    monkeypatch.setenv("SCOI_SOURCE_DIR", str(tmp_path))
    src, out = tmp_path / "messages.po", tmp_path / "messages.en.po"
    src.write_bytes((DATA / "messages.po").read_bytes())
    with FakeOpenAI(answer=drop_codes_of_the_first) as fake, connect(job_db) as conn:
        added = S.add_schedule(conn, "po", "15 2 * * *", _spec(fake.url), Source("file", path=str(src)),
                               Destination("file", path=str(out), format="po"), job_db)
        job_id = added["job_id"]
        assert added["source_rows"] == 5
        conn.execute("UPDATE schedule SET created_at = %s WHERE name = 'po'",
                     (datetime(2026, 11, 20, tzinfo=timezone.utc),))
        [run] = S.run_due(conn, "w", datetime(2026, 11, 21, 3, tzinfo=timezone.utc), job_db)
        assert (run.added, run.skipped, run.error) == (5, 0, None)
        _work(job_db, job_id)
        first = polib.pofile(str(out))
        assert first.find("Le chat dort.").msgstr == "Le chat dort."
        brace = first.find("Ouvrir {filename} dans {0} secondes.")  # the model dropped <1/>
        assert brace.msgstr == "Ouvrir  dans {0} secondes." and brace.tcomment == "scoi QA: missing <1/>"
        # The TMS adds a message: the next run adds it alone, and the file is written again.
        src.write_text(src.read_text(encoding="utf-8") + '\nmsgid "Au revoir."\nmsgstr ""\n', encoding="utf-8")
        [run] = S.run_due(conn, "w", datetime(2026, 11, 22, 3, tzinfo=timezone.utc), job_db)
        assert (run.added, run.skipped, run.error) == (1, 5, None)
        _work(job_db, job_id)
    second = polib.pofile(str(out))
    assert second.find("Au revoir.").msgstr == "Au revoir." and "fuzzy" in second.find("Au revoir.").flags
    assert second.find("Le chat dort.").msgstr == "Le chat dort."
    assert len(items(job_db, job_id)) == 6


def test_a_schedule_refuses_a_cat_destination_for_another_source(job_db, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOI_DEST_DIR", str(tmp_path))
    monkeypatch.setenv("SCOI_SOURCE_DIR", str(tmp_path))
    lines = tmp_path / "in.fr"
    lines.write_text("Bonjour.\n", encoding="utf-8")
    with connect(job_db) as conn, pytest.raises(JobError, match="--dest-format xliff writes back the CAT file"):
        S.add_schedule(conn, "x", "15 2 * * *", _spec("http://127.0.0.1:9"), Source("file", path=str(lines)),
                       Destination("file", path=str(tmp_path / "out.xlf"), format="xliff"), job_db)
