"""``scoi job submit --source-sql ... --dest-table ...``: a one-off job over table rows,
upserted into a table as items finish; bad sources change nothing."""

from __future__ import annotations

import psycopg

from tests.helpers.cli import last_json, scoi_cli
from tests.helpers.jobs import ok_server, stub_model_args

DOCS = [(1, "Un chien court dans le parc."), (2, "Deux femmes boivent du café."), (3, "Un homme lit un journal.")]
QUERY = "SELECT d.id, d.body FROM documents d LEFT JOIN documents_en e USING (id) WHERE e.id IS NULL"


def _tables(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id int PRIMARY KEY, body text)")
        conn.execute("CREATE TABLE documents_en (id int PRIMARY KEY, body_en text)")
        conn.execute("GRANT SELECT ON documents, documents_en TO scoi_reader")  # source queries run as it
        for doc in DOCS:
            conn.execute("INSERT INTO documents VALUES (%s, %s)", doc)


def _submit(url: str, stub_url: str, *extra: str):
    return scoi_cli(["job", "submit", "--src", "fr", "--tgt", "en", "--model", "openai:stub",
                     *stub_model_args(stub_url), *extra], url)


def test_a_job_over_table_rows_fills_the_destination_table(job_db):
    _tables(job_db)
    with ok_server() as stub:
        out = last_json(_submit(job_db, stub.url, "--source-sql", QUERY, "--dest-table", "documents_en",
                                "--dest-key", "id", "--dest-column", "body_en", "--name", "docs", "--json"))
        assert out["items"] == len(DOCS)
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
        assert summary["done"] == len(DOCS)
    with psycopg.connect(job_db) as conn:
        rows = conn.execute("SELECT id, body_en FROM documents_en ORDER BY id").fetchall()
        keys = conn.execute("SELECT source_key FROM job_item ORDER BY idx").fetchall()
    assert [r[0] for r in rows] == [1, 2, 3] and all(text.startswith("ok ") for _, text in rows)
    assert [k for (k,) in keys] == ["1", "2", "3"]


def test_bad_table_sources_are_refused_and_store_nothing(job_db, tmp_path):
    _tables(job_db)
    three_columns = _submit(job_db, "http://127.0.0.1:9/v1", "--source-sql", "SELECT id, body, 1 FROM documents")
    assert three_columns.returncode != 0 and "column" in three_columns.stderr
    missing_table = _submit(job_db, "http://127.0.0.1:9/v1", "--source-sql", "SELECT id, body FROM nowhere")
    assert missing_table.returncode != 0 and "nowhere" in missing_table.stderr
    both = _submit(job_db, "http://127.0.0.1:9/v1", "--source-sql", QUERY, "--input", str(tmp_path / "x.fr"))
    assert both.returncode != 0 and "exactly one source" in both.stderr
    dest_without_sql = _submit(job_db, "http://127.0.0.1:9/v1", "--input", str(tmp_path / "x.fr"),
                               "--dest-table", "documents_en")
    assert dest_without_sql.returncode != 0 and "go with --source-sql" in dest_without_sql.stderr
    no_key = _submit(job_db, "http://127.0.0.1:9/v1", "--source-sql", QUERY, "--dest-table", "documents",
                     "--dest-key", "body", "--dest-column", "body")
    assert no_key.returncode != 0
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM documents_en").fetchone()[0] == 0
