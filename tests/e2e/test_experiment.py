"""``scoi experiment``: a grid over two models becomes jobs, they are translated, the tables
are printed (long TSV when piped) and stored; a rerun resumes instead of duplicating, a
rerun with a third model adds its cells; another input under the same name is refused; the
plot has one panel per model."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys

import psycopg
import pytest

from tests.helpers.cli import last_json, scoi_cli, scoi_env
from tests.helpers.jobs import demo_test_pairs, ok_server, write_lines

MODELS = ["--model", "a=openai:stub-a", "--model", "openai:stub-b"]


def _args(tmp_path, stub_url, sources, refs, *extra, models=MODELS):
    return ["experiment", "run", "demo-exp", "--input", str(write_lines(tmp_path / "test.fr", sources)),
            "--references", str(write_lines(tmp_path / "test.en", refs)), "--src", "fr", "--tgt", "en",
            *models, "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={stub_url}",
            "--methods", "zero,random,bm25,scoi", "--k", "2", "--random-seeds", "2", "--max-new-tokens", "8",
            "--samples", "100", *extra]


def test_experiment_over_two_models_runs_the_grid_resumes_and_adds_a_model(job_db, tmp_path):
    pairs = demo_test_pairs()[:6]
    sources, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    with ok_server() as stub:
        out = last_json(scoi_cli([*_args(tmp_path, stub.url, sources, refs), "--json"], job_db))
        assert out["metrics"] == ["bleu", "chrf"] and out["baseline"] == "bm25" and out["n_items"] == len(sources)
        assert out["models"] == [{"label": "a", "model": "openai:stub-a"},
                                 {"label": "stub-b", "model": "openai:stub-b"}]
        assert [(r["model"], r["method"]) for r in out["rows"]] == [
            (m, meth) for m in ("a", "stub-b") for meth in ("zero", "random", "bm25", "scoi")]
        rows = {(r["model"], r["method"]): r for r in out["rows"]}
        assert rows["a", "zero"]["k"] == 0 and rows["a", "scoi"]["k"] == 2
        assert rows["a", "random"]["seeds"] == 2 and len(rows["a", "random"]["jobs"]) == 2
        assert rows["a", "random"]["scores"]["chrf"]["std"] is not None
        assert rows["a", "scoi"]["scores"]["chrf"]["std"] is None
        base = rows["stub-b", "bm25"]
        assert base["baseline"] and base["tested_against"] is None and base["scores"]["bleu"]["p_value"] is None
        scoi = rows["stub-b", "scoi"]
        assert out["rows"][scoi["tested_against"]] is base  # an index into rows: stub-b's own bm25 row
        assert all(0 <= s["low"] <= s["high"] for r in out["rows"] for s in r["scores"].values())
        assert base["scores"]["chrf"]["low"] < base["scores"]["chrf"]["high"]  # chrF varies over 6 sentences
        assert 0 < scoi["scores"]["chrf"]["p_value"] <= 1

        with psycopg.connect(job_db) as conn:
            cells = conn.execute("SELECT x.model, j.model, j.name FROM experiment_job x JOIN job j ON j.id = x.job_id "
                                 "ORDER BY x.job_id").fetchall()
            states = conn.execute("SELECT DISTINCT p.state FROM experiment_job x JOIN job_progress p USING (job_id)"
                                  ).fetchall()
            stored = conn.execute("SELECT result FROM experiment WHERE name = 'demo-exp'").fetchone()[0]
        assert len(cells) == 2 * (1 + 2 + 1 + 1) and states == [("done",)]
        assert all(x == j for x, j, _ in cells) and cells[0][2] == "demo-exp/a/zero-k0-reverse-xglm-s0"
        assert stored["rows"] == out["rows"]
        served = len(stub.calls)

        # Rerun: the same jobs, nothing translated again, the same table.
        again = last_json(scoi_cli([*_args(tmp_path, stub.url, sources, refs), "--json"], job_db))
        assert again["rows"] == out["rows"] and len(stub.calls) == served

        # A third model: its cells are added and translated; the first two are not redone.
        bigger = last_json(scoi_cli([*_args(tmp_path, stub.url, sources, refs, "--json",
                                            models=["--models", "a=openai:stub-a,c=openai:stub-c"])], job_db))
        assert [m["label"] for m in bigger["models"]] == ["a", "stub-b", "c"]
        assert len(stub.calls) == served + 5 * len(sources)
        conflict = scoi_cli(_args(tmp_path, stub.url, sources, refs, models=["--model", "a=openai:other"]), job_db)
        assert conflict.returncode != 0 and "the experiment's model 'a' is 'openai:stub-a'" in conflict.stderr

    shown = scoi_cli(["experiment", "show", "demo-exp"], job_db)  # piped: long TSV, one header
    assert shown.returncode == 0, shown.stderr
    table = list(csv.reader(io.StringIO(shown.stdout), delimiter="\t"))
    assert table[0][:7] == ["model", "method", "k", "order", "template", "seeds", "metric"]
    assert len(table) == 1 + 3 * 4 * 2
    random_bleu = next(r for r in table if r[:2] == ["c", "random"] and r[6] == "bleu")
    assert random_bleu[5] == "2" and random_bleu[12] != ""  # seeds, std
    listed = last_json(scoi_cli(["experiment", "list", "--json"], job_db))
    assert [(r["name"], r["jobs"], r["jobs_done"], [m["label"] for m in r["models"]]) for r in listed] == [
        ("demo-exp", 15, 15, ["a", "stub-b", "c"])]


def test_plot_has_one_panel_per_model(job_db, tmp_path):
    pairs = demo_test_pairs()[:4]
    sources, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    with ok_server() as stub:
        assert scoi_cli(_args(tmp_path, stub.url, sources, refs), job_db).returncode == 0
    svg = tmp_path / "exp.svg"
    out = last_json(scoi_cli(["experiment", "plot", "demo-exp", "-o", str(svg), "--metric", "chrf", "--json"], job_db))
    assert out == {"file": str(svg), "panels": 2, "metric": "chrf"}
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "</svg>" in text
    assert len(re.findall(r'<g id="axes_\d+"', text)) == 2
    png = tmp_path / "exp.png"
    assert scoi_cli(["experiment", "plot", "demo-exp", "-o", str(png)], job_db).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # On a terminal: one table per metric, a column group per model, within 80 columns.
    term = subprocess.run([sys.executable, "-m", "scoi.cli.main", "experiment", "show", "demo-exp"],
                          env=scoi_env(job_db, FORCE_COLOR="1", NO_COLOR="1", COLUMNS="80"), capture_output=True,
                          text=True, timeout=300)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", term.stdout)
    assert term.returncode == 0 and max(len(line) for line in text.splitlines()) <= 80, text
    assert text.count("95% CI") == 2 * 2 + 1 and "BLEU: demo-exp" in text and "chrF: demo-exp" in text
    assert "sd of seeds" in text and "random ×2 seeds" in text and "bm25 (baseline)" in text
    assert "models: a = openai:stub-a, stub-b = openai:stub-b" in " ".join(text.split())

    bad = scoi_cli(["experiment", "plot", "demo-exp", "-o", str(tmp_path / "exp.jpg")], job_db)
    assert bad.returncode != 0 and "name the file .png or .svg" in bad.stderr and not (tmp_path / "exp.jpg").exists()
    bad_metric = scoi_cli(["experiment", "plot", "demo-exp", "-o", str(tmp_path / "m.svg"), "--metric", "ter"], job_db)
    assert bad_metric.returncode != 0 and "expected one of bleu, chrf, comet" in bad_metric.stderr
    no_comet = scoi_cli(["experiment", "plot", "demo-exp", "-o", str(tmp_path / "c.svg"), "--metric", "comet"],
                        job_db)
    assert no_comet.returncode != 0 and "has no comet scores" in no_comet.stderr


def test_same_name_other_input_is_refused(job_db, tmp_path):
    pairs = demo_test_pairs()[:4]
    sources, refs = [fr for fr, _ in pairs], [en for _, en in pairs]
    with ok_server() as stub:
        first = scoi_cli([*_args(tmp_path, stub.url, sources, refs), "--workers", "0", "--json"], job_db)
        assert last_json(first)["created"] == 10
        other = scoi_cli(_args(tmp_path, stub.url, sources[:3], refs[:3]), job_db)
    assert other.returncode != 0
    assert "exists with another grid, direction or input" in other.stderr
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 10


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
    clash = scoi_cli(_args(tmp_path, "http://127.0.0.1:9", sources, refs,
                           models=["--model", "hf:/m/one/xglm", "--model", "hf:/m/two/xglm"]), job_db)
    assert clash.returncode != 0 and "share the label 'xglm'" in clash.stderr
    none = scoi_cli(_args(tmp_path, "http://127.0.0.1:9", sources, refs, models=[]), job_db)
    assert none.returncode != 0 and "--model SPEC" in none.stderr
    with psycopg.connect(job_db) as conn:
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM experiment").fetchone()[0] == 0


@pytest.mark.slow  # two local models translate; a CTQ model is trained first
def test_experiment_with_two_local_models_compares_four_methods_including_ctq(job_db, tiny_model, tmp_path):
    from tests.tiny_model import build_tiny_model

    second = "hf:" + str(build_tiny_model(tmp_path / "tiny2", seed=1))
    dev = demo_test_pairs()[:3]
    trained = last_json(scoi_cli([
        "ctq", "train", "--src", "fr", "--tgt", "en", "--name", "exp-ctq",
        "--dev", str(write_lines(tmp_path / "dev.fr", [fr for fr, _ in dev])),
        "--dev-ref", str(write_lines(tmp_path / "dev.en", [en for _, en in dev])),
        "--model", tiny_model, "--pool", "4", "--max-new-tokens", "8", "--json"], job_db))
    assert trained["status"] == "fitted"
    test = demo_test_pairs()[3:7]  # not the development sentences
    args = ["experiment", "run", "four", "--input", str(write_lines(tmp_path / "t.fr", [fr for fr, _ in test])),
            "--references", str(write_lines(tmp_path / "t.en", [en for _, en in test])), "--src", "fr", "--tgt", "en",
            "--model", f"one={tiny_model}", "--model", f"two={second}", "--methods", "zero,bm25,scoi,ctq",
            "--k", "2", "--max-new-tokens", "8", "--samples", "100", "--ctq-model", "exp-ctq"]
    out = last_json(scoi_cli([*args, "--json"], job_db))
    assert [(r["model"], r["method"]) for r in out["rows"]] == [
        (m, meth) for m in ("one", "two") for meth in ("zero", "bm25", "scoi", "ctq")]
    assert all(s["low"] <= s["score"] <= s["high"] for r in out["rows"] for s in r["scores"].values())
    with psycopg.connect(job_db) as conn:
        ctq_jobs = conn.execute("SELECT j.params->>'ctq_model', p.state FROM experiment_job x JOIN job j "
                                "ON j.id = x.job_id JOIN job_progress p ON p.job_id = j.id WHERE x.method = 'ctq'"
                                ).fetchall()
    assert ctq_jobs == [(trained["signature"], "done")] * 2  # the named model ranks both models' ctq cells

    shown = scoi_cli(["experiment", "show", "four"], job_db)  # piped: long TSV
    assert shown.returncode == 0, shown.stderr
    table = list(csv.reader(io.StringIO(shown.stdout), delimiter="\t"))
    assert sum(r[:2] == ["two", "ctq"] for r in table) == 2  # bleu, chrf
    svg = tmp_path / "four.svg"
    plotted = last_json(scoi_cli(["experiment", "plot", "four", "-o", str(svg), "--metric", "chrf", "--json"],
                                 job_db))
    assert plotted["panels"] == 2 and "ctq" in svg.read_text()
    unknown = scoi_cli(["experiment", "run", "other", *args[3:-1], "nope"], job_db)
    assert unknown.returncode != 0 and "nope" in unknown.stderr
    with psycopg.connect(job_db) as conn:  # refused before any job
        assert conn.execute("SELECT count(*) FROM experiment WHERE name = 'other'").fetchone() == (0,)
