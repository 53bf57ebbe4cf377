"""``scoi experiment plot``: each method's score with its 95% bootstrap interval, one
panel per model, drawn from an experiment's stored table (scoi.jobs.experiment_table.table).

matplotlib (the ``plot`` extra) draws with its Agg backend, so no display is needed; the
file is written whole or not at all (scoi.outfile).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scoi.outfile import replacing

#: File suffixes a plot can be written as, and matplotlib's format name for each.
FORMATS = {".png": "png", ".svg": "svg"}
METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF", "comet": "COMET"}


class PlotError(ValueError):
    """A plot that cannot be drawn (unknown format or metric, no scores, no matplotlib)."""


def plot_format(path: Path) -> str:
    """matplotlib's format for ``path``'s suffix, or PlotError naming the accepted ones."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise PlotError(f"{path}: cannot tell the image format from {path.suffix or 'no suffix'!r}; "
                        f"name the file .png or .svg")
    return fmt


def panels(result: Mapping[str, Any], metric: str) -> list[tuple[str, list[tuple[str, dict[str, Any], bool]]]]:
    """Per model (label), its rows' (title, scores of ``metric``, baseline?) in table order;
    a row's title is its method with the grid values that vary (k, order, template)."""
    if metric not in result["metrics"]:
        raise PlotError(f"the experiment's table has no {metric} scores (it has {', '.join(result['metrics'])}); "
                        "COMET needs `scoi experiment show NAME --comet CHECKPOINT` first")
    varying = [c for c in ("k", "order", "template") if len({r[c] for r in result["rows"]}) > 1]
    out = []
    for model in result["models"]:
        rows = []
        for r in result["rows"]:
            s = r["scores"].get(metric)
            if r["model"] != model["label"] or s is None:
                continue
            title = " ".join([r["method"] + (f" ×{r['seeds']}" if r["seeds"] > 1 else ""),
                              *(f"{c}={r[c]}" if c == "k" else str(r[c]) for c in varying)])
            rows.append((title, s, r["baseline"]))
        out.append((model["label"], rows))
    if not any(rows for _, rows in out):
        raise PlotError(f"no row of the experiment has a {metric} score yet")
    return out


def draw(result: Mapping[str, Any], path: Path, *, metric: str = "bleu") -> int:
    """Write the plot of ``metric`` to ``path`` (.png or .svg); returns the number of
    panels (one per model). The baseline's point is drawn in another colour, a row whose
    difference from the baseline is significant (p < alpha) with a filled marker."""
    fmt = plot_format(path)
    groups = panels(result, metric)
    try:
        import matplotlib
    except ImportError:
        raise PlotError("plotting needs matplotlib: pip install 'scoi[plot]'") from None
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    n_rows = max(len(rows) for _, rows in groups)
    fig = Figure(figsize=(3.2 * len(groups) + 1.6, 0.42 * n_rows + 1.4), layout="constrained")
    axes = fig.subplots(1, len(groups), sharey=True, squeeze=False)[0]
    titles = list(dict.fromkeys(t for _, rows in groups for t, _, _ in rows))
    for ax, (label, rows) in zip(axes, groups):
        for title, s, base in rows:
            y = len(titles) - 1 - titles.index(title)
            colour = "tab:orange" if base else "tab:blue"
            ax.errorbar([s["score"]], [y], xerr=[[s["score"] - s["low"]], [s["high"] - s["score"]]], fmt="o",
                        color=colour, capsize=3, markerfacecolor=colour if (base or s["significant"]) else "white")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(METRIC_NAMES.get(metric, metric))
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(titles)), list(reversed(titles)))
    fig.suptitle(f"{result['experiment']} ({result['direction']}, {result['n_items']} sentences): "
                 f"{METRIC_NAMES.get(metric, metric)} with {round(100 * result['confidence'])}% bootstrap intervals;\n"
                 f"orange: baseline ({result['baseline']}); filled: p < {result['alpha']} against it",
                 fontsize=9)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else None)
    with replacing(path) as out:
        out.write(buf.getvalue())
    return len(groups)


__all__ = ["FORMATS", "PlotError", "draw", "panels", "plot_format"]
