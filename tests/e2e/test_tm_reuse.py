"""Translation-memory reuse and the --where filter through the CLI: a job whose items are
partly stored verbatim, its origins in status, list, export and eval; bad filters; a
schedule keeps the settings; an experiment never reuses. The model is the fake
OpenAI-compatible server (counting its requests); the corpus is the demo fr-en TSV."""

from __future__ import annotations

import csv
import json

import psycopg

from tests.helpers.cli import last_json, refused, scoi_cli
from tests.helpers.jobs import demo_pairs, demo_test_pairs, ok_server, submit_lines, write_lines


def test_job_reuses_exact_matches_and_reports_origins(job_db, tmp_path):
    stored = demo_pairs()[10:13]
    new = demo_test_pairs()[:2]
    sources = [stored[0][0], new[0][0], stored[1][0], new[1][0], stored[2][0]]
    refs = [stored[0][1], new[0][1], stored[1][1], new[1][1], stored[2][1]]
    with ok_server() as stub:
        job_id = submit_lines(job_db, tmp_path / "in.fr", sources, "openai:stub", "-k", "2", "--backend-opt",
                              "max_retries=0", "--backend-opt", f"base_url={stub.url}", refs=refs, name="tm")
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
        prompts = sum(len(c["body"]["prompt"]) if isinstance(c["body"]["prompt"], list) else 1 for c in stub.calls)
    assert summary["done"] == 5 and summary["reused"] == 3
    assert prompts == 2  # only the two new sentences reached the model

    st = last_json(scoi_cli(["job", "status", "tm", "--json"], job_db))
    assert st["origins"] == {"llm": 2, "tm": 3} and st["reuse"] == "exact"
    text = scoi_cli(["job", "status", "tm"], job_db).stdout
    assert "origins: 2 by the model, 3 reused from the memory (--reuse exact)" in text
    [listed] = last_json(scoi_cli(["job", "list", "--json"], job_db))
    assert listed["origins"] == {"llm": 2, "tm": 3}

    rows = [json.loads(line) for line in scoi_cli(["job", "export", "tm"], job_db).stdout.splitlines()]
    assert [r["origin"] for r in rows] == ["tm", "llm", "tm", "llm", "tm"]
    assert [r["output"] for r in rows[::2]] == [en for _, en in stored]
    assert all(isinstance(r["origin_pair_id"], int) for r in rows[::2])
    out = tmp_path / "out.tsv"
    scoi_cli(["job", "export", "tm", "--format", "tsv", "-o", str(out)], job_db)
    with out.open(encoding="utf-8", newline="") as fh:
        tsv = list(csv.DictReader(fh, delimiter="\t"))
    assert [r["origin"] for r in tsv] == [r["origin"] for r in rows]

    # the memory's outputs equal their references: scored alone they are perfect, and the
    # model's alone are not; --origin scores are printed, not stored
    llm = last_json(scoi_cli(["eval", str(job_id), "--origin", "llm", "--json"], job_db))
    tm = last_json(scoi_cli(["eval", str(job_id), "--origin", "tm", "--json"], job_db))
    bleu = {name: next(s for s in got["scores"] if s["metric"] == "bleu") for name, got in (("llm", llm), ("tm", tm))}
    assert bleu["tm"]["score"] == 100.0 and bleu["tm"]["n_items"] == 3 and bleu["llm"]["n_items"] == 2
    assert bleu["llm"]["score"] < 100.0 and bleu["llm"]["signature"].endswith("|origin:llm")
    assert last_json(scoi_cli(["job", "status", "tm", "--json"], job_db))["scores"] == []
    refused(scoi_cli(["eval", str(job_id), "--origin", "memory"], job_db), "unknown origin 'memory'")
    refused(scoi_cli(["eval", str(job_id), str(job_id), "--compare", "--origin", "llm"], job_db),
            "--origin", "--compare")


def test_bad_where_and_reuse_are_one_line_and_store_nothing(job_db, tmp_path):
    path = write_lines(tmp_path / "in.fr", ["Bonjour."])
    base = ["job", "submit", "--input", str(path), "--src", "fr", "--tgt", "en", "--model", "openai:m"]
    refused(scoi_cli(base + ["--where", "domain"], job_db), "--where 'domain'", "KEY=VALUE")
    refused(scoi_cli(base + ["--where", "do main=legal"], job_db), "KEY=VALUE")
    refused(scoi_cli(base + ["--where", "d=a", "--where", "d=b"], job_db), "given twice")
    refused(scoi_cli(base + ["--reuse", "fuzzy"], job_db), "unknown --reuse 'fuzzy'", "exact, off")
    refused(scoi_cli(["select", "Bonjour.", "--src", "fr", "--tgt", "en", "--where", "x"], job_db), "KEY=VALUE")
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 0


def test_select_where_restricts_the_examples(job_db):
    fr, _ = demo_pairs()[20]
    with psycopg.connect(job_db, autocommit=True) as conn:
        legal = [r[0] for r in conn.execute(
            "UPDATE pair SET meta = '{\"domain\": \"legal\"}' WHERE id IN (SELECT id FROM pair ORDER BY id LIMIT 30) "
            "RETURNING id")]
    got = last_json(scoi_cli(["select", fr, "--src", "fr", "--tgt", "en", "--where", "domain=legal", "--json"],
                             job_db))
    assert got["selected"] and {p["pair_id"] for p in got["selected"]} <= set(legal)
    assert set(got["candidates"]) <= set(legal) and "where:domain=legal" in got["signature"]
    assert got["params"]["where"] == {"domain": "legal"}
    prompt = scoi_cli(["prompt", fr, "--src", "fr", "--tgt", "en", "-k", "4", "--where", "domain=legal"], job_db)
    assert prompt.returncode == 0, prompt.stderr
    with psycopg.connect(job_db) as conn:
        legal_fr = {r[0] for r in conn.execute("SELECT s.text FROM example e JOIN sentence s ON s.id = e.src_id "
                                               "WHERE e.src_lang = 'fr' AND e.pair_id = ANY(%s)", (legal,))}
    assert all(p["src"] in legal_fr and p["src"] in prompt.stdout for p in got["selected"])


def test_schedule_keeps_reuse_and_where_and_experiment_never_reuses(job_db, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOI_SOURCE_DIR", str(tmp_path))  # schedules read file sources only there
    src = write_lines(tmp_path / "in.fr", [fr for fr, _ in demo_pairs()[:2]])
    ref = write_lines(tmp_path / "in.en", [en for _, en in demo_pairs()[:2]])
    out = last_json(scoi_cli(["schedule", "add", "nightly", "--cron", "0 3 * * *", "--input", str(src),
                              "--src", "fr", "--tgt", "en", "--model", "openai:m", "--reuse", "off",
                              "--where", "domain=legal", "--json"], job_db))
    with psycopg.connect(job_db) as conn:
        params = conn.execute("SELECT params FROM job WHERE id = %s", (out["job_id"],)).fetchone()[0]
    assert params["reuse"] == "off" and params["where"] == {"domain": "legal"}

    with ok_server() as stub:
        # a schedule's items are reused like a submitted job's: no request for stored sentences
        memory = last_json(scoi_cli(["schedule", "add", "memory", "--cron", "0 3 * * *", "--input", str(src),
                                     "--src", "fr", "--tgt", "en", "--model", "openai:stub", "--backend-opt",
                                     f"base_url={stub.url}", "--json"], job_db))
        assert last_json(scoi_cli(["schedule", "run", "memory", "--json"], job_db))["added"] == 2
        assert last_json(scoi_cli(["worker", "--burst", "--json"], job_db))["reused"] == 2
        assert stub.calls == []
        rows = [json.loads(line) for line in scoi_cli(["job", "export", str(memory["job_id"])], job_db)
                .stdout.splitlines()]
        assert [(r["output"], r["origin"]) for r in rows] == [(en, "tm") for _, en in demo_pairs()[:2]]

        run = scoi_cli(["experiment", "run", "exp", "--input", str(src), "--references", str(ref), "--src", "fr",
                        "--tgt", "en", "--model", "openai:stub", "--methods", "zero", "--backend-opt",
                        "max_retries=0", "--backend-opt", f"base_url={stub.url}", "--workers", "0"], job_db)
    assert run.returncode == 0, run.stderr
    assert "--reuse off" in run.stderr
    with psycopg.connect(job_db) as conn:
        [(params,)] = conn.execute("SELECT j.params FROM job j JOIN experiment_job e ON e.job_id = j.id").fetchall()
    assert params["reuse"] == "off"
