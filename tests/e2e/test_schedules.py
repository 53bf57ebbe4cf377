"""``scoi schedule ...`` and ``scoi worker`` end to end: a documents table, a schedule over
it, a worker that runs the due tick and fills the destination table; pause, resume, rm,
--json, and the errors a user sees. The model is the fake OpenAI-compatible server."""

from __future__ import annotations


import psycopg

from tests.helpers.cli import last_json, run_scoi, scoi_cli
from tests.helpers.database import scalar
from tests.helpers.jobs import ok_server, stub_model_args


def _tables(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id bigint PRIMARY KEY, body text)")
        conn.execute("CREATE TABLE documents_en (id bigint PRIMARY KEY, body_en text)")
        conn.execute("GRANT SELECT ON documents, documents_en TO scoi_reader")  # source queries run as it
        conn.execute("INSERT INTO documents VALUES (10, 'Le chat dort.'), (11, 'Il pleut.')")


def _add_args(stub_url: str, *extra: str) -> list[str]:
    return ["schedule", "add", "nightly", "--cron", "15 2 * * *", "--src", "fr", "--tgt", "en",
            "--model", "openai:stub", *stub_model_args(stub_url),
            "--source-sql", "SELECT id, body FROM documents WHERE body IS NOT NULL",
            "--dest-table", "documents_en", "--dest-key", "id", "--dest-column", "body_en", *extra]


def test_schedule_over_a_table_run_by_a_worker(db_url):
    _tables(db_url)
    with ok_server() as stub:
        added = last_json(scoi_cli([*_add_args(stub.url), "--json"], db_url))
        assert added["source_rows"] == 2 and added["reads"] == "At 02:15 every day"
        # The schedule was added a day ago: its latest tick is due (the only way to test a
        # real worker against the clock without waiting for 02:15).
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("UPDATE schedule SET created_at = now() - interval '1 day'")
        summary = last_json(run_scoi(["worker", "--burst", "--json"], db_url))
        assert summary["done"] == 2
        assert scalar(db_url, "SELECT string_agg(id || '=' || left(body_en, 3), ',' ORDER BY id) FROM documents_en") \
            == "10=ok ,11=ok "
        # A second burst: the tick ran already, nothing new.
        assert last_json(run_scoi(["worker", "--burst", "--json"], db_url))["claimed"] == 0
        [row] = last_json(scoi_cli(["schedule", "list", "--json"], db_url))
        assert (row["name"], row["last_added"], row["paused"]) == ("nightly", 2, False)
        # New rows, run by hand: only they are added.
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("INSERT INTO documents VALUES (12, 'Merci.')")
        run = last_json(scoi_cli(["schedule", "run", "nightly", "--json"], db_url))
        assert (run["added"], run["skipped"], run["manual"]) == (1, 2, True)
        assert last_json(run_scoi(["worker", "--burst", "--json"], db_url))["done"] == 1
        assert scalar(db_url, "SELECT count(*) FROM documents_en") == 3
    show = scoi_cli(["schedule", "show", "nightly"], db_url)
    assert show.returncode == 0
    assert "destination: documents_en.body_en by id" in show.stdout and "0 outputs waiting" in show.stdout
    assert "items: 3/3 done" in show.stdout and "(manual)" in show.stdout
    shown = last_json(scoi_cli(["schedule", "show", "nightly", "--json"], db_url))
    assert [r["added"] for r in shown["runs"]] == [1, 2]
    assert last_json(scoi_cli(["schedule", "pause", "nightly", "--json"], db_url))["paused"] is True
    assert "paused" in scoi_cli(["schedule", "list"], db_url).stdout
    assert last_json(scoi_cli(["schedule", "resume", "nightly", "--json"], db_url))["paused"] is False
    removed = last_json(scoi_cli(["schedule", "rm", "nightly", "--json"], db_url))
    assert removed["job_id"] == added["job_id"]
    assert "no schedules yet" in scoi_cli(["schedule", "list"], db_url).stdout
    # The job stays, with its outputs.
    assert last_json(scoi_cli(["job", "status", "nightly", "--json"], db_url))["done"] == 3


def test_schedule_errors_a_user_sees(db_url):
    _tables(db_url)
    with ok_server() as stub:
        cases = [
            (_add_args(stub.url)[:4] + ["every night"] + _add_args(stub.url)[5:], "bad cron expression"),
            ([*_add_args(stub.url), "--input", "x.txt"], "exactly one source"),
            ([a if a != "SELECT id, body FROM documents WHERE body IS NOT NULL" else "SELECT body FROM documents"
              for a in _add_args(stub.url)], "returns 1 columns (body); expected exactly two"),
            ([*_add_args(stub.url), "--source-url", "postgresql://me:pw@db/x"], "holds a password"),
            ([*_add_args(stub.url)[:-6], "--dest-table", "documents_en", "--dest-key", "body_en",
              "--dest-column", "body_en"], "--dest-key and --dest-column are both 'body_en'"),
        ]
        for args, message in cases:
            proc = scoi_cli(args, db_url)
            assert proc.returncode == 1, args
            assert message in " ".join(proc.stderr.split()), (args, proc.stderr)
    assert scalar(db_url, "SELECT count(*) FROM job") == 0
    for cmd in (["show", "nope"], ["pause", "nope"], ["rm", "nope"], ["run", "nope"]):
        proc = scoi_cli(["schedule", *cmd], db_url)
        assert proc.returncode == 1 and "no schedule 'nope'" in proc.stderr


def test_schedule_add_takes_the_job_options_submit_takes(db_url):
    """``--embedder`` and ``--rbm25-variant`` come from the job options shared with
    ``job submit``: accepted, checked, and stored with the schedule and its job."""
    from scoi.embedding.embeddings import register_embedder

    _tables(db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_embedder(conn, "tiny-embedder", 4)
    base = ["--cron", "15 2 * * *", "--src", "fr", "--tgt", "en", "--model", "openai:stub", "-k", "0",
            "--source-sql", "SELECT id, body FROM documents WHERE body IS NOT NULL"]
    cases = {"variant": ["--method", "rbm25", "--rbm25-variant", "ctq"],
             "embedded": ["--method", "fuzzy", "--embedder", "tiny-embedder"]}
    for name, options in cases.items():
        proc = scoi_cli(["schedule", "add", name, *base, *options, "--json"], db_url)
        assert proc.returncode == 0, proc.stderr
    with psycopg.connect(db_url) as conn:
        stored = {name: (spec_value, job_value) for name, spec_value, job_value in conn.execute(
            "SELECT s.name, coalesce(s.spec->>'rbm25_variant', s.spec->>'embedder'), "
            "coalesce(j.params->>'rbm25_variant', j.params->>'embedder') FROM schedule s JOIN job j ON j.id = s.job_id")}
    assert stored == {"variant": ("ctq", "ctq"), "embedded": ("tiny-embedder", "tiny-embedder")}
    # Checked as submit checks them: an unknown variant, an embedder never embedded with.
    for options, message in ((["--method", "rbm25", "--rbm25-variant", "nope"], "unknown R-BM25 variant 'nope'"),
                             (["--method", "fuzzy", "--embedder", "other-model"], "none is stored for other-model")):
        proc = scoi_cli(["schedule", "add", "refused", *base, *options], db_url)
        assert proc.returncode == 1 and message in " ".join(proc.stderr.split()), proc.stderr
    assert scalar(db_url, "SELECT count(*) FROM schedule") == 2

