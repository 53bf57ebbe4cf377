"""``scoi ctq train | list``: CTQ Scorer models trained inside scoi, for ``--method ctq``."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import BACKEND_OPT_HELP, database_url, emit_json, fail, parse_key_values, print_rows, say
from scoi.core import defaults
from scoi.core.limits import LIMITS

ctq_app = typer.Typer(help="CTQ Scorer: a learned example ranker trained on one-shot translations "
                           "(docs/method.md, CTQ Scorer); use it with --method ctq.", no_args_is_help=True)

METRIC_HELP = ("Score of each one-shot translation against its reference, the regressor's target: chrf | bleu "
               "(sacrebleu, sentence level) | comet (needs --comet CHECKPOINT; the released code's choice).")


@ctq_app.command("train")
def train(
    src: str = typer.Option(..., "--src", help="Source language code."),
    tgt: str = typer.Option(..., "--tgt", help="Target language code."),
    dev: Path = typer.Option(..., "--dev", help="Development sentences, one per line (source language); never "
                                                "the test set."),
    dev_ref: Path = typer.Option(..., "--dev-ref", help="Their reference translations, line by line."),
    model: str = typer.Option(..., "--model", "-m", help="The LLM whose one-shot translations are scored: hf:DIR, "
                                                         "gguf:FILE, openai:MODEL, ... (hf/gguf: its likelihoods are "
                                                         "features too)."),
    metric: str = typer.Option(defaults.CTQ_METRIC, "--metric", help=METRIC_HELP),
    pool: int = typer.Option(defaults.POOL, "--pool", min=1, max=LIMITS["pool"][1],
                             help="BM25 candidates per development sentence: one training tuple each."),
    name: str | None = typer.Option(None, "--name", help="The model's name (default: from the direction, metric and "
                                                         "a hash of the inputs); the same name again resumes."),
    embedder: str | None = typer.Option(None, "--embedder", help="sentence-transformers model (directory or name) for "
                                                                 "the labse_score_* similarity features (the released "
                                                                 "code: LaBSE); without it they are left out."),
    likelihood: bool = typer.Option(True, "--likelihood/--no-likelihood",
                                    help="With a local model (hf:/gguf:): its perplexity of the example (and of the "
                                         "example with the sentence) as features, as released; each ctq selection "
                                         "then runs the model over the pool. --no-likelihood leaves them out."),
    comet: str | None = typer.Option(None, "--comet", help="--metric comet: a local COMET checkpoint (.ckpt or model "
                                                           "directory)."),
    workers: int = typer.Option(1, "--workers", min=0, max=LIMITS["workers"][1],
                                help="Worker processes translating the training job here (1: in this process); 0: "
                                     "only submit it, for running `scoi worker`s, then rerun to fit."),
    batch_size: int = typer.Option(defaults.WORKER_BATCH, "--batch-size", min=1, max=LIMITS["batch_size"][1],
                                   help="Items a worker claims and generates together."),
    max_new_tokens: int = typer.Option(defaults.MAX_NEW_TOKENS, "--max-new-tokens", min=1,
                                       max=LIMITS["max_new_tokens"][1], help="Generation limit per translation."),
    backend_opt: list[str] = typer.Option([], "--backend-opt", help=BACKEND_OPT_HELP),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the model as one JSON object."),
) -> None:
    """Train a CTQ Scorer: one-shot translations of the development sentences with each BM25
    candidate as the example (a job on the workers), scored against the references, and a
    regressor fitted on the candidates' features.

    Resumable: a killed run keeps what was translated; the same command (or --name) resumes
    the job and then fits. The fitted model is stored in the database with its feature list
    and signature; `scoi select --method ctq` and jobs with --method ctq use it.
    """
    from scoi.ctq import CtqError
    from scoi.ctq_train import TrainRequest, finish_training, run_job, start_training
    from scoi.jobs.spec import JobError, read_lines
    from scoi.jobs.store import connect

    if metric == "comet" and not comet:
        fail("--metric comet needs a local COMET checkpoint: --comet PATH (scoi downloads nothing)")
    try:
        sources, refs = read_lines(dev), read_lines(dev_ref)
    except JobError as e:
        fail(str(e))
    req = TrainRequest(src.lower(), tgt.lower(), sources, refs, model, metric=metric, pool=pool, name=name,
                       embedder=embedder, max_new_tokens=max_new_tokens, likelihood=likelihood,
                       backend_options=parse_key_values(backend_opt, "--backend-opt"))
    url = database_url()
    with connect(url) as conn:
        try:
            trained = start_training(conn, url, req, progress=lambda msg: say(msg, err=True))
            if trained.status != "fitted":
                if workers == 0:
                    say(f"training job {trained.job_id} ({trained.name}) is queued: run `scoi worker --job "
                        f"{trained.job_id}`, then rerun this command to fit", err=True)
                    if json_out:
                        emit_json(trained.to_dict())
                    return
                say(f"translating the one-shot prompts of {trained.name} (job {trained.job_id})", err=True)
                counts = run_job(url, trained, workers=workers, batch_size=batch_size)
                say(f"{counts['done']} translated, {counts['failed']} failed", err=True)
                trained = finish_training(conn, trained, comet=comet)
        except CtqError as e:
            fail(str(e))
    if json_out:
        emit_json(trained.to_dict())
        return
    say(f"{trained.name}: {trained.src}-{trained.tgt}, fitted on {trained.n_rows} one-shot translations by "
        f"{trained.llm} ({trained.metric})")
    say(f"features: {', '.join(trained.features)}")
    for feature, why in trained.omitted.items():
        say(f"left out: {feature}: {why}")
    say(f"signature: {trained.signature}")


@ctq_app.command("list")
def list_cmd(json_out: bool = typer.Option(False, "--json", help="One JSON object per model.")) -> None:
    """The stored CTQ Scorer models: direction, LLM, metric, state, rows, signature."""
    from scoi.ctq import list_models
    from scoi.jobs.store import connect

    with connect(database_url()) as conn:
        rows = list_models(conn)
    if json_out:
        for r in rows:
            emit_json(r)
        return
    if not rows:
        say("no CTQ Scorer model yet: scoi ctq train --help", err=not sys.stdout.isatty())
        return
    print_rows(["name", "direction", "llm", "metric", "status", "rows", "features", "signature"],
               [[r["name"], f"{r['src_lang']}-{r['tgt_lang']}", r["llm"], r["metric"], r["status"],
                 str(r["n_rows"] or ""), str(len(r["features"])), r["signature"] or ""] for r in rows])


__all__ = ["ctq_app"]
