"""The reliability run of 2026-11-24, cases 18-22, 26, 29, 30, 35-37, 40-44, through the
real CLI on a real database: secrets refused everywhere settings are stored (and never
echoed), backend specs and options checked at submit, names with control characters
refused and stored text printed escaped, numbers bounded, sandboxed templates, five-field
cron, SCOI_HOME checked before a server starts, unknown migration revisions. Each test
asserts that nothing was stored. The numbers in test names are the run's case numbers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from scoi.jobs.create import submit
from scoi.jobs.spec import JobError, JobSpec
from tests.helpers.cli import last_json, run_scoi, scoi_cli
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.jobs import items, stub_model_args, write_lines

SECRETS = ("SECRET", "SEKRIT", "hunter2", "sk-")
#: What a refused command must not have written, and where a secret could end up.
COUNTS = {"job": "SELECT count(*) FROM job", "item": "SELECT count(*) FROM job_item",
          "source": "SELECT count(*) FROM job_source", "destination": "SELECT count(*) FROM job_destination",
          "schedule": "SELECT count(*) FROM schedule", "experiment": "SELECT count(*) FROM experiment",
          "corpus": "SELECT count(*) FROM corpus", "ingest_run": "SELECT count(*) FROM ingest_run",
          "selection": "SELECT count(*) FROM selection"}
STORED_TEXT = ("SELECT coalesce(string_agg(params::text, ' '), '') FROM job",
               "SELECT coalesce(string_agg(coalesce(url, '') || coalesce(query, ''), ' '), '') FROM job_source",
               "SELECT coalesce(string_agg(spec::text, ' '), '') FROM schedule",
               "SELECT coalesce(string_agg(grid::text, ' '), '') FROM experiment")


def counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {name: conn.execute(q).fetchone()[0] for name, q in COUNTS.items()}


def stored_text(url: str) -> str:
    with psycopg.connect(url) as conn:
        return " ".join(conn.execute(q).fetchone()[0] for q in STORED_TEXT)


def one_line_error(proc, *, code: int = 1) -> str:
    """The error of a refused command: exit ``code``, one line on stderr, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def usage_error(proc) -> str:
    """Typer's refusal of an option value (exit 2), its box unwrapped into one line."""
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    return " ".join(proc.stderr.replace("│", " ").split())


def assert_nothing_stored(url: str, before: dict[str, int]) -> None:
    assert counts(url) == before
    text = stored_text(url)
    assert not any(s in text for s in SECRETS), text


@pytest.fixture()
def inputs(tmp_path: Path, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("SCOI_SOURCE_DIR", str(tmp_path))  # schedules read file sources only there
    return {"input": str(write_lines(tmp_path / "in.fr", ["Le chat dort.", "Deux chiens."])),
            "refs": str(write_lines(tmp_path / "in.en", ["The cat sleeps.", "Two dogs."]))}


def submit_args(inputs: dict[str, str], *extra: str) -> list[str]:
    return ["job", "submit", "--input", inputs["input"], "--src", "fr", "--tgt", "en", "--model", "openai:fake",
            "--method", "zero", "-k", "0", *extra]


def schedule_args(inputs: dict[str, str], name: str, *extra: str) -> list[str]:
    return ["schedule", "add", name, "--cron", "15 2 * * *", "--input", inputs["input"], "--src", "fr", "--tgt",
            "en", "--model", "openai:fake", "--method", "zero", "-k", "0", *extra]


def experiment_args(inputs: dict[str, str], name: str, *extra: str) -> list[str]:
    return ["experiment", "run", name, "--input", inputs["input"], "--references", inputs["refs"], "--src", "fr",
            "--tgt", "en", "--model", "openai:fake", "--methods", "zero", "--workers", "0", *extra]


# --------------------------------------------------------------------------- 18-21: backend options
SECRET_OPTIONS = [
    pytest.param('extra_body={"items": [{"api_key": "SECRET7"}]}', "key 'api_key' at items[0]", id="18-nested"),
    pytest.param("base_url=http://SECRET9@127.0.0.1:9/v1", "user info in a URL", id="19-userinfo"),
    pytest.param("base_url=http://127.0.0.1:9/v1?api_key=SECRET10", "query parameter 'api_key'", id="20-query"),
    pytest.param("pwd=hunter2", "'pwd' looks like a secret", id="21-pwd"),
    pytest.param("pass=hunter2", "'pass' looks like a secret", id="21-pass"),
    pytest.param("apikeys=SECRET1", "'apikeys' looks like a secret", id="21-apikeys"),
    pytest.param("sk=sk-SECRET2abcdefgh", "'sk' looks like a secret", id="21-sk"),
    pytest.param("token=SECRET3", "'token' looks like a secret", id="21-token"),
]


@pytest.mark.parametrize("option,message", SECRET_OPTIONS)
def test_cases_18_to_21_secrets_in_backend_options_are_refused_everywhere(job_db, inputs, option, message):
    """Cases 18-21: the same refusal at job submit, job sync, schedule add and experiment
    run; one line naming the option, never the value; nothing stored."""
    before = counts(job_db)
    for args in (submit_args(inputs, "--backend-opt", option),
                 ["job", "sync", "--input", inputs["input"], "--name", "nightly", "--src", "fr", "--tgt", "en",
                  "--model", "openai:fake", "--method", "zero", "-k", "0", "--backend-opt", option],
                 schedule_args(inputs, "nightly", "--backend-opt", option),
                 experiment_args(inputs, "exp", "--backend-opt", option)):
        line = one_line_error(scoi_cli(args, job_db))
        assert message in line and "never stored" in line and "SCOI_OPENAI_API_KEY" in line, line
        assert not any(s in line for s in SECRETS), line
    assert_nothing_stored(job_db, before)


def test_unknown_backend_options_are_refused_at_submit(job_db, inputs):
    """Case 21: before, ``--backend-opt concurency=2`` was stored and every item then failed
    in the worker with ``TypeError: ... unexpected keyword argument``."""
    before = counts(job_db)
    line = one_line_error(scoi_cli(submit_args(inputs, "--backend-opt", "concurency=2"), job_db))
    assert "unknown backend option 'concurency' for openai (did you mean 'concurrency'?)" in line
    line = one_line_error(scoi_cli(schedule_args(inputs, "s", "--backend-opt", "concurrency=0"), job_db))
    assert "'concurrency' of the openai backend must be an integer from 1 to 1024, not 0" in line
    assert counts(job_db) == before
    ok = last_json(scoi_cli(submit_args(inputs, "--backend-opt", "concurrency=2", "--json"), job_db))
    assert ok["items"] == 2


# --------------------------------------------------------------------------- 22: database URLs
@pytest.mark.parametrize("source_url", [
    "host={home} dbname=scoi user=postgres sslpassword=SEKRIT_SSL3",
    "postgresql://postgres@/scoi?host={home}&sslpassword=SEKRIT_SSL3",
    "postgresql://postgres:SEKRIT_SSL3@/scoi?host={home}",
    "host={home} dbname=scoi passfile=/tmp/SEKRIT_SSL3",
])
def test_a_source_url_with_a_password_is_refused_and_not_echoed(job_db, inputs, tmp_path, source_url):
    url = source_url.format(home=tmp_path)
    before = counts(job_db)
    for args in (["job", "submit", "--source-sql", "SELECT '1', 'Le chat dort.'", "--source-url", url, "--src", "fr",
                  "--tgt", "en", "--model", "openai:fake", "--method", "zero", "-k", "0"],
                 ["schedule", "add", "nightly", "--cron", "15 2 * * *", "--source-sql", "SELECT '1', 'Le chat.'",
                  "--source-url", url, "--src", "fr", "--tgt", "en", "--model", "openai:fake", "--method", "zero",
                  "-k", "0"]):
        line = one_line_error(scoi_cli(args, job_db))
        assert "--source-url holds" in line and "never stored" in line and "~/.pgpass" in line
        assert "SEKRIT" not in line, line
    assert_nothing_stored(job_db, before)


def test_an_unreachable_database_is_named_without_its_password(job_db, tmp_path, monkeypatch):
    """The URL from the environment (``env:VAR``, where a password may live) is named in
    the error by host, database and user only."""
    monkeypatch.setenv("SRC_URL", f"host={tmp_path}/nowhere dbname=docs user=reader sslpassword=SEKRIT_SSL3 "
                                  "password=SEKRIT_PW")
    before = counts(job_db)
    line = one_line_error(scoi_cli(["job", "submit", "--source-sql", "SELECT '1', 'x'", "--source-url", "env:SRC_URL",
                                    "--src", "fr", "--tgt", "en", "--model", "openai:fake", "--method", "zero",
                                    "-k", "0"], job_db))
    assert f"cannot connect to host={tmp_path}/nowhere dbname=docs user=reader" in line, line
    assert "SEKRIT" not in line
    assert counts(job_db) == before


# --------------------------------------------------------------------------- 26, 29: names
def test_a_corpus_name_of_undecodable_bytes_is_refused(job_db, tmp_path):
    tsv = write_lines(tmp_path / "lang.tsv", ["Le chat dort.\tThe cat sleeps."])
    before = counts(job_db)
    proc = run_scoi(["ingest", str(tsv), "--src", "fr", "--tgt", "en", "--corpus", os.fsdecode(b"c\xff\xfe")], job_db)
    line = one_line_error(proc)
    assert "corpus name 'c\\udcff\\udcfe' holds an undecodable byte" in line
    assert counts(job_db) == before


def test_names_with_control_characters_are_refused_at_creation(job_db, inputs, tmp_path):
    tsv = write_lines(tmp_path / "lang.tsv", ["Le chat dort.\tThe cat sleeps."])
    before = counts(job_db)
    esc = "esc\x1b[2J\x1b[31mred"
    for args, kind in ((["ingest", str(tsv), "--src", "fr", "--tgt", "en", "--corpus", esc], "corpus"),
                       (submit_args(inputs, "--name", "x\x1b[2Jy\nz"), "job"),
                       (["job", "sync", "--input", inputs["input"], "--name", esc, "--src", "fr", "--tgt", "en",
                         "--model", "openai:fake", "--method", "zero", "-k", "0"], "job"),
                       (schedule_args(inputs, esc), "schedule"),
                       (experiment_args(inputs, esc), "experiment")):
        line = one_line_error(scoi_cli(args, job_db))
        assert f"{kind} name '" in line and "holds the control character \\x1b" in line, line
        assert "\x1b" not in line
    assert counts(job_db) == before


def test_bad_language_codes_are_never_pasted_into_an_install_hint(job_db, tmp_path):
    tsv = write_lines(tmp_path / "lang.tsv", ["Le chat dort.\tThe cat sleeps."])
    before = counts(job_db)
    line = one_line_error(scoi_cli(["ingest", str(tsv), "--src", "fr$(id)", "--tgt", "en"], job_db))
    assert "--src 'fr$(id)' is not a language code" in line and "spacy download" not in line
    line = one_line_error(scoi_cli(["select", "Le chat.", "--src", "fr$(id)", "--tgt", "en"], job_db))
    assert "is not a language code" in line and "scoi ingest" not in line
    assert counts(job_db) == before


def test_names_and_errors_from_the_database_are_printed_escaped(job_db):
    """Rows written before names were checked (or by SQL) print escaped in every listing."""
    esc = "esc\x1b[2J\x1b[31mred\nline"
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:fake", method="zero", k=0, name="plain"), ["Un."])
        conn.execute("UPDATE job SET name = %s WHERE id = %s", (esc, job_id))
        conn.execute("UPDATE job_item SET status = 'failed', attempts = 3, last_error = %s WHERE job_id = %s",
                     ("boom\x1b]0;title\x07", job_id))
        conn.execute("UPDATE corpus SET name = %s", (esc,))
        conn.execute("UPDATE ingest_run SET error = %s", ("bad\x1b[31m",))
    outputs = {cmd: scoi_cli(cmd.split(), job_db) for cmd in ("job list", f"job status {job_id}", "corpora",
                                                              "ingest-runs")}
    for cmd, proc in outputs.items():
        assert proc.returncode == 0, (cmd, proc.stderr)
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout, (cmd, proc.stdout)
    assert "esc\\x1b[2J\\x1b[31mred\\nline" in outputs["job list"].stdout
    assert "boom\\x1b]0;title\\x07" in outputs[f"job status {job_id}"].stdout
    assert "esc\\x1b[2J" in outputs["corpora"].stdout


# --------------------------------------------------------------------------- 30, 35: numbers
def test_select_k_out_of_range_is_refused(job_db):
    before = counts(job_db)
    proc = scoi_cli(["select", "Un homme joue de la guitare.", "--src", "fr", "--tgt", "en",
                     "-k", "99999999999999999999", "--record"], job_db)
    assert "Invalid value for '-k' / '--k': Input should be less than or equal to 256" in usage_error(proc)
    assert counts(job_db) == before


def test_job_numbers_out_of_range_are_refused(job_db, inputs):
    before = counts(job_db)
    for extra, message in ((["-k", "99999999999999999999"], "less than or equal to 256"),
                           (["--max-attempts", "99999999999"], "less than or equal to 100"),
                           (["--pool", "0"], "greater than or equal to 1"),
                           (["--seed", "-1"], "greater than or equal to 0")):
        error = usage_error(scoi_cli(submit_args(inputs, *extra), job_db))
        assert f"Invalid value for '{extra[0]}'" in error and message in error, error
    proc = scoi_cli(experiment_args(inputs, "exp", "--k", "4,99999999999"), job_db)
    assert "--k must be an integer from 0 to 256, not 99999999999" in one_line_error(proc)
    with psycopg.connect(job_db, autocommit=True) as conn:  # the Python API is bounded too
        for spec in (JobSpec("fr", "en", model="openai:m", method="zero", k=10**20),
                     JobSpec("fr", "en", model="openai:m", max_attempts=10**11)):
            with pytest.raises(JobError, match="must be an integer from"):
                submit(conn, spec, ["Un."])
    assert counts(job_db) == before


# --------------------------------------------------------------------------- 36, 37: models
@pytest.mark.parametrize("model,message", [("nonsense", "cannot make a backend from 'nonsense'"),
                                           ("ggfu:x", "unknown backend kind 'ggfu' in 'ggfu:x' (did you mean gguf:?)"),
                                           ("openai:", "names no model")])
def test_a_bad_model_spec_is_refused_at_submit(job_db, inputs, model, message):
    before = counts(job_db)
    args = submit_args(inputs)
    args[args.index("openai:fake")] = model
    assert message in one_line_error(scoi_cli(args, job_db))
    assert counts(job_db) == before


def test_non_string_model_output_fails_the_item_with_one_clear_error(job_db, tmp_path):
    with FakeOpenAI(answer=lambda prompt: 12345 if "chat" in prompt else ["a", "b"]) as fake:
        args = ["job", "submit", "--input", str(write_lines(tmp_path / "in.fr", ["Le chat.", "Le chien."])),
                "--src", "fr", "--tgt", "en", "--model", "openai:fake", *stub_model_args(fake.url),
                "--max-attempts", "1", "--json"]
        job_id = last_json(scoi_cli(args, job_db))["job_id"]
        worker = scoi_cli(["worker", "--burst", "--json"], job_db)
    assert worker.returncode == 3  # items failed in this run
    summary = last_json(worker, ok=False)
    assert (summary["done"], summary["failed"]) == (0, 2)
    errors = {i["source"]: i["last_error"] for i in items(job_db, job_id)}
    assert errors["Le chat."].endswith("the server returned a non-string text: int"), errors
    assert errors["Le chien."].endswith("the server returned a non-string text: list"), errors
    assert not any("TypeError" in e or "AttributeError" in e for e in errors.values())


# --------------------------------------------------------------------------- 40, 41: templates, cron
def test_a_template_cannot_run_commands(job_db, tmp_path):
    marker = tmp_path / "ran"
    attack = tmp_path / "ssti.j2"
    attack.write_text(f"{{{{ cycler.__init__.__globals__.os.popen('id > {marker}').read() }}}}{{{{ query }}}}\n",
                      encoding="utf-8")
    proc = scoi_cli(["prompt", "Le chat dort.", "--src", "fr", "--tgt", "en", "--template", str(attack)], job_db)
    assert "is unsafe" in one_line_error(proc)
    assert not marker.exists() and "uid=" not in proc.stdout


def test_a_template_the_sandbox_refuses_is_refused_at_submit(job_db, inputs, tmp_path):
    """`job submit --template` renders the file once on a sample, so a refused template
    stores no job (instead of failing every item in the worker)."""
    marker = tmp_path / "ran"
    attack = tmp_path / "ssti.j2"
    attack.write_text(f"{{{{ cycler.__init__.__globals__.os.popen('id > {marker}').read() }}}}{{{{ query }}}}\n",
                      encoding="utf-8")
    before = counts(job_db)
    proc = scoi_cli(["job", "submit", "--input", inputs["input"], "--src", "fr", "--tgt", "en", "--model",
                     "openai:fake", "--method", "zero", "-k", "0", "--template", str(attack)], job_db)
    assert "is unsafe" in one_line_error(proc)
    assert not marker.exists() and counts(job_db) == before


def test_a_six_field_cron_is_refused(job_db, inputs):
    before = counts(job_db)
    proc = scoi_cli(["schedule", "add", "bad2", "--cron", "* * * * * *", "--input", inputs["input"], "--src", "fr",
                     "--tgt", "en", "--model", "openai:fake", "--method", "zero", "-k", "0"], job_db)
    assert "it has 6 fields; expected five fields" in one_line_error(proc)
    assert counts(job_db) == before


# --------------------------------------------------------------------------- 42-44: home and migrations
def scoi_at_home(home: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SCOI_DATABASE_URL"}
    env["SCOI_HOME"] = home
    return subprocess.run([sys.executable, "-m", "scoi.cli.main", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=180, check=False)


def test_a_scoi_home_that_is_a_file_is_named_as_such(tmp_path):
    home = tmp_path / "home-file"
    home.write_text("")
    line = one_line_error(scoi_at_home(str(home), "corpora"))
    assert f"SCOI_HOME {home} is not a directory" in line and "not open to other users" not in line
    line = one_line_error(scoi_at_home(str(home / "below"), "db", "status"))
    assert f"is not a directory ({home} is a file)" in line
    assert home.read_text() == ""


def test_a_relative_scoi_home_is_made_absolute_before_the_server_starts():
    base = Path(tempfile.mkdtemp(prefix="scoi-relhome-"))
    base.chmod(0o755)  # as root, the server's account must reach the data dir
    try:
        proc = scoi_at_home("relhome", "db", "status", "--json", cwd=base)
        assert proc.returncode == 0, proc.stderr
        status = last_json(proc)
        assert status["embedded"] and status["data_dir"] == str(base / "relhome" / "pgdata")
        assert status["revision"] is None or status["revision"] == status["head"]
    finally:
        stopped = scoi_at_home(str(base / "relhome"), "db", "stop")
        shutil.rmtree(base, ignore_errors=True)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr


def test_downgrade_to_an_unknown_revision_is_one_line(db_url):
    with psycopg.connect(db_url) as conn:
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    line = one_line_error(scoi_cli(["db", "downgrade", "zzzz"], db_url))
    assert line.startswith("error: unknown revision 'zzzz' (known: base, 0001, 0002")
    assert "unknown revision 'zzzz'" in one_line_error(scoi_cli(["db", "upgrade", "zzzz"], db_url))
    with psycopg.connect(db_url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == revision
