"""The experiment grid and table, without a database: which jobs a grid makes over models,
how random seeds are averaged with their spread, which baseline a row is tested against,
the terminal table, TSV and JSON forms, model labels."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from rich.console import Console

from scoi.cli.experiment_cmd import metric_tables
from scoi.jobs.eval import model_label, model_labels
from scoi.jobs.experiment_grid import (ALPHA, SPREAD, Cell, ExperimentSpec, grid, input_hash, merge_models,
                                       parse_models, stored_models)
from scoi.jobs.experiment_table import TSV_HEADERS, baseline_row, footnotes, metric_table, table, tsv_rows
from scoi.jobs.spec import JobError


def test_grid_cells_in_order_zero_once_random_per_seed():
    cells = grid(["zero", "random", "scoi"], [1, 4], ["reverse", "selection"], ["xglm"], random_seeds=3)
    assert cells[0] == Cell("zero", 0, "reverse", "xglm", 0)
    assert [c for c in cells if c.method == "zero"] == [cells[0]]  # no examples: k and order do not matter
    randoms = [c for c in cells if c.method == "random"]
    assert len(randoms) == 2 * 2 * 3 and {c.seed for c in randoms} == {0, 1, 2}
    assert [c for c in cells if c.method == "scoi"] == [
        Cell("scoi", 1, "reverse", "xglm"), Cell("scoi", 1, "selection", "xglm"),
        Cell("scoi", 4, "reverse", "xglm"), Cell("scoi", 4, "selection", "xglm")]
    assert len(set(cells)) == len(cells) == 1 + 12 + 4


def test_job_names_are_unique_per_cell_and_model():
    cells = grid(["random", "bm25"], [4], ["reverse"], ["xglm", "alpaca"], random_seeds=2, models=["a", "b"])
    names = [c.job_name("exp") for c in cells]
    assert len(set(names)) == len(names) == 2 * 6 and names[0] == "exp/a/random-k4-reverse-xglm-s0"
    assert [c.model for c in cells] == ["a"] * 6 + ["b"] * 6  # model after model: each loads once
    assert Cell("bm25", 4, "reverse", "xglm").job_name("exp") == "exp/bm25-k4-reverse-xglm-s0"


def test_baseline_default_is_bm25_when_compared():
    spec = ExperimentSpec("e", "fr", "en", {"x": "openai:x"}, methods=["scoi", "bm25"])
    assert spec.baseline_method() == "bm25"
    assert ExperimentSpec("e", "fr", "en", {"m": "m"}, methods=["scoi", "zero"]).baseline_method() == "scoi"
    assert ExperimentSpec("e", "fr", "en", {"m": "m"}, methods=["scoi", "bm25"],
                          baseline="scoi").baseline_method() == "scoi"


def test_input_hash_changes_with_sources_or_references():
    sets = [(["a"], ["b"]), (["a"], ["c"]), (["x"], ["c"]), (["a", "b"], ["c", "d"]), (["b", "a"], ["d", "c"]),
            (["a b"], ["c"]), ([], [])]
    assert len({input_hash(src, ref) for src, ref in sets}) == len(sets)  # every pair differs


def test_input_hash_is_stable_across_versions():
    """A stored experiment's hash is compared with a rerun's: the format must never change."""
    assert input_hash(["a", "b"], ["c", "d"]) == "33327c7a04eb569466614e50d22b93872e2a04d1380cf2f05074f6bdb7b1579a"


MEAN = {"comet": lambda summed: float(summed[0] / summed[1])}


def _stats(scores):
    return {"comet": np.column_stack([scores, np.ones(len(scores))])}


def _result(models=("m1",)):
    """A table over two models from COMET-like per-item scores: bm25 the baseline, random
    over three seeds, scoi far above bm25, zero equal to it."""
    rng = np.random.default_rng(0)
    base = rng.normal(50, 10, 80)
    cells, stats = [], []
    for model in models:
        for cell, scores in [(Cell("zero", 0, "reverse", "xglm", 0, model), base),
                             (Cell("bm25", 4, "reverse", "xglm", 0, model), base),
                             *[(Cell("random", 4, "reverse", "xglm", s, model), base + d)
                               for s, d in enumerate([-1.0, 0.0, 1.0])],
                             (Cell("scoi", 4, "reverse", "xglm", 0, model), base + 5)]:
            cells.append(cell)
            stats.append(_stats(scores))
    out = table(cells, stats, MEAN, job_ids=list(range(1, len(cells) + 1)), baseline="bm25", n_samples=200, seed=1)
    return {"experiment": "e", "direction": "fr-en",
            "models": [{"label": m, "model": f"hf:/models/{m}"} for m in models], **out}


def test_table_averages_seeds_with_their_spread_and_tests_against_the_models_baseline():
    out = _result(("m1", "m2"))
    rows = {(r["model"], r["method"]): r for r in out["rows"]}
    assert len(out["rows"]) == 2 * 4 and out["n_items"] == 80 and out["metrics"] == ["comet"]
    rnd, base, scoi, zero = (rows["m2", m] for m in ("random", "bm25", "scoi", "zero"))
    assert rnd["seeds"] == 3 and rnd["jobs"] == [9, 10, 11]
    assert rnd["scores"]["comet"]["score"] == pytest.approx(base["scores"]["comet"]["score"], abs=1e-4)
    assert rnd["scores"]["comet"]["std"] == pytest.approx(1.0)  # sample std of -1, 0, +1 around the mean
    assert base["scores"]["comet"]["std"] is None and base["tested_against"] is None
    assert out["rows"][scoi["tested_against"]] is base  # m2's baseline, not m1's
    assert scoi["scores"]["comet"]["significant"] and scoi["scores"]["comet"]["p_value"] < ALPHA
    assert zero["scores"]["comet"]["p_value"] == 1.0 and not zero["scores"]["comet"]["significant"]
    for r in out["rows"]:
        s = r["scores"]["comet"]
        assert s["low"] < s["score"] < s["high"]


def test_a_metric_missing_for_one_seed_leaves_the_row_unscored():
    cells = [Cell("bm25", 4, "reverse", "xglm"), Cell("random", 4, "reverse", "xglm", 0),
             Cell("random", 4, "reverse", "xglm", 1)]
    stats = [_stats([1.0, 2.0]), _stats([1.0, 3.0]), {"comet": None}]
    out = table(cells, stats, MEAN, job_ids=[1, 2, 3], baseline="bm25", n_samples=50)
    assert out["rows"][1]["scores"]["comet"] is None and out["rows"][0]["scores"]["comet"]["score"] == 1.5


def test_baseline_row_prefers_the_same_k_order_and_template():
    rows = [{"model": "a", "method": "bm25", "k": 1, "order": "reverse", "template": "xglm"},
            {"model": "a", "method": "bm25", "k": 4, "order": "reverse", "template": "xglm"},
            {"model": "a", "method": "scoi", "k": 4, "order": "reverse", "template": "xglm"},
            {"model": "a", "method": "zero", "k": 0, "order": "reverse", "template": "alpaca"},
            {"model": "b", "method": "scoi", "k": 4, "order": "reverse", "template": "xglm"}]
    assert baseline_row(rows, 2, "bm25") == 1
    assert baseline_row(rows, 3, "bm25") == 0  # no bm25 row with its template: the model's first
    assert baseline_row(rows, 4, "bm25") is None  # model b has no baseline row


def test_metric_table_fits_80_columns_for_two_models_with_its_footnotes():
    out = _result(("xglm-564M", "alpaca-7b"))
    headers, rows = metric_table(out, "comet")
    assert headers == ["method", "k", "xglm-564M", "95% CI", "p", "alpaca-7b", "95% CI", "p"]  # zero's k is 0
    titles = [r[0] for r in rows]
    assert titles == ["zero", "bm25 (baseline)", "random ×3 seeds", "  sd of seeds", "scoi"]
    scoi = rows[-1]
    assert scoi[2].endswith("*") and re.fullmatch(r"\d+\.\d–\d+\.\d", scoi[3]) and float(scoi[4]) < ALPHA
    assert rows[1][4] == "-" and rows[3][2] == "1.00"
    console = Console(width=80, file=io.StringIO(), force_terminal=True, color_system=None)
    console.print(*metric_tables(out))
    lines = console.file.getvalue().splitlines()
    assert max(map(len, lines)) <= 80 and any("random ×3 seeds" in line for line in lines)  # nothing folded
    notes = footnotes(out)
    assert any(n.startswith("* p < 0.05 against the same model's bm25 row") for n in notes)
    assert any("sd of seeds: " + SPREAD in n for n in notes)
    assert "models: xglm-564M = hf:/models/xglm-564M, alpaca-7b = hf:/models/alpaca-7b" in notes


def test_footnotes_only_when_they_apply():
    cells = [Cell("bm25", 4, "reverse", "xglm", 0, "gpt")]
    out = {"experiment": "e", "direction": "fr-en", "models": [{"label": "gpt", "model": "gpt"}],
           **table(cells, [_stats([1.0, 2.0])], MEAN, job_ids=[1], baseline="bm25", n_samples=50)}
    notes = footnotes(out)
    assert len(notes) == 1 and notes[0].startswith("95% CI: percentile bootstrap interval over 50")


def test_tsv_rows_are_long_one_line_per_model_row_and_metric():
    out = _result(("m1", "m2"))
    rows = tsv_rows(out)
    assert len(rows) == 8 and all(len(r) == len(TSV_HEADERS) for r in rows)
    by = {(r[0], r[1]): dict(zip(TSV_HEADERS, r)) for r in rows}
    base, scoi = by["m1", "bm25"], by["m1", "scoi"]
    assert base["p_value"] == "" and base["significant"] == "" and base["baseline"] == "true"
    assert scoi["significant"] == "true" and float(scoi["ci_low"]) < float(scoi["score"]) < float(scoi["ci_high"])
    assert by["m1", "random"]["seeds"] == "3" and by["m1", "random"]["std"] == "1.0"
    assert json.loads(json.dumps(out)) == out  # the --json form is plain JSON


def test_parse_models_labels_and_refusals():
    assert parse_models(["hf:/models/xglm-564M", "big=gguf:/m/llama.gguf", "openai:gpt-4o-mini"]) == {
        "xglm-564M": "hf:/models/xglm-564M", "big": "gguf:/m/llama.gguf", "gpt-4o-mini": "openai:gpt-4o-mini"}
    assert parse_models(["gguf:/m/alpaca-7b.Q4.gguf"]) == {"alpaca-7b.Q4": "gguf:/m/alpaca-7b.Q4.gguf"}
    with pytest.raises(JobError, match="share the label 'xglm'"):
        parse_models(["hf:/a/xglm", "hf:/b/xglm"])
    with pytest.raises(JobError, match="given twice"):
        parse_models(["a=hf:/a/x", "b=hf:/a/x"])
    with pytest.raises(JobError, match="expected a backend spec"):
        parse_models(["a="])


def test_merge_models_adds_new_ones_and_refuses_a_relabel():
    stored = {"a": "hf:/a", "b": "hf:/b"}
    assert merge_models(stored, {"a": "hf:/a", "c": "hf:/c"}) == {"a": "hf:/a", "b": "hf:/b", "c": "hf:/c"}
    assert merge_models(stored, {"b": "hf:/b"}) == stored
    with pytest.raises(JobError, match="model 'a' is 'hf:/a', not 'hf:/x'"):
        merge_models(stored, {"a": "hf:/x"})
    with pytest.raises(JobError, match="in the experiment as 'b'"):
        merge_models(stored, {"bee": "hf:/b"})


def test_stored_models_of_an_experiment_made_with_one_model():
    assert stored_models({"methods": ["bm25"]}, "hf:/models/xglm") == {"xglm": "hf:/models/xglm"}
    assert stored_models({"models": [{"label": "x", "model": "hf:/m"}]}, "hf:/m") == {"x": "hf:/m"}


def test_model_labels_fall_back_to_the_spec_on_a_clash():
    assert model_labels(["hf:/a/xglm", "hf:/b/xglm", "openai:gpt"]) == {
        "hf:/a/xglm": "hf:/a/xglm", "hf:/b/xglm": "hf:/b/xglm", "openai:gpt": "gpt"}
    assert model_label("hf:/models/xglm/") == "xglm"


def test_rbm25_variants_are_rows_of_their_own():
    """``rbm25`` (scoi's Moses-token variant) beside ``rbm25:ctq`` (as published)."""
    spec = ExperimentSpec("e", "fr", "en", {"m": "openai:m"}, methods=["rbm25", "rbm25:ctq", "rbm25:agrawal"])
    jobs = [spec.job_spec(c) for c in spec.cells()]
    assert [(j.method, j.rbm25_variant, j.model) for j in jobs] == [
        ("rbm25", "moses", "openai:m"), ("rbm25", "ctq", "openai:m"), ("rbm25", "agrawal", "openai:m")]
    assert [j.name for j in jobs] == ["e/m/rbm25-k4-reverse-xglm-s0", "e/m/rbm25:ctq-k4-reverse-xglm-s0",
                                      "e/m/rbm25:agrawal-k4-reverse-xglm-s0"]
    assert "|rbm25:ctq|" in jobs[1].signature() and "|rbm25:moses|" in jobs[0].signature()


def test_the_named_ctq_model_reaches_only_the_ctq_cells_and_the_grid():
    """``--ctq-model``: every model's ctq job ranks with it; the other methods' jobs (and
    their signatures) do not carry it; a grid made without it stays as it was stored."""
    spec = ExperimentSpec("e", "fr", "en", {"a": "openai:a", "b": "openai:b"}, methods=["bm25", "ctq"],
                          ctq_model="fr-en-tiny")
    jobs = {(c.model, c.method): spec.job_spec(c) for c in spec.cells()}
    assert jobs["a", "ctq"].ctq_model == jobs["b", "ctq"].ctq_model == "fr-en-tiny"
    assert jobs["a", "bm25"].ctq_model is None and "ctq" not in jobs["a", "bm25"].signature()
    assert spec.grid_json()["ctq_model"] == "fr-en-tiny"
    assert "ctq_model" not in ExperimentSpec("e", "fr", "en", {"a": "openai:a"}, methods=["ctq"]).grid_json()
