"""A new user's en->de memory with no German parser installed, through the CLI: ingest
stores German without trees and says how to add them, ``scoi corpora`` shows it, selection
with German as the source runs the tree-free methods and refuses the others in one line;
``--require-parser`` refuses the ingest."""

from __future__ import annotations

from tests.helpers.cli import cli, last_json, scoi_cli
from tests.helpers.parsers import german_parser  # noqa: F401 - a fixture
from tests.integration.test_languages import EN_DE, _en_de


def test_en_de_without_german_parser(tmp_path, db_url):
    files = _en_de(tmp_path)
    strict = scoi_cli(["ingest", *files, "--src", "en", "--tgt", "de", "--workers", "0", "--require-parser"], db_url)
    assert strict.returncode != 0 and "no dependency parser installed for language 'de'" in strict.stderr
    assert "no corpora yet" in cli(["corpora"], db_url).stdout

    done = scoi_cli(["ingest", *files, "--src", "en", "--tgt", "de", "--workers", "0"], db_url)
    assert done.returncode == 0, done.stderr
    assert f"{len(EN_DE)} pairs inserted" in done.stdout
    assert "de: no parser installed, stored without trees" in done.stdout and "scoi reanalyze --lang de" in done.stdout
    table = cli(["corpora"], db_url).stdout
    assert "train\ten-de" in table
    assert f"de\t{len(EN_DE)}\t0\tnone (add trees: scoi reanalyze --lang de)" in table
    assert f"en\t{len(EN_DE)}\t{len(EN_DE)}\ten_core_web_sm" in table

    ok = scoi_cli(["select", "A dog catches a ball.", "--src", "en", "--tgt", "de", "--method", "scoi", "--json"],
                  db_url)
    assert ok.returncode == 0 and "Ein Hund fängt einen Ball im Wasser." in ok.stdout
    ok = scoi_cli(["select", "Ein Hund fängt einen Ball.", "--src", "de", "--tgt", "en", "--method", "bm25", "--json"],
                  db_url)
    assert ok.returncode == 0 and "A dog catches a ball in the water." in ok.stdout
    refused = scoi_cli(["select", "Ein Hund fängt einen Ball.", "--src", "de", "--tgt", "en", "--method", "scoi"],
                       db_url)
    assert refused.returncode == 1
    line, = refused.stderr.strip().splitlines()
    assert "method scoi needs dependency trees of the de sentences" in line and "scoi reanalyze --lang de" in line


def test_parser_directory_on_ingest_select_and_job(tmp_path, db_url, german_parser):
    files = _en_de(tmp_path)
    done = scoi_cli(["ingest", *files, "--src", "en", "--tgt", "de", "--workers", "0",
                     "--parser", f"de={german_parser}"], db_url)
    assert done.returncode == 0, done.stderr
    table = cli(["corpora", "--languages"], db_url).stdout
    assert f"de\t{len(EN_DE)}\t{len(EN_DE)}\t{german_parser}==0.0.1/spacy-tokens" in table
    out = scoi_cli(["select", "Ein Hund fängt einen Ball.", "--src", "de", "--tgt", "en", "--method", "scoi",
                    "--parser", f"de={german_parser}", "--json"], db_url)
    assert out.returncode == 0, out.stderr
    assert f"parser:{german_parser}==0.0.1/spacy-tokens" in out.stdout
    wrong = scoi_cli(["select", "Ein Hund.", "--src", "de", "--tgt", "en", "--parser", "de=/nowhere/pipeline"], db_url)
    assert wrong.returncode == 1 and f"--parser de=/nowhere/pipeline" in wrong.stderr
    src = tmp_path / "in.de"
    src.write_text("Ein Hund fängt einen Ball.\n", encoding="utf-8")
    job = scoi_cli(["job", "submit", "-i", str(src), "--src", "de", "--tgt", "en", "--model", "openai:none",
                    "--parser", f"de={german_parser}", "--json"], db_url)
    assert job.returncode == 0, job.stderr
    assert f"|parsers:de={german_parser}|" in job.stdout


def test_jobs_on_a_source_without_trees(tmp_path, db_url):
    """A job's method is checked against the source's trees when it is submitted; a
    tree-free method's job gets its examples (the worker's selector runs without trees)."""
    import psycopg

    from scoi.jobs.store import get_job
    from scoi.jobs.worker import Worker

    assert scoi_cli(["ingest", *_en_de(tmp_path), "--src", "en", "--tgt", "de", "--workers", "0"],
                    db_url).returncode == 0
    src = tmp_path / "in.de"
    src.write_text("Ein Hund fängt einen Ball.\n", encoding="utf-8")
    refused = scoi_cli(["job", "submit", "-i", str(src), "--src", "de", "--tgt", "en", "--model", "openai:none",
                        "--method", "scoi"], db_url)
    assert refused.returncode == 1
    line, = refused.stderr.strip().splitlines()
    assert "method scoi needs dependency trees of the de sentences" in line and "scoi reanalyze --lang de" in line
    ok = scoi_cli(["job", "submit", "-i", str(src), "--src", "de", "--tgt", "en", "--model", "openai:none",
                   "--method", "bm25", "--json"], db_url)
    assert ok.returncode == 0, ok.stderr
    job_id = last_json(ok)["job_id"]
    with psycopg.connect(db_url) as conn:
        job = get_job(conn, job_id)
    with Worker(db_url) as worker:  # the selector the worker builds for the job
        sel, _ = worker.caches.selector(job)
        picked = sel.select("Ein Hund fängt einen Ball.", k=job.k, method=job.method).selected
    assert picked[0].tgt == "A dog catches a ball in the water."
