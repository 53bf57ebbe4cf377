"""``scoi eval``: score jobs against their references, or compare them (paired bootstrap)."""

from __future__ import annotations

import typer

from scoi.cli.common import console, emit_json, fail, print_rows, say, table_cells
from scoi.cli.job_access import job_or_fail, log_line, open_db
from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.core.names import printable


def _score_cell(row: dict, metric: str) -> str:
    """A metric's cell of the compare table: the score, and for a job tested against the
    baseline its bootstrap mean ± interval with * when p < 0.05."""
    if metric not in row:
        return "-"
    sig = row.get("significance", {}).get(metric)
    if sig is None or row.get("baseline"):
        return f"{row[metric]:.2f}" + (f" ({sig['mean']:.2f} ± {sig['ci']:.2f})" if sig else "")
    star = "*" if sig["p_value"] < 0.05 else ""
    return f"{row[metric]:.2f}{star} ({sig['mean']:.2f} ± {sig['ci']:.2f}, p={sig['p_value']:.3f})"


def _print_compare(rows: list[dict], columns: list[str], base: int, samples: int) -> None:
    """The --compare table: models by short label (the full specs in a note), so it fits 80
    columns on a terminal; long TSV, every number in a field of its own, when piped."""
    from scoi.jobs.eval import model_labels

    labels = model_labels([r["model"] for r in rows])
    with_terms = any("terms" in r for r in rows)
    if not console.is_terminal:
        headers = ["job_id", "job", "method", "k", "model", "template", "metric", "score", "mean", "ci", "p_value",
                   "items", *(["terms_accuracy"] if with_terms else [])]
        out = []
        for r in rows:
            for c in columns:
                if c not in r:
                    continue
                sig = r.get("significance", {}).get(c) or {}
                out.append([str(r["job_id"]), r["name"] or "", r["method"], str(r["k"]), r["model"], r["template"], c,
                            str(r[c]), str(sig.get("mean", "")), str(sig.get("ci", "")),
                            "" if sig.get("p_value") is None else str(sig["p_value"]), str(r["n_items"]),
                            *([str((r.get("terms") or {}).get("accuracy") or "")] if with_terms else [])])
        print_rows(headers, out)
        return
    from rich.table import Table
    from rich.text import Text

    templates = len({r["template"] for r in rows}) > 1  # a column only when it tells the rows apart
    table = Table("job", "method", "k", "model", *(["template"] if templates else []), *columns,
                  *(["terms %"] if with_terms else []), "items")
    for r in rows:
        term_cell = ([f"{r['terms']['accuracy']:.2f}" if r.get("terms", {}).get("required") else "-"]
                     if with_terms else [])
        table.add_row(*table_cells([r["name"] or str(r["job_id"]), r["method"], str(r["k"]), labels[r["model"]],
                                    *([r["template"]] if templates else []), *(_score_cell(r, c) for c in columns),
                                    *term_cell, str(r["n_items"])]))
    notes = []
    if len(rows) > 1:
        n = max((v["n_items"] for r in rows for v in r.get("significance", {}).values()), default=0)
        notes.append(f"paired bootstrap ({samples} resamples) against {rows[base]['name'] or rows[base]['job_id']} "
                     f"over {n} items all jobs translated: mean ± 95% interval; * p < 0.05")
    named = [f"{lab} = {spec}" for spec, lab in labels.items() if lab != spec]
    if named:
        notes.append("models: " + ", ".join(named))
    console.print(table)
    for note in notes:
        console.print(Text(printable(note)), highlight=False)  # wrapped to the terminal, never read as markup


def _warn(text: str) -> None:
    """A warning line on stderr (stdout stays clean for --json)."""
    log_line(f"warning: {text}")


def eval_jobs(
    jobs: list[str] = typer.Argument(..., help="Job ids or names."),
    compare: bool = typer.Option(False, "--compare", help="One table: a row per job, a column per metric."),
    comet: str | None = typer.Option(None, "--comet",
                                     help="COMET checkpoint: a .ckpt file, a model directory, or a cached hub name."),
    partial: bool = typer.Option(False, "--partial", help="Score the done items even if others are not."),
    baseline: str | None = typer.Option(None, "--baseline",
                                        help="With --compare: the job the others are tested against "
                                             "(default: the first)."),
    samples: int = typer.Option(defaults.BOOTSTRAP_SAMPLES, "--samples", min=100, max=LIMITS["samples"][1],
                                help="With --compare: bootstrap resamples."),
    origin: str | None = typer.Option(None, "--origin",
                                      help="llm | tm: score only the outputs the model wrote (llm) or those reused "
                                           "from the translation memory (tm); printed, not stored. Not with "
                                           "--compare."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the scores as JSON."),
) -> None:
    """BLEU and chrF (sacrebleu) of a job against its references, COMET with --comet; stored.

    --origin llm scores the model alone: a job that reused exact matches (--reuse exact)
    otherwise scores the memory's stored translations too.

    With --compare, each job's difference from the baseline gets a paired bootstrap test
    over the items all jobs translated (sacreBLEU's own for BLEU and chrF, the same
    resampling over per-item COMET scores): mean ± 95% interval, and * when p < 0.05.
    """
    from scoi.jobs.eval import EvalError, compare as compare_jobs, evaluate, term_summary

    if origin is not None and compare:
        fail("--origin scores one job's outputs of that origin; it cannot be combined with --compare")
    with open_db() as conn:
        found = [job_or_fail(conn, ref) for ref in jobs]
        base = 0
        if baseline is not None:
            base_job = job_or_fail(conn, baseline)
            if base_job.id not in [j.id for j in found]:
                found.insert(0, base_job)
            base = [j.id for j in found].index(base_job.id)
        try:
            if compare:
                columns, rows = compare_jobs(conn, found, comet=comet, partial=partial, baseline=base,
                                             n_samples=samples, warn=_warn)
            else:
                results = [(j, evaluate(conn, j, comet=comet, partial=partial, warn=_warn, origin=origin))
                           for j in found]
            terms = {j.id: term_summary(conn, j) for j in found}  # glossary term accuracy (docs/glossary.md)
        except EvalError as e:
            fail(str(e))
    if compare:
        for r in rows:
            if terms[r["job_id"]]:
                r["terms"] = terms[r["job_id"]]
        if json_out:
            emit_json({"columns": columns, "rows": rows})
            return
        _print_compare(rows, columns, base, samples)
        return
    if json_out:
        out = [{"job_id": j.id, "name": j.name, "scores": [s.to_dict() for s in scores],
                **({"terms": terms[j.id]} if terms[j.id] else {})} for j, scores in results]
        emit_json(out[0] if len(out) == 1 else out)
        return
    for j, scores in results:
        say(f"{j.label} ({j.method}, k={j.k}, {len(scores) and scores[0].n_items} items):")
        for s in scores:
            say(f"  {s.metric:6s} {s.score:7.2f}  {s.signature}")
        if t := terms[j.id]:
            share = f"{t['accuracy']:.2f}%" if t["required"] else "no term required"
            say(f"  terms  {share}  {t['found']} of {t['required']} required target terms found "
                f"(glossary {t['glossary']})")
