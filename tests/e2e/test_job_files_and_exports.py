"""Job input, references, `select --file`, `job export` and `eval` on the files that used to
slip through. Lines end at \\n (CRLF accepted), a BOM is not text, bad text is one line
naming file:line with nothing stored; an export never replaces a device or a directory; eval
warns about blank references and refuses to compare jobs scored against different ones.
Real PostgreSQL, the real CLI."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import psycopg
import pytest

from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from tests.helpers.cli import last_json, scoi_cli
from tests.helpers.database import scalar
from tests.helpers.jobs import items

ZERO = ["--src", "fr", "--tgt", "en", "--model", "openai:none", "--method", "zero", "-k", "0"]


def _refused(proc, *expected) -> str:
    """One line on stderr naming what is wrong, and a non-zero exit."""
    assert proc.returncode != 0, proc.stdout
    err = proc.stderr.strip()
    assert "Traceback" not in err and err.startswith("error: ") and "\n" not in err, err
    for text in expected:
        assert text in err, f"{text!r} not in stderr: {err}"
    return err


def _submit(url, *args):
    return scoi_cli(["job", "submit", *ZERO, *args, "--json"], url)


# --------------------------------------------------------------------------- job input and references
def test_lines_mean_newline_for_input_and_references(db_url, tmp_path):
    src, ref = tmp_path / "x.fr", tmp_path / "x.en"
    src.write_bytes("Un homme\x0bjoue.\r\nDeux\u2028chiens.\nCaf\x85e noir.\n".encode())
    ref.write_bytes("A man\x0cplays.\nTwo\u2029dogs.\r\nBlack\x1ccoffee.\n".encode())
    job_id = last_json(_submit(db_url, "--input", str(src), "--references", str(ref)))["job_id"]
    got = [(i["source"], i["reference"]) for i in items(db_url, job_id)]
    assert got == [("Un homme\x0bjoue.", "A man\x0cplays."), ("Deux\u2028chiens.", "Two\u2029dogs."),
                   ("Caf\x85e noir.", "Black\x1ccoffee.")]


def test_bom_is_dropped_from_input_and_references(db_url, tmp_path):
    src, ref = tmp_path / "b.fr", tmp_path / "b.en"
    src.write_bytes(b"\xef\xbb\xbfLe chat dort.\n")
    ref.write_bytes(b"\xef\xbb\xbfThe cat sleeps.\n")
    job_id = last_json(_submit(db_url, "--input", str(src), "--references", str(ref)))["job_id"]
    assert [(i["source"], i["reference"]) for i in items(db_url, job_id)] == [("Le chat dort.", "The cat sleeps.")]


@pytest.mark.parametrize("case, which, data, expected", [
    ("34", "input", b"Le chat.\nBon\x00jour.\n", ["nul.fr:2", "NUL character"]),
    ("45", "references", b"A.\nB.\nA\x00B\n", ["r.en:3", "NUL character"]),
    ("45b", "references", b"A.\nB\xe9.\nC.\n", ["r.en:2", "invalid UTF-8"]),
])
def test_cases_34_45_bad_text_in_input_or_references_stores_nothing(db_url, tmp_path, case, which, data, expected):
    src, ref = tmp_path / "nul.fr", tmp_path / "r.en"
    src.write_bytes(b"Le chat.\nLe chien.\nLa souris.\n")
    ref.write_bytes(b"The cat.\nThe dog.\nThe mouse.\n")
    (src if which == "input" else ref).write_bytes(data)
    _refused(_submit(db_url, "--input", str(src), "--references", str(ref)), *expected)
    assert scalar(db_url, "SELECT count(*) FROM job") == 0


def test_input_from_a_pipe_is_read_once(db_url, tmp_path):
    """`--input /dev/stdin` (read once; lines as from a file)."""
    src = tmp_path / "in.fr"
    src.write_text("Un.\nDeux.\n")
    with open(src, "rb") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "scoi.cli.main", "job", "submit", *ZERO, "--input", "/dev/stdin",
             "--json"], stdin=fh, capture_output=True, text=True, timeout=120,
            env={**os.environ, "SCOI_DATABASE_URL": db_url})
    job_id = last_json(proc)["job_id"]
    assert [i["source"] for i in items(db_url, job_id)] == ["Un.", "Deux."]


# --------------------------------------------------------------------------- select --file
def _select_file(url, path, *extra):
    return scoi_cli(["select", "--file", str(path), "--src", "fr", "--tgt", "en", "-k", "2", *extra], url)


@pytest.mark.parametrize("case, data, expected", [
    ("31", b"Le chat.\nCaf\xe9\n", ["q.txt:2", "invalid UTF-8"]),
    ("32", b"Le chat dort.\nUn homme\x00 joue.\nDeux chiens.\n", ["q.txt:2", "NUL character"]),
])
def test_cases_31_32_select_file_bad_text_is_one_line_before_any_query(job_db, tmp_path, case, data, expected):
    path = tmp_path / "q.txt"
    path.write_bytes(data)
    proc = _select_file(job_db, path, "--record")
    _refused(proc, *expected)
    assert proc.stdout == ""  # no query ran
    assert scalar(job_db, "SELECT count(*) FROM selection") == 0


def test_select_file_lines_mean_newline_and_bom_is_dropped(job_db, tmp_path):
    path = tmp_path / "q.txt"
    path.write_bytes("\ufeffUn homme\x0bjoue.\r\n\nDeux\u2028chiens.\n".encode())
    proc = _select_file(job_db, path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.rstrip("\n").split("\n")  # JSON lines: \n ends a line, U+2028 may be inside one
    assert [json.loads(line)["query"] for line in lines] == ["Un homme\x0bjoue.", "Deux\u2028chiens."]


# --------------------------------------------------------------------------- job export
@pytest.fixture()
def done_job(db_url):
    with psycopg.connect(db_url, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, name="ok1"),
                        ["Un.", "Deux.", "Trois."], ["One.", "Two.", "Three."])
        conn.execute("UPDATE job_item SET status = 'done', output = 'out ' || idx WHERE job_id = %s", (job_id,))
    return db_url


def _export(url, *args):
    return scoi_cli(["job", "export", "ok1", "--format", "tsv", *args], url)


def _no_part(folder) -> None:
    assert not [p for p in os.listdir(folder) if p.endswith(".part")]


def test_export_refuses_a_character_device(done_job):
    before = os.stat("/dev/null")
    _refused(_export(done_job, "-o", "/dev/null"), "/dev/null", "not a regular file", "-o -")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert not os.path.exists("/dev/null.part")


def test_export_refuses_a_fifo_and_a_link_to_a_device(done_job, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    _refused(_export(done_job, "-o", str(fifo)), "not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    link = tmp_path / "null.tsv"
    link.symlink_to("/dev/null")
    _refused(_export(done_job, "-o", str(link)), "not a regular file")
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    _no_part(tmp_path)


def test_export_to_a_missing_folder_is_one_line(done_job, tmp_path):
    _refused(_export(done_job, "-o", str(tmp_path / "nonexistent" / "dir" / "out.tsv")), "does not exist")
    assert not (tmp_path / "nonexistent").exists()


def test_export_to_a_directory_is_one_line_and_leaves_no_part(done_job, tmp_path):
    (tmp_path / "b_dir.tsv").mkdir()
    _refused(_export(done_job, "-o", str(tmp_path / "b_dir.tsv")), "is a directory")
    assert (tmp_path / "b_dir.tsv").is_dir() and list((tmp_path / "b_dir.tsv").iterdir()) == []
    _no_part(tmp_path)


def test_export_dash_is_stdout_and_a_regular_file_is_replaced(done_job, tmp_path):
    out = _export(done_job, "-o", "-")
    assert out.returncode == 0 and out.stdout.splitlines()[1].startswith("0\tUn.\tout 0\tOne.\tdone")
    path = tmp_path / "out.tsv"
    path.write_text("old content\n")
    proc = _export(done_job, "-o", str(path))
    assert proc.returncode == 0 and "3 rows written" in proc.stdout
    assert path.read_text() == out.stdout
    # A link to a regular file: the file it points to is replaced, the link stays.
    link = tmp_path / "link.tsv"
    link.symlink_to(path)
    path.write_text("older\n")
    assert _export(done_job, "-o", str(link)).returncode == 0
    assert link.is_symlink() and path.read_text() == out.stdout
    _no_part(tmp_path)


# --------------------------------------------------------------------------- eval
def _finished(url: str, name: str, refs: list[str]) -> int:
    srcs = [f"Phrase {i}." for i in range(len(refs))]
    with psycopg.connect(url, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, name=name), srcs, refs)
        conn.execute("UPDATE job_item SET status = 'done', output = 'Sentence ' || idx || '.' WHERE job_id = %s",
                     (job_id,))
    return job_id


REFS = [f"Sentence {i}." for i in range(10)]


def test_eval_warns_about_blank_references(db_url):
    _finished(db_url, "ok1", REFS)
    _finished(db_url, "ev_r9blank", [r if i not in (3, 7) else "" for i, r in enumerate(REFS)])
    proc = scoi_cli(["eval", "ev_r9blank", "--json"], db_url)
    assert proc.returncode == 0
    assert "warning: ev_r9blank: 2 of 10 scored items have a blank reference (item 3, 7;" in " ".join(
        proc.stderr.split())
    assert last_json(proc)["scores"]  # scored all the same
    clean = scoi_cli(["eval", "ok1"], db_url)
    assert clean.returncode == 0 and "warning" not in clean.stderr


def test_compare_refuses_jobs_with_different_references(db_url):
    _finished(db_url, "ok1", REFS)
    _finished(db_url, "ev_r9blank", [r if i != 9 else "" for i, r in enumerate(REFS)])
    _refused(scoi_cli(["eval", "--compare", "ok1", "ev_r9blank"], db_url),
             "--compare needs the same references", "ok1 and ev_r9blank differ on 1 item(s)", "item 9")
    assert scalar(db_url, "SELECT count(*) FROM job_score") == 0  # nothing scored, nothing stored
    _finished(db_url, "ok2", REFS)  # the same references: compared as before
    out = last_json(scoi_cli(["eval", "--compare", "ok1", "ok2", "--json"], db_url))
    assert [r["name"] for r in out["rows"]] == ["ok1", "ok2"]


def test_blank_sources_pass_through_without_a_model_call(db_url, tmp_path):
    """Blank sources get a blank output and no request to the model: --input lines at
    submit (done at once), and whitespace-only sources stored another way (the HTTP API
    keeps "   " as it is) in the worker. The other items are translated; indices stay aligned."""
    from tests.helpers.jobs import ok_server, stub_model_args, submit_lines

    with ok_server() as stub:
        cli_job = submit_lines(db_url, tmp_path / "in.fr", ["Le chat dort.", "", "   ", "Il pleut."], "openai:stub",
                               *stub_model_args(stub.url))
        with psycopg.connect(db_url, autocommit=True) as conn:
            api_job = submit(conn, JobSpec("fr", "en", model="openai:stub", method="zero", k=0, backend_options={
                "max_retries": 0, "base_url": stub.url}), ["Il neige.", "   ", "\u3000\t"])
        said = scoi_cli(["job", "submit", "--input", str(tmp_path / "in.fr"), "--src", "fr", "--tgt", "en",
                         "--model", "openai:stub", "--name", "said", *stub_model_args(stub.url)], db_url)
        summary = last_json(scoi_cli(["worker", "--burst", "--json", "--job", str(cli_job)], db_url))
        summary_api = last_json(scoi_cli(["worker", "--burst", "--json", "--job", str(api_job)], db_url))
        prompts = [c["body"]["prompt"] for c in stub.calls]
    assert "2 items queued (2 blank, done at once)" in said.stdout + said.stderr
    for key in ("claimed", "done", "failed"):
        summary[key] += summary_api[key]
    assert summary["claimed"] == 5 and summary["done"] == 5 and summary["failed"] == 0
    assert len(prompts) == 3 and all(any(s in p for s in ("Le chat", "Il pleut", "Il neige")) for p in prompts)
    for job_id, blank in ((cli_job, [False, True, True, False]), (api_job, [False, True, True])):
        got = items(db_url, job_id)
        assert [i["status"] for i in got] == ["done"] * len(blank)
        assert [i["output"] == "" for i in got] == blank
        assert all(i["prompt"] is None and i["raw_output"] is None for i, b in zip(got, blank) if b)
        exported = [json.loads(line) for line in scoi_cli(["job", "export", str(job_id)], db_url).stdout.splitlines()]
        assert [r["index"] for r in exported] == list(range(len(blank)))
        assert [r["output"] == "" for r in exported] == blank
