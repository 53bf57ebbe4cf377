"""Score a job's outputs against its references: BLEU and chrF (sacrebleu), COMET.

BLEU and chrF are corpus-level sacrebleu scores with their signatures, so a number can
be reproduced. COMET runs only from a checkpoint available on this machine (a local
``.ckpt`` file, a downloaded model directory, or a hub name already in the Hugging Face
cache): scoi never downloads a model, and says so at once when one is missing. Scores
are stored in ``job_score``; ``compare`` reads the latest ones into one table, one row
per job (method), one column per metric, like the docs/method.md §8 figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import psycopg

from scoi.core.glossary import term_accuracy
from scoi.glossary import job_term_checks
from scoi.hub import offline
from scoi.jobs.significance import DEFAULT_SAMPLES, paired_bootstrap_means, paired_bootstrap_sacrebleu
from scoi.jobs.spec import Job
from scoi.jobs.store import insert_score, latest_score_rows, latest_segment_scores, scored_items

METRICS = ("bleu", "chrf", "comet")
COMET_SCALE = 100  # stored x100, as docs/method.md §8 reports COMET
#: Where an output came from (job_item.origin): the model, or the translation memory.
ORIGINS = ("llm", "tm")


class EvalError(RuntimeError):
    """A job that cannot be scored (no references, unfinished items, no COMET model)."""


@dataclass
class Score:
    metric: str
    score: float
    signature: str
    n_items: int
    #: Per-item scores in the order of the scored items (COMET; None for corpus metrics),
    #: stored in ``job_segment_score`` for paired significance tests.
    segments: list[float] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("segments")
        return d


# --------------------------------------------------------------------------- sacrebleu
def sacrebleu_metric(metric: str, tgt_lang: str):
    """The sacrebleu metric object scoi scores ``metric`` with: BLEU with the tokeniser
    sacrebleu picks for the target language, chrF with its defaults."""
    from sacrebleu.metrics import BLEU, CHRF

    if metric == "bleu":
        return BLEU(trg_lang=tgt_lang)
    if metric == "chrf":
        return CHRF()
    raise ValueError(f"not a sacrebleu metric: {metric!r}")


def sacrebleu_scores(hypotheses: Sequence[str], references: Sequence[str], tgt_lang: str) -> list[Score]:
    """Corpus BLEU and chrF with their signatures."""
    hyps, refs = list(hypotheses), [list(references)]
    out = []
    for name in ("bleu", "chrf"):
        m = sacrebleu_metric(name, tgt_lang)
        out.append(Score(name, round(m.corpus_score(hyps, refs).score, 4), m.get_signature().format(), len(hyps)))
    return out


# --------------------------------------------------------------------------- COMET
def _looks_like_path(spec: str) -> bool:
    """Hub names are ``org/name`` or ``name``; anything else is meant as a file path."""
    return spec.startswith((".", "/", "~")) or spec.endswith(".ckpt") or spec.count("/") > 1 or "\\" in spec


def resolve_comet_checkpoint(spec: str) -> Path:
    """The ``.ckpt`` file for ``spec``: a checkpoint file, a model directory (holding
    ``checkpoints/model.ckpt``), or a hub name found in the local Hugging Face cache."""
    p = Path(spec).expanduser()
    if p.is_file():
        return p
    if p.is_dir():
        for candidate in (p / "checkpoints" / "model.ckpt", p / "model.ckpt"):
            if candidate.is_file():
                return candidate
        found = sorted(p.glob("**/*.ckpt"))
        if len(found) == 1:
            return found[0]
        raise EvalError(f"no COMET checkpoint in {p}: expected checkpoints/model.ckpt inside the model directory")
    if _looks_like_path(spec):
        raise EvalError(f"COMET checkpoint not found: {spec} (give a .ckpt file or a downloaded COMET model "
                        "directory; scoi does not download models)")
    with offline():
        try:
            from huggingface_hub import snapshot_download

            repo = spec if "/" in spec else f"Unbabel/{spec}"  # COMET's short names
            folder = Path(snapshot_download(repo, local_files_only=True))
        except Exception as e:  # noqa: BLE001 - any failure means: not on this machine
            raise EvalError(
                f"COMET model {spec!r} is not available offline ({type(e).__name__}); scoi does not download "
                f"models. On a machine with internet run `huggingface-cli download {spec}` (and the encoder it "
                "names, e.g. xlm-roberta-large), copy the directory here and pass --comet PATH") from None
    return resolve_comet_checkpoint(str(folder))


def comet_score(sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str], spec: str,
                *, batch_size: int = 8) -> Score:
    """System-level COMET (x100) of the outputs, from a local checkpoint only."""
    ckpt = resolve_comet_checkpoint(spec)
    with offline():
        try:
            from comet import load_from_checkpoint
        except ImportError as e:
            hint = " (install setuptools<81: torchmetrics 0.10, which COMET pins, imports pkg_resources)" \
                if "pkg_resources" in str(e) else " (pip install unbabel-comet)"
            raise EvalError(f"cannot import COMET: {e}{hint}") from None
        try:
            model = load_from_checkpoint(str(ckpt), local_files_only=True)
        except Exception as e:  # noqa: BLE001
            raise EvalError(f"cannot load the COMET checkpoint {ckpt}: {type(e).__name__}: {e} (its encoder must "
                            "be in the local Hugging Face cache too; scoi does not download models)") from None
        data = [{"src": s, "mt": h, "ref": r} for s, h, r in zip(sources, hypotheses, references)]
        out = model.predict(data, batch_size=batch_size, gpus=0, accelerator="cpu", progress_bar=False)
    return Score("comet", round(float(out.system_score) * COMET_SCALE, 4),
                 f"comet:{spec}|ckpt:{ckpt.name}|scale:{COMET_SCALE}", len(data),
                 segments=[float(x) * COMET_SCALE for x in out.scores])


# --------------------------------------------------------------------------- jobs
def done_items(conn: psycopg.Connection, job: Job, *, partial: bool = False,
               origin: str | None = None) -> list[tuple[int, str, str, str]]:
    """(idx, source, output, reference) of the job's translated items that have a
    reference (only those of ``origin``, llm or tm, when given); an unfinished job is an
    error unless ``partial``."""
    rows = scored_items(conn, job.id)
    if not rows:
        raise EvalError(f"{job.label} has no references; submit it with --references FILE")
    pending = [r for r in rows if r[3] != "done"]
    if pending and not partial:
        counts: dict[str, int] = {}
        for r in pending:
            counts[r[3]] = counts.get(r[3], 0) + 1
        what = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        raise EvalError(f"{job.label} is not finished ({what} of {len(rows)} items with references); run "
                        "`scoi worker --burst`, or pass --partial to score the done items only")
    done = [(r[4], r[0], r[1] or "", r[2]) for r in rows if r[3] == "done" and origin in (None, r[5])]
    if not done:
        raise EvalError(f"{job.label} has no translated items yet" if origin is None else
                        f"{job.label} has no done item with origin {origin} (llm: written by the model; tm: reused "
                        "from the translation memory)")
    return done


def blank_reference_warning(job: Job, done: Sequence[tuple[int, str, str, str]]) -> str | None:
    """A warning when items with a source have a blank reference: they are scored
    against empty text, which drags BLEU and chrF down without saying so (a references
    file with a blank line, or one shifted against the input)."""
    blank = [idx for idx, src, _, ref in done if src.strip() and not ref.strip()]
    if not blank:
        return None
    shown = ", ".join(str(i) for i in blank[:10]) + (", ..." if len(blank) > 10 else "")
    return (f"{job.label}: {len(blank)} of {len(done)} scored items have a blank reference (item "
            f"{shown}; item i is line i+1 of the references), so they are scored against empty text; "
            "check the references file")


def check_same_references(jobs: Sequence[Job], done: Sequence[Sequence[tuple[int, str, str, str]]]) -> None:
    """Refuse to compare jobs whose references differ on an item they share (same index,
    same source): their scores would measure different things, and the paired test can
    use only one job's references."""
    base = {d[0]: d for d in done[0]}
    for job, items in zip(jobs[1:], done[1:]):
        differ = [(idx, base[idx][3], ref) for idx, src, _, ref in items
                  if idx in base and base[idx][1] == src and base[idx][3] != ref]
        if differ:
            idx, a, b = differ[0]
            raise EvalError(f"--compare needs the same references, and {jobs[0].label} and {job.label} differ on "
                            f"{len(differ)} item(s) (first: item {idx}, {a[:40]!r} vs {b[:40]!r}); evaluate them "
                            "separately, or resubmit with the same --references file")


def job_triples(conn: psycopg.Connection, job: Job, *, partial: bool = False) -> tuple[list[str], list[str], list[str]]:
    """(sources, outputs, references) of the job's translated items that have a reference."""
    done = done_items(conn, job, partial=partial)
    return [d[1] for d in done], [d[2] for d in done], [d[3] for d in done]


def evaluate(conn: psycopg.Connection, job: Job, *, comet: str | None = None, partial: bool = False,
             comet_batch_size: int = 8, warn: Callable[[str], None] | None = None,
             origin: str | None = None) -> list[Score]:
    """Score the job and store the scores (COMET only when ``comet`` names a checkpoint),
    with COMET's per-item scores; ``warn`` hears about blank references. ``origin`` (llm
    or tm) scores only the outputs of that origin: the model's alone, apart from the
    memory's reused translations. Those scores are returned, not stored (a job's stored
    scores are over all its items, which ``--compare`` and experiments read)."""
    if origin is not None and origin not in ORIGINS:
        raise EvalError(f"unknown origin {origin!r}; expected one of {', '.join(ORIGINS)}")
    done = done_items(conn, job, partial=partial, origin=origin)
    if warn is not None and (w := blank_reference_warning(job, done)):
        warn(w)
    idxs = [d[0] for d in done]
    sources, hyps, refs = [d[1] for d in done], [d[2] for d in done], [d[3] for d in done]
    scores = sacrebleu_scores(hyps, refs, job.tgt_lang)
    if comet:
        scores.append(comet_score(sources, hyps, refs, comet, batch_size=comet_batch_size))
    if origin is not None:
        return [replace(s, signature=f"{s.signature}|origin:{origin}") for s in scores]
    with conn.transaction():
        for s in scores:
            segments = dict(zip(idxs, s.segments)) if s.segments is not None else None
            insert_score(conn, job.id, s.metric, s.score, s.signature, s.n_items, segments)
    return scores


def term_summary(conn: psycopg.Connection, job: Job) -> dict[str, Any] | None:
    """Glossary term accuracy of a job's done items (docs/glossary.md): the required target
    terms the outputs hold, of those their sources call for; None for a job without a glossary."""
    name = job.params.get("glossary")
    if not name:
        return None
    found, required = term_accuracy(job_term_checks(conn, job.id))
    return {"glossary": name, "found": found, "required": required,
            "accuracy": round(100 * found / required, 2) if required else None}


def latest_scores(conn: psycopg.Connection, job_id: int) -> dict[str, dict[str, Any]]:
    rows = latest_score_rows(conn, job_id)
    return {m: {"score": s, "signature": sig, "n_items": n, "created_at": t} for m, s, sig, n, t in rows}


def ensure_scores(conn: psycopg.Connection, job: Job, *, comet: str | None = None, partial: bool = False,
                  warn: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """The job's latest stored scores, BLEU and chrF scored first when missing (COMET too
    when ``comet`` names a checkpoint), so tables never rescore what is stored."""
    have = latest_scores(conn, job.id)
    if "bleu" not in have or "chrf" not in have or (comet and "comet" not in have):
        evaluate(conn, job, comet=comet if comet and "comet" not in have else None, partial=partial, warn=warn)
        have = latest_scores(conn, job.id)
    return have


def common_items(done: Sequence[Sequence[tuple[int, str, str, str]]]) -> list[int]:
    """The item indices every job translated, with the same source sentence in all: the
    items a paired test may compare."""
    by_idx = [{d[0]: d for d in items} for items in done]
    common = sorted(set.intersection(*(set(d) for d in by_idx))) if by_idx else []
    return [i for i in common if len({d[i][1] for d in by_idx}) == 1]


def item_statistics(metric: str, tgt_lang: str, hypotheses: Sequence[str],
                    references: Sequence[str]) -> np.ndarray:
    """Per-item sufficient statistics of a sacrebleu metric (items x statistics, n-gram
    matches and lengths for BLEU, character and word n-gram counts for chrF): a corpus
    score is computed from their sum, so a resampled test set is scored by summing rows
    (what sacreBLEU's own bootstrap does)."""
    m = sacrebleu_metric(metric, tgt_lang)
    return np.asarray(m._extract_corpus_statistics(list(hypotheses), [list(references)]), dtype=np.float64)


def score_from_statistics(metric: str, tgt_lang: str) -> Callable[[np.ndarray], float]:
    """The corpus score from summed statistics: sacrebleu's for BLEU and chrF; for COMET,
    whose statistics are (segment score, 1) per item, the mean segment score."""
    if metric == "comet":
        return lambda summed: float(summed[0] / summed[1])
    m = sacrebleu_metric(metric, tgt_lang)
    return lambda summed: float(m._compute_score_from_stats(list(summed)).score)


# --------------------------------------------------------------------------- model labels
def model_label(spec: str) -> str:
    """A short name for a backend spec in tables: the last path part of what follows the
    backend kind, without a .gguf suffix (``hf:/models/xglm-564M`` -> ``xglm-564M``,
    ``openai:gpt-4o-mini`` -> ``gpt-4o-mini``)."""
    kind, sep, rest = spec.partition(":")
    body = rest if sep and "/" not in kind and "\\" not in kind else spec
    name = body.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or body
    return name[:-5] if name.lower().endswith(".gguf") and len(name) > 5 else name


def model_labels(specs: Sequence[str]) -> dict[str, str]:
    """A distinct short label per distinct spec: its :func:`model_label`, or the whole
    spec when two specs would share one."""
    short = {s: model_label(s) for s in dict.fromkeys(specs)}
    clash = {lab for lab in short.values() if sum(1 for v in short.values() if v == lab) > 1}
    return {s: (s if lab in clash else lab) for s, lab in short.items()}


def compare(conn: psycopg.Connection, jobs: Sequence[Job], *, comet: str | None = None, partial: bool = False,
            baseline: int = 0, n_samples: int = DEFAULT_SAMPLES,
            warn: Callable[[str], None] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per job (its method and settings), one column per metric (latest stored
    score; BLEU/chrF are computed first for a job that has none, COMET when ``comet`` is
    given). With two jobs or more, each row but the baseline's (``jobs[baseline]``) also
    holds ``significance``: per metric, the paired bootstrap's mean, 95% interval and
    p-value against the baseline, over the items every job translated.
    Jobs with different references are refused (EvalError) before anything is stored;
    ``warn`` hears about blank references. Returns (metric columns, rows)."""
    if len(jobs) > 1:
        done = [done_items(conn, job, partial=partial) for job in jobs]
        check_same_references(jobs, done)
        for job, items in zip(jobs, done):
            if warn is not None and (w := blank_reference_warning(job, items)):
                warn(w)
    rows = []
    for job in jobs:
        have = ensure_scores(conn, job, comet=comet, partial=partial, warn=warn if len(jobs) == 1 else None)
        rows.append({"job_id": job.id, "name": job.name, "method": job.method, "k": job.k, "model": job.model,
                     "template": job.template, "direction": f"{job.src_lang}-{job.tgt_lang}",
                     **{m: have[m]["score"] for m in METRICS if m in have},
                     "n_items": max((v["n_items"] for v in have.values()), default=0)})
    columns = [m for m in METRICS if any(m in r for r in rows)]
    if len(jobs) > 1:
        for i, sig in enumerate(paired_significance(conn, jobs, columns, baseline=baseline, partial=partial,
                                                    n_samples=n_samples)):
            rows[i]["baseline"] = i == baseline
            rows[i]["significance"] = sig
    return columns, rows


def paired_significance(conn: psycopg.Connection, jobs: Sequence[Job], metrics: Sequence[str], *,
                        baseline: int = 0, partial: bool = False,
                        n_samples: int = DEFAULT_SAMPLES) -> list[dict[str, dict[str, Any]]]:
    """Per job, per metric: {"mean", "ci", "p_value", "n_items"} of a paired bootstrap
    against ``jobs[baseline]`` (scoi.jobs.significance), over the items (same idx, same
    source) that every job translated. A metric without per-item scores for some job
    (COMET scored before they were kept) gets no entry."""
    done_lists = [done_items(conn, job, partial=partial) for job in jobs]
    done = [{d[0]: d for d in items} for items in done_lists]
    common = common_items(done_lists)  # the same source sentence in every job
    out: list[dict[str, dict[str, Any]]] = [{} for _ in jobs]
    if not common:
        return out
    order = [baseline] + [i for i in range(len(jobs)) if i != baseline]
    refs = [done[baseline][i][3] for i in common]
    for metric in metrics:
        if metric == "comet":
            segs = [latest_segment_scores(conn, jobs[j].id, "comet") for j in order]
            if any(any(i not in s for i in common) for s in segs):
                continue
            per_job = [[s[i] for i in common] for s in segs]
            results = paired_bootstrap_means(per_job[0], per_job[1:], n_samples=n_samples)
        else:
            outputs = [[done[j][i][2] for i in common] for j in order]
            results = paired_bootstrap_sacrebleu(sacrebleu_metric(metric, jobs[baseline].tgt_lang), outputs[0],
                                                 outputs[1:], refs, n_samples=n_samples)
        for j, r in zip(order, results):
            out[j][metric] = {"score": round(r.score, 4), "mean": round(r.mean, 4), "ci": round(r.ci, 4),
                              "p_value": None if r.p_value is None else round(r.p_value, 4),
                              "n_items": len(common)}
    return out


__all__ = ["EvalError", "Score", "METRICS", "sacrebleu_scores", "comet_score", "resolve_comet_checkpoint",
           "evaluate", "compare", "latest_scores", "job_triples", "done_items", "paired_significance",
           "sacrebleu_metric", "blank_reference_warning", "check_same_references", "term_summary", "ensure_scores",
           "common_items", "item_statistics", "score_from_statistics", "model_label", "model_labels"]
