"""The experiment plot from a stored table, without a database: one panel per model, the
rows each panel shows, the formats and metrics it refuses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scoi.jobs.plot import PlotError, draw, panels, plot_format


def _score(x, significant=False):
    return {"score": x, "low": x - 1, "high": x + 1, "p_value": 0.01 if significant else 0.5,
            "significant": significant, "std": None}


RESULT = {
    "experiment": "e", "direction": "fr-en", "metrics": ["bleu", "chrf"], "baseline": "bm25", "alpha": 0.05,
    "confidence": 0.95, "n_items": 20,
    "models": [{"label": "a", "model": "hf:/m/a"}, {"label": "b", "model": "hf:/m/b"}],
    "rows": [{"model": m, "method": meth, "k": k, "order": "reverse", "template": "xglm", "seeds": seeds,
              "baseline": meth == "bm25", "scores": {"bleu": _score(10 + i, meth == "scoi"), "chrf": None}}
             for m in ("a", "b")
             for i, (meth, k, seeds) in enumerate([("zero", 0, 1), ("random", 4, 3), ("bm25", 4, 1), ("scoi", 4, 1)])],
}


def test_panels_are_one_per_model_with_the_varying_grid_values_in_row_titles():
    out = panels(RESULT, "bleu")
    assert [label for label, _ in out] == ["a", "b"]
    assert [t for t, _, _ in out[0][1]] == ["zero k=0", "random ×3 k=4", "bm25 k=4", "scoi k=4"]
    assert [base for _, _, base in out[1][1]] == [False, False, True, False]


def test_unscored_metric_and_unknown_format_are_refused():
    with pytest.raises(PlotError, match="no row of the experiment has a chrf score"):
        panels(RESULT, "chrf")
    with pytest.raises(PlotError, match="has no comet scores"):
        panels(RESULT, "comet")
    with pytest.raises(PlotError, match="name the file .png or .svg"):
        plot_format(Path("plot.pdf"))
    assert plot_format(Path("P.SVG")) == "svg"


def test_svg_has_one_axes_group_per_model(tmp_path):
    path = tmp_path / "e.svg"
    assert draw(RESULT, path, metric="bleu") == 2
    text = path.read_text()
    assert len(re.findall(r'<g id="axes_\d+"', text)) == 2 and not (tmp_path / "e.svg.part").exists()
