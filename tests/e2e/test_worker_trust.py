"""Workers trust only their own configuration. Whoever may insert a job or schedule row
(``scoi job submit``, ``scoi schedule add``, or SQL on a shared SCOI_DATABASE_URL) is not
the worker's owner: a stored job cannot make a worker read a file, send its API key
somewhere, run a model's code or write outside its destination directory. Real embedded
PostgreSQL, the real CLI and worker, the fake OpenAI-compatible server recording what it
is sent (headers included)."""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.helpers.cli import last_json, refused, run_scoi, scoi_cli
from tests.helpers.fake_openai import FakeOpenAI, ok_length
from tests.helpers.jobs import items, ok_server, stub_model_args, submit_lines, write_lines

SECRET = "TOP-SECRET-ON-WORKER-42 password=hunter2"


def _sent(server: FakeOpenAI) -> str:
    """Everything a server was sent (bodies and headers), as one string to search."""
    return json.dumps(server.calls)


def _auth(server: FakeOpenAI) -> set[str | None]:
    return {next((v for k, v in c["headers"].items() if k.lower() == "authorization"), None) for c in server.calls}


def _burst(url: str, *extra: str) -> dict:
    """``scoi worker --burst --json``'s summary; it exits 0, or 3 when items failed."""
    proc = scoi_cli(["worker", "--burst", "--json", *extra], url)
    summary = last_json(proc, ok=False)
    assert proc.returncode == (3 if summary["failed"] else 0), proc.stderr
    return summary


# --------------------------------------------------------------------------- templates (E1, E2, E4)
def test_a_template_file_is_read_at_submit_and_stored_as_text(job_db, tmp_path):
    template = tmp_path / "mine.j2"
    template.write_text("Translate {{ src_lang_name }} to {{ tgt_lang_name }}: {{ query }}\nAnswer:", encoding="utf-8")
    with ok_server() as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un."], "openai:stub", *stub_model_args(stub.url),
                              "--template", str(template))
        template.write_text(SECRET, encoding="utf-8")  # what the file holds later is never read again
        assert _burst(job_db)["done"] == 1
    [item] = items(job_db, job_id)
    assert item["prompt"] == "Translate French to English: Un.\nAnswer:"
    assert SECRET not in _sent(stub)
    with psycopg.connect(job_db) as conn:
        sig, params = conn.execute("SELECT signature, params FROM job WHERE id = %s", (job_id,)).fetchone()
    assert params["template_text"].startswith("Translate {{ src_lang_name }}")
    assert f"template:{template}#sha256:" in sig  # the text, not the path, makes the prompts


@pytest.mark.parametrize("named", ["secret", "/etc/hostname", "/proc/self/environ"])
def test_worker_never_reads_a_template_file_a_stored_job_names(job_db, tmp_path, named):
    """A row naming a template file without its text (an old row, or one written with SQL)
    fails its items with one clear error; the file is never read nor sent anywhere."""
    secret = tmp_path / "worker_secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    secret.chmod(0o600)
    path = str(secret) if named == "secret" else named
    with ok_server() as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux."], "openai:stub", *stub_model_args(stub.url),
                              "--max-attempts", "1")
        with psycopg.connect(job_db, autocommit=True) as conn:
            conn.execute("UPDATE job SET template = %s, params = params - 'template_text' WHERE id = %s",
                         (path, job_id))
        summary = _burst(job_db)
    assert (summary["done"], summary["failed"]) == (0, 2)
    assert stub.calls == []
    for item in items(job_db, job_id):
        assert item["prompt"] is None and item["status"] == "failed"
        assert f"names the template file {path!r} without its text" in item["last_error"]
        assert "never read a file a job names" in item["last_error"]


def test_a_template_that_cannot_be_stored_is_refused_at_submit(job_db, tmp_path):
    """/proc/self/environ (NUL-separated) and templates holding or rendering NUL are
    refused at submit with one line: nothing is stored."""
    src = str(write_lines(tmp_path / "in.fr", ["Un."]))
    base = ["job", "submit", "--input", src, "--src", "fr", "--tgt", "en", "--model", "openai:fake",
            "--method", "zero", "-k", "0", "--template"]
    holds_nul = tmp_path / "nul_tpl.j2"
    holds_nul.write_bytes(b"French: {{ query }}\x00\nEnglish:")
    renders_nul = tmp_path / "renders_nul.j2"
    renders_nul.write_text("French: {{ query }}{{ '\\x00' }}\nEnglish:", encoding="utf-8")
    refused(scoi_cli([*base, "/proc/self/environ"], job_db), "cannot be stored with the job", "NUL")
    refused(scoi_cli([*base, str(holds_nul)], job_db), "cannot be stored with the job", "NUL")
    refused(scoi_cli([*base, str(renders_nul)], job_db), "renders prompts PostgreSQL cannot store", "NUL")
    refused(scoi_cli([*base, str(tmp_path)], job_db), "is a directory")
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 0


# --------------------------------------------------------------------------- the API key (E3, E4)
def test_worker_never_sends_its_key_to_a_base_url_its_env_does_not_allow(job_db, tmp_path, monkeypatch):
    with FakeOpenAI(answer=ok_length) as own, FakeOpenAI(answer=ok_length) as theirs, \
            FakeOpenAI(answer=ok_length) as listed:
        monkeypatch.setenv("SCOI_OPENAI_API_KEY", "sk-WORKER-KEY-123")
        monkeypatch.setenv("SCOI_OPENAI_BASE_URL", own.url)
        monkeypatch.setenv("SCOI_OPENAI_ALLOWED_BASE_URLS", f"http://127.0.0.1:1/v1, {listed.url}/")
        zero = ["--method", "zero", "-k", "0", "--backend-opt", "max_retries=0"]
        submit_lines(job_db, tmp_path / "a.fr", ["Un."], "openai:stub", *zero,
                     "--backend-opt", f"base_url={theirs.url}")
        submit_lines(job_db, tmp_path / "b.fr", ["Deux."], "openai:stub", *zero)  # the worker's own server
        submit_lines(job_db, tmp_path / "c.fr", ["Trois."], "openai:stub", *zero,
                     "--backend-opt", f"base_url={listed.url}")
        assert _burst(job_db)["done"] == 3
    assert len(theirs.calls) == 1 and _auth(theirs) == {None}  # the prompt, but never the key
    assert "sk-WORKER-KEY-123" not in _sent(theirs)
    assert _auth(own) == {"Bearer sk-WORKER-KEY-123"}
    assert _auth(listed) == {"Bearer sk-WORKER-KEY-123"}  # allowed by SCOI_OPENAI_ALLOWED_BASE_URLS


def test_a_401_from_a_server_without_the_key_says_why(job_db, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOI_OPENAI_API_KEY", "sk-WORKER-KEY-123")
    for name in ("SCOI_OPENAI_ALLOWED_BASE_URLS", "SCOI_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAI(always=401) as theirs:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un."], "openai:stub", *stub_model_args(theirs.url),
                              "--max-attempts", "1")
        _burst(job_db)
    [item] = items(job_db, job_id)
    assert "HTTP 401" in item["last_error"] and "SCOI_OPENAI_ALLOWED_BASE_URLS" in item["last_error"]


# --------------------------------------------------------------------------- model code (E8)
@pytest.fixture()
def evil_model(tiny_model, tmp_path):
    """A copy of the tiny model whose tokenizer names code of its own
    (tokenization_evil.py), which writes a marker file when imported; (spec, marker)."""
    import shutil
    from pathlib import Path

    model = tmp_path / "evilmodel"
    shutil.copytree(Path(tiny_model.removeprefix("hf:")), model)
    marker = tmp_path / "marker.txt"
    (model / "tokenization_evil.py").write_text(
        f"import os\nopen({str(marker)!r}, 'w').write(f'uid {{os.getuid()}}')\n"
        "from transformers import PreTrainedTokenizerFast\n\n\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n", encoding="utf-8")
    config = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoTokenizer": [None, "tokenization_evil.EvilTokenizer"]}
    config["tokenizer_class"] = "EvilTokenizer"
    (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return f"hf:{model}", marker


def test_a_job_cannot_make_the_worker_run_model_code(job_db, tmp_path, evil_model, monkeypatch):
    spec, marker = evil_model
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("SCOI_TRUST_REMOTE_CODE", raising=False)
    src = str(write_lines(tmp_path / "in.fr", ["Un."]))
    base = ["job", "submit", "--input", src, "--src", "fr", "--tgt", "en", "--model", spec, "--method", "zero",
            "-k", "0", "--max-attempts", "1", "--max-new-tokens", "2"]
    refused(scoi_cli([*base, "--backend-opt", "trust_remote_code=true"], job_db),
            "'trust_remote_code' runs code", "scoi worker --trust-remote-code")
    refused(scoi_cli(["schedule", "add", "nightly", "--cron", "0 3 * * *", *base[2:], "--backend-opt",
                      "trust_remote_code=true"], job_db), "'trust_remote_code' runs code")  # a schedule's job too
    # A row carrying it anyway (written with SQL): refused by the worker, before any loading.
    job_id = last_json(scoi_cli([*base, "--name", "rcode1", "--json"], job_db))["job_id"]
    with psycopg.connect(job_db, autocommit=True) as conn:
        conn.execute("UPDATE job SET params = jsonb_set(params, '{backend_options}', "
                     "'{\"trust_remote_code\": true}') WHERE id = %s", (job_id,))
    plain = last_json(scoi_cli([*base, "--name", "plain", "--json"], job_db))["job_id"]
    _burst(job_db)
    [item] = items(job_db, job_id)
    assert item["status"] == "failed" and "'trust_remote_code' runs code" in item["last_error"]
    [item] = items(job_db, plain)  # without it: transformers never imports the directory's code
    assert item["status"] in ("done", "failed")
    assert not marker.exists()
    # Only the worker's owner can enable it, for their own worker: then the code does run.
    with psycopg.connect(job_db, autocommit=True) as conn:
        conn.execute("UPDATE job_item SET status = 'queued', attempts = 0 WHERE job_id = %s", (plain,))
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "hf_modules"))  # where transformers copies the code
    proc = run_scoi(["worker", "--burst", "--trust-remote-code", "--job", "plain"], job_db)
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text().startswith("uid ")


# --------------------------------------------------------------------------- file destinations (E11)
def test_a_schedule_cannot_make_the_worker_write_outside_its_dest_dir(job_db, tmp_path, monkeypatch):
    dest_dir = tmp_path / "out"
    dest_dir.mkdir()
    victim = tmp_path / "victim_file.txt"
    victim.write_text("precious\n", encoding="utf-8")
    (dest_dir / "escape.tsv").symlink_to(victim)
    src = str(write_lines(tmp_path / "sched_in.fr", ["Un.", "Deux."]))
    monkeypatch.setenv("SCOI_SOURCE_DIR", str(tmp_path))
    with ok_server() as stub:
        def add(name: str, dest: str):
            return scoi_cli(["schedule", "add", name, "--cron", "0 3 * * *", "--src", "fr", "--tgt", "en",
                             "--model", "openai:stub", *stub_model_args(stub.url), "--input", src,
                             "--dest-file", dest, "--dest-format", "tsv"], job_db)

        monkeypatch.delenv("SCOI_DEST_DIR", raising=False)
        refused(add("destf0", str(dest_dir / "a.tsv")), "no destination directory is configured", "SCOI_DEST_DIR")
        monkeypatch.setenv("SCOI_DEST_DIR", str(dest_dir))
        refused(add("destf1", str(victim)), "outside the destination directory")
        refused(add("destf2", str(dest_dir / ".." / "victim_file.txt")), "outside the destination directory")
        assert add("destf3", str(dest_dir / "ok.tsv")).returncode == 0
        # Rows changed with SQL afterwards: the worker checks again at delivery.
        with psycopg.connect(job_db, autocommit=True) as conn:
            assert add("destf4", str(dest_dir / "later.tsv")).returncode == 0
            assert add("destf5", str(dest_dir / "linked.tsv")).returncode == 0
            conn.execute("UPDATE job_destination SET path = %s WHERE job_id = "
                         "(SELECT job_id FROM schedule WHERE name = 'destf4')", (str(victim),))
            conn.execute("UPDATE job_destination SET path = %s WHERE job_id = "
                         "(SELECT job_id FROM schedule WHERE name = 'destf5')", (str(dest_dir / "escape.tsv"),))
        for name in ("destf3", "destf4", "destf5"):
            assert scoi_cli(["schedule", "run", name], job_db).returncode == 0
        monkeypatch.delenv("SCOI_DEST_DIR")
        assert _burst(job_db, "--dest-dir", str(dest_dir))["done"] == 6
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert (dest_dir / "ok.tsv").read_text(encoding="utf-8").startswith("index\tsource\toutput")
    assert (dest_dir / "escape.tsv").is_symlink()
    shown = {n: last_json(scoi_cli(["schedule", "show", n, "--json"], job_db))["destination"]
             for n in ("destf3", "destf4", "destf5")}
    assert shown["destf3"]["last_error"] is None and shown["destf3"]["pending"] == 0
    assert "outside the destination directory" in shown["destf4"]["last_error"]
    assert "is a symbolic link" in shown["destf5"]["last_error"]
    assert shown["destf4"]["pending"] == shown["destf5"]["pending"] == 2  # kept for a fixed destination
    # A worker with no destination directory writes no file at all.
    with psycopg.connect(job_db, autocommit=True) as conn:
        conn.execute("UPDATE job_item SET delivered_at = NULL")
    (dest_dir / "ok.tsv").unlink()
    _burst(job_db)
    assert not (dest_dir / "ok.tsv").exists()
    assert "no destination directory is configured" in \
        last_json(scoi_cli(["schedule", "show", "destf3", "--json"], job_db))["destination"]["last_error"]


# --------------------------------------------------------------------------- file sources
def test_a_schedule_cannot_make_the_worker_read_a_file_outside_its_source_dir(job_db, tmp_path, monkeypatch):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    src = str(write_lines(inbox / "in.fr", ["Un."]))
    secret = tmp_path / "worker_secret.txt"
    secret.write_text(SECRET + "\n", encoding="utf-8")
    (inbox / "link.fr").symlink_to(secret)
    with ok_server() as stub:
        def add(name: str, path: str):
            return scoi_cli(["schedule", "add", name, "--cron", "0 3 * * *", "--src", "fr", "--tgt", "en",
                             "--model", "openai:stub", *stub_model_args(stub.url), "--input", path], job_db)

        monkeypatch.delenv("SCOI_SOURCE_DIR", raising=False)
        refused(add("in0", src), "no source directory is configured", "SCOI_SOURCE_DIR")
        monkeypatch.setenv("SCOI_SOURCE_DIR", str(inbox))
        refused(add("in1", str(secret)), "outside the source directory")
        refused(add("in2", "/etc/hostname"), "outside the source directory")
        refused(add("in3", str(inbox / "link.fr")), "outside the source directory")
        assert add("in4", src).returncode == 0
        with psycopg.connect(job_db, autocommit=True) as conn:  # the row changed with SQL afterwards
            conn.execute("UPDATE job_source SET path = %s", (str(secret),))
            conn.execute("UPDATE schedule SET created_at = now() - interval '2 days'")  # a tick is due
        monkeypatch.delenv("SCOI_SOURCE_DIR")
        summary = _burst(job_db, "--source-dir", str(inbox))
    assert summary["claimed"] == 0 and SECRET not in _sent(stub)
    [run] = last_json(scoi_cli(["schedule", "show", "in4", "--json"], job_db))["runs"]
    assert run["added"] is None and "outside the source directory" in run["error"]


# --------------------------------------------------------------------------- env: URLs
def test_a_stored_env_url_cannot_name_the_workers_other_secrets(job_db, monkeypatch):
    monkeypatch.setenv("SCOI_OPENAI_API_KEY", "sk-WORKER-KEY-123")
    monkeypatch.setenv("GARBLED_URL", "sk-WORKER-KEY-456 not a conninfo")
    with psycopg.connect(job_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id bigint PRIMARY KEY, body text)")
        conn.execute("GRANT SELECT ON documents TO scoi_reader")
        conn.execute("INSERT INTO documents VALUES (1, 'Le chat dort.')")
    with ok_server() as stub:
        base = ["schedule", "add", "--cron", "0 3 * * *", "--src", "fr", "--tgt", "en", "--model", "openai:stub",
                *stub_model_args(stub.url), "--source-sql", "SELECT id, body FROM documents"]
        line = refused(scoi_cli([base[0], base[1], "leak", *base[2:], "--source-url", "env:SCOI_OPENAI_API_KEY"],
                                job_db), "ends in _URL")
        assert "sk-WORKER" not in line
        # A row changed with SQL afterwards: the worker refuses the variable, or names the
        # database without quoting the value it could not read.
        assert scoi_cli([base[0], base[1], "docs", *base[2:]], job_db).returncode == 0
        errors = []
        for url in ("env:SCOI_OPENAI_API_KEY", "env:GARBLED_URL"):
            with psycopg.connect(job_db, autocommit=True) as conn:
                conn.execute("UPDATE job_source SET url = %s", (url,))
            errors.append(last_json(scoi_cli(["schedule", "run", "docs", "--json"], job_db), ok=False)["error"])
    assert "ends in _URL" in errors[0]
    assert "not a PostgreSQL URL or conninfo" in errors[1]
    assert not any("sk-WORKER" in e for e in errors), errors


# --------------------------------------------------------------------------- --parser (E6)
def test_a_parser_override_is_checked_at_submit(job_db, tmp_path):
    src = str(write_lines(tmp_path / "in.fr", ["Un."]))
    base = ["job", "submit", "--input", src, "--src", "fr", "--tgt", "en", "--model", "openai:fake"]
    for override in ("fr=this:x", "fr=os:abort", "fr=fr_core_news_md"):
        refused(scoi_cli([*base, "--parser", override], job_db),
                f"--parser {override}: the stored fr sentences were analysed with fr_core_news_sm",
                "scoi reanalyze --lang fr")
    refused(scoi_cli([*base, "--parser", "en=en_core_web_sm"], job_db), "a job parses only its source language (fr)")
    assert last_json(scoi_cli([*base, "--parser", "fr=fr_core_news_sm", "--json"], job_db))["items"] == 1
