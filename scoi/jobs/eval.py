"""Score a job's outputs against its references: BLEU and chrF (sacrebleu), COMET.

BLEU and chrF are corpus-level sacrebleu scores with their signatures, so a number can
be reproduced. COMET runs only from a checkpoint available on this machine (a local
``.ckpt`` file, a downloaded model directory, or a hub name already in the Hugging Face
cache): scoi never downloads a model, and says so at once when one is missing. Scores
are stored in ``job_score``; ``compare`` reads the latest ones into one table, one row
per job (method), one column per metric, like the docs/method.md §8 figures.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import psycopg

from scoi.config import environment
from scoi.jobs.store import Job, insert_score, latest_score_rows, scored_items

METRICS = ("bleu", "chrf", "comet")
COMET_SCALE = 100  # stored x100, as docs/method.md §8 reports COMET


class EvalError(RuntimeError):
    """A job that cannot be scored (no references, unfinished items, no COMET model)."""


@dataclass
class Score:
    metric: str
    score: float
    signature: str
    n_items: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- sacrebleu
def sacrebleu_scores(hypotheses: Sequence[str], references: Sequence[str], tgt_lang: str) -> list[Score]:
    """Corpus BLEU (tokeniser chosen by sacrebleu for the target language) and chrF."""
    from sacrebleu.metrics import BLEU, CHRF

    hyps, refs = list(hypotheses), [list(references)]
    bleu = BLEU(trg_lang=tgt_lang)
    chrf = CHRF()
    b = bleu.corpus_score(hyps, refs)
    c = chrf.corpus_score(hyps, refs)
    return [Score("bleu", round(b.score, 4), bleu.get_signature().format(), len(hyps)),
            Score("chrf", round(c.score, 4), chrf.get_signature().format(), len(hyps))]


# --------------------------------------------------------------------------- COMET
@contextmanager
def _offline() -> Iterator[None]:
    """Hugging Face libraries in offline mode: a missing file fails at once, no download."""
    patched = None
    try:  # huggingface_hub reads HF_HUB_OFFLINE at import: patch it if already imported
        import huggingface_hub.constants as hc

        patched, hc.HF_HUB_OFFLINE = hc.HF_HUB_OFFLINE, True
    except Exception:  # noqa: BLE001 - not installed: nothing to patch
        hc = None
    try:
        with environment({k: "1" for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")}):
            yield
    finally:
        if hc is not None and patched is not None:
            hc.HF_HUB_OFFLINE = patched


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
    with _offline():
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
    with _offline():
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
                 f"comet:{spec}|ckpt:{ckpt.name}|scale:{COMET_SCALE}", len(data))


# --------------------------------------------------------------------------- jobs
def job_triples(conn: psycopg.Connection, job: Job, *, partial: bool = False) -> tuple[list[str], list[str], list[str]]:
    """(sources, outputs, references) of the job's items that have a reference."""
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
    done = [r for r in rows if r[3] == "done"]
    if not done:
        raise EvalError(f"{job.label} has no translated items yet")
    return [r[0] for r in done], [r[1] or "" for r in done], [r[2] for r in done]


def evaluate(conn: psycopg.Connection, job: Job, *, comet: str | None = None, partial: bool = False,
             comet_batch_size: int = 8) -> list[Score]:
    """Score the job and store the scores (COMET only when ``comet`` names a checkpoint)."""
    sources, hyps, refs = job_triples(conn, job, partial=partial)
    scores = sacrebleu_scores(hyps, refs, job.tgt_lang)
    if comet:
        scores.append(comet_score(sources, hyps, refs, comet, batch_size=comet_batch_size))
    with conn.transaction():
        for s in scores:
            insert_score(conn, job.id, s.metric, s.score, s.signature, s.n_items)
    return scores


def latest_scores(conn: psycopg.Connection, job_id: int) -> dict[str, dict[str, Any]]:
    rows = latest_score_rows(conn, job_id)
    return {m: {"score": s, "signature": sig, "n_items": n, "created_at": t} for m, s, sig, n, t in rows}


def compare(conn: psycopg.Connection, jobs: Sequence[Job], *, comet: str | None = None,
            partial: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per job (its method and settings), one column per metric (latest stored
    score; BLEU/chrF are computed first for a job that has none, COMET when ``comet`` is
    given). Returns (metric columns, rows)."""
    rows = []
    for job in jobs:
        have = latest_scores(conn, job.id)
        if "bleu" not in have or "chrf" not in have or (comet and "comet" not in have):
            evaluate(conn, job, comet=comet if comet and "comet" not in have else None, partial=partial)
            have = latest_scores(conn, job.id)
        rows.append({"job_id": job.id, "name": job.name, "method": job.method, "k": job.k, "model": job.model,
                     "template": job.template, "direction": f"{job.src_lang}-{job.tgt_lang}",
                     **{m: have[m]["score"] for m in METRICS if m in have},
                     "n_items": max((v["n_items"] for v in have.values()), default=0)})
    columns = [m for m in METRICS if any(m in r for r in rows)]
    return columns, rows


__all__ = ["EvalError", "Score", "METRICS", "sacrebleu_scores", "comet_score", "resolve_comet_checkpoint",
           "evaluate", "compare", "latest_scores", "job_triples"]
