"""``scoi experiment``: a grid becomes jobs, they are translated, the table is printed and
stored; a rerun resumes instead of duplicating; another input under the same name is refused."""

from __future__ import annotations

import psycopg

from tests.helpers.cli import last_json, scoi_cli
from tests.helpers.jobs import demo_test_pairs, ok_server, write_lines


def _args(tmp_path, stub_url, sources, refs, *extra):
    return ["experiment", "run", "demo-exp", "--input", str(write_lines(tmp_path / "test.fr", sources)),
            "--references", str(write_lines(tmp_path / "test.en", refs)), "--src", "fr", "--tgt", "en",
            "--model", "openai:stub", "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={stub_url}",
            "--methods", "zero,random,bm25,scoi", "--k", "2", "--random-seeds", "2", "--max-new-tokens", "8",
            "--samples", "100", *extra]


def test_experiment_runs_the_grid_and_resumes(job_db, tmp_path):
    pairs = demo_test_pairs()[:6]
    sources, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    with ok_server() as stub:
        out = last_json(scoi_cli([*_args(tmp_path, stub.url, sources, refs), "--json"], job_db))
        assert out["columns"] == ["bleu", "chrf"] and out["baseline"] == "bm25"
        rows = {r["method"]: r for r in out["rows"]}
        assert list(rows) == ["zero", "random", "bm25", "scoi"]
        assert rows["zero"]["k"] == 0 and rows["scoi"]["k"] == 2
        assert rows["random"]["seeds"] == 2 and len(rows["random"]["jobs"]) == 2
        assert rows["bm25"]["baseline"] and not rows["scoi"]["baseline"]
        assert set(rows["scoi"]["significance"]) == {"bleu", "chrf"}
        assert 0 < rows["scoi"]["significance"]["chrf"]["p_value"] <= 1
        assert all(r["n_items"] == len(sources) for r in out["rows"])

        with psycopg.connect(job_db) as conn:
            n_jobs = conn.execute("SELECT count(*) FROM experiment_job").fetchone()[0]
            states = conn.execute("SELECT DISTINCT p.state FROM experiment_job x JOIN job_progress p USING (job_id)"
                                  ).fetchall()
            stored = conn.execute("SELECT result FROM experiment WHERE name = 'demo-exp'").fetchone()[0]
        assert n_jobs == 1 + 2 + 1 + 1 and states == [("done",)]
        assert stored["rows"] == out["rows"]
        served = len(stub.calls)

        # Rerun: the same jobs, nothing translated again, the same table.
        again = last_json(scoi_cli([*_args(tmp_path, stub.url, sources, refs), "--json"], job_db))
        assert again["rows"] == out["rows"] and len(stub.calls) == served

    shown = scoi_cli(["experiment", "show", "demo-exp"], job_db)
    assert shown.returncode == 0, shown.stderr
    assert "bm25 (baseline)" in shown.stdout and "random ×2 seeds" in shown.stdout
    listed = last_json(scoi_cli(["experiment", "list", "--json"], job_db))
    assert [(r["name"], r["jobs"], r["jobs_done"]) for r in listed] == [("demo-exp", 5, 5)]


def test_same_name_other_input_is_refused(job_db, tmp_path):
    pairs = demo_test_pairs()[:4]
    sources, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    with ok_server() as stub:
        first = scoi_cli([*_args(tmp_path, stub.url, sources, refs), "--workers", "0", "--json"], job_db)
        assert last_json(first)["created"] == 5
        other = scoi_cli(_args(tmp_path, stub.url, sources[:3], refs[:3]), job_db)
    assert other.returncode != 0
    assert "exists with another grid, model or input" in other.stderr
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 5


def test_bad_options_are_refused_before_any_job(job_db, tmp_path):
    pairs = demo_test_pairs()[:3]
    sources, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    bad_baseline = scoi_cli([*_args(tmp_path, "http://127.0.0.1:9", sources, refs), "--baseline", "dpp"],
                            job_db)
    assert bad_baseline.returncode != 0 and "baseline 'dpp' is not one of the methods" in bad_baseline.stderr
    short_refs = scoi_cli(_args(tmp_path, "http://127.0.0.1:9", sources, refs[:2]), job_db)
    assert short_refs.returncode != 0 and "aligned line by line" in short_refs.stderr
    bad_k = scoi_cli([*_args(tmp_path, "http://127.0.0.1:9", sources, refs), "--k", "four"], job_db)
    assert bad_k.returncode != 0 and "expected comma-separated whole numbers" in bad_k.stderr
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM experiment").fetchone()[0] == 0
