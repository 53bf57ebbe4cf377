"""The experiment grid and table, without a database: which jobs a grid makes, how random
seeds are averaged, which significance a row shows."""

from __future__ import annotations

import pytest

from scoi.jobs.experiment import ALPHA, Cell, ExperimentSpec, format_cell, grid, input_hash, table


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


def test_job_names_are_unique_per_cell():
    cells = grid(["random", "bm25"], [4], ["reverse"], ["xglm", "alpaca"], random_seeds=2)
    names = [c.job_name("exp") for c in cells]
    assert len(set(names)) == len(names) and names[0] == "exp/random-k4-reverse-xglm-s0"


def test_baseline_default_is_bm25_when_compared():
    spec = ExperimentSpec("e", "fr", "en", "openai:x", methods=["scoi", "bm25"])
    assert spec.baseline_method() == "bm25"
    assert ExperimentSpec("e", "fr", "en", "m", methods=["scoi", "zero"]).baseline_method() == "scoi"
    assert ExperimentSpec("e", "fr", "en", "m", methods=["scoi", "bm25"], baseline="scoi").baseline_method() == "scoi"


def test_input_hash_changes_with_sources_or_references():
    sets = [(["a"], ["b"]), (["a"], ["c"]), (["x"], ["c"]), (["a", "b"], ["c", "d"]), (["b", "a"], ["d", "c"]),
            (["a b"], ["c"]), ([], [])]
    assert len({input_hash(src, ref) for src, ref in sets}) == len(sets)  # every pair differs


def test_input_hash_is_stable_across_versions():
    """A stored experiment's hash is compared with a rerun's: the format must never change."""
    assert input_hash(["a", "b"], ["c", "d"]) == "33327c7a04eb569466614e50d22b93872e2a04d1380cf2f05074f6bdb7b1579a"


def _sig(p):
    return {"score": 1.0, "mean": 1.0, "ci": 0.1, "p_value": p, "n_items": 5}


def test_table_averages_seeds_and_takes_the_first_seeds_test():
    cells = [Cell("bm25", 4, "reverse", "xglm"), Cell("random", 4, "reverse", "xglm", 0),
             Cell("random", 4, "reverse", "xglm", 1), Cell("random", 4, "reverse", "xglm", 2)]
    job_rows = [
        {"job_id": 1, "bleu": 20.0, "chrf": 50.0, "baseline": True, "significance": {"bleu": _sig(None)},
         "n_items": 5},
        {"job_id": 2, "bleu": 10.0, "chrf": 40.0, "baseline": False, "significance": {"bleu": _sig(0.01)},
         "n_items": 5},
        {"job_id": 3, "bleu": 12.0, "chrf": 41.0, "baseline": False, "significance": {"bleu": _sig(0.5)}},
        {"job_id": 4, "bleu": 14.0, "chrf": 45.0, "baseline": False, "significance": {"bleu": _sig(0.5)}},
    ]
    out = table(cells, job_rows, ["bleu", "chrf"], baseline=0)
    base, rnd = out["rows"]
    assert (base["method"], base["baseline"], base["bleu"], base["seeds"]) == ("bm25", True, 20.0, 1)
    assert (rnd["jobs"], rnd["seeds"]) == ([2, 3, 4], 3)
    assert rnd["bleu"] == pytest.approx(12.0) and rnd["chrf"] == pytest.approx(42.0)
    assert rnd["significance"]["bleu"]["p_value"] == 0.01 and rnd["significance"]["bleu"]["significant"]
    assert out["baseline"] == "bm25" and out["alpha"] == ALPHA
    assert format_cell(rnd, "bleu") == "12.00*"
    assert format_cell(rnd, "chrf") == "42.00"  # no test for chrF in these rows: unmarked
    assert format_cell(base, "bleu") == "20.00"
    assert format_cell({**rnd, "comet": None}, "comet") == "-"


def test_p_at_alpha_is_not_significant():
    cells = [Cell("bm25", 4, "reverse", "xglm"), Cell("scoi", 4, "reverse", "xglm")]
    rows = [{"job_id": 1, "bleu": 1.0, "baseline": True, "significance": {}},
            {"job_id": 2, "bleu": 2.0, "baseline": False, "significance": {"bleu": _sig(ALPHA)}}]
    out = table(cells, rows, ["bleu"], baseline=0)
    assert not out["rows"][1]["significance"]["bleu"]["significant"]
    assert format_cell(out["rows"][1], "bleu") == "2.00"


def test_rbm25_variants_are_rows_of_their_own():
    """``rbm25`` (scoi's Moses-token variant) beside ``rbm25:ctq`` (as published)."""
    spec = ExperimentSpec("e", "fr", "en", "m", methods=["rbm25", "rbm25:ctq", "rbm25:agrawal"])
    jobs = [spec.job_spec(c) for c in spec.cells()]
    assert [(j.method, j.rbm25_variant) for j in jobs] == [("rbm25", "moses"), ("rbm25", "ctq"),
                                                           ("rbm25", "agrawal")]
    assert [j.name for j in jobs] == ["e/rbm25-k4-reverse-xglm-s0", "e/rbm25:ctq-k4-reverse-xglm-s0",
                                      "e/rbm25:agrawal-k4-reverse-xglm-s0"]
    assert "|rbm25:ctq|" in jobs[1].signature() and "|rbm25:moses|" in jobs[0].signature()
