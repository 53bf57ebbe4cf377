"""The job options ``scoi job submit``, ``scoi schedule add`` and ``scoi experiment run``
share, declared once: :func:`job_options` adds them to a command and hands the command one
:class:`JobOptions`, so a new job setting reaches all three (and none loses one).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, fields
from typing import Any, Callable

import typer

from scoi.cli.common import (BACKEND_OPT_HELP, CTQ_MODEL_HELP, EMBEDDER_HELP, METHOD_HELP, ORDER_HELP, PARSER_HELP, RBM25_HELP,
                             WHERE_HELP, given_parsers, given_where, parse_key_values)
from scoi.core import defaults
from scoi.core.limits import LIMITS


@dataclass
class JobOptions:
    """The job settings given on the command line (a command may take a subset: the rest
    keep their defaults)."""

    src: str = ""
    tgt: str = ""
    model: str = ""
    method: str = defaults.METHOD
    k: int = defaults.K
    template: str = defaults.TEMPLATE
    max_attempts: int = defaults.MAX_ATTEMPTS
    pool: int = defaults.POOL
    corpus: list[str] | None = None
    fill: str = defaults.FILL
    order: str = defaults.ORDER
    seed: int = defaults.SEED
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    backend_opt: list[str] | None = None
    embedder: str | None = None
    rbm25_variant: str = defaults.RBM25_VARIANT
    parser: list[str] | None = None
    reuse: str = defaults.REUSE
    where: list[str] | None = None
    min_match: float | None = None
    glossary: str | None = None
    ctq_model: str | None = None

    def backend_options(self) -> dict[str, Any]:
        return parse_key_values(self.backend_opt or [], "--backend-opt")

    def spec(self, name: str | None = None) -> Any:
        """The JobSpec these options describe (``--backend-opt`` and ``--parser`` parsed)."""
        from scoi.jobs.spec import JobSpec

        return JobSpec(src=self.src, tgt=self.tgt, model=self.model, method=self.method, k=self.k,
                       template=self.template, name=name, max_attempts=self.max_attempts, pool=self.pool,
                       fill=self.fill, corpora=list(self.corpus or []) or None, order=self.order,
                       seed=self.seed, max_new_tokens=self.max_new_tokens, backend_options=self.backend_options(),
                       embedder=self.embedder, rbm25_variant=self.rbm25_variant,
                       parsers=given_parsers(self.parser or []), reuse=self.reuse,
                       where=given_where(self.where or []), min_match=self.min_match, glossary=self.glossary,
                       ctq_model=self.ctq_model)


def _options() -> dict[str, tuple[type | Any, Any]]:
    """Each option: (annotation, typer.Option), defaults taken from JobOptions."""
    d = {f.name: f.default for f in fields(JobOptions)}
    return {
        "src": (str, typer.Option(..., "--src", help="Source language code, e.g. fr.")),
        "tgt": (str, typer.Option(..., "--tgt", help="Target language code, e.g. en.")),
        "model": (str, typer.Option(..., "--model", "-m", help="Backend spec: hf:DIR, gguf:FILE, openai:MODEL, ...")),
        "method": (str, typer.Option(d["method"], "--method", help=METHOD_HELP)),
        "k": (int, typer.Option(d["k"], "-k", "--k", min=0, max=LIMITS["k"][1], help="Examples per prompt.")),
        "template": (str, typer.Option(d["template"], "--template",
                                       help="xglm | alpaca | path of a Jinja2 template (its text is read now and "
                                            "stored with the job; workers never open it).")),
        "max_attempts": (int, typer.Option(d["max_attempts"], "--max-attempts", min=1,
                                           max=LIMITS["max_attempts"][1], help="Attempts per item before it fails.")),
        "pool": (int, typer.Option(d["pool"], "--pool", min=1, max=LIMITS["pool"][1],
                                   help="Preselected candidates per sentence.")),
        "corpus": (list[str], typer.Option([], "--corpus", help="Pick examples from this corpus only (repeatable).")),
        "fill": (str, typer.Option(d["fill"], "--fill", help="none | random: fill up to k with random examples.")),
        "order": (str, typer.Option(d["order"], "--order", help=ORDER_HELP)),
        "seed": (int, typer.Option(d["seed"], "--seed", min=LIMITS["seed"][0], max=LIMITS["seed"][1],
                                   help="Seed for random selection / order.")),
        "max_new_tokens": (int, typer.Option(d["max_new_tokens"], "--max-new-tokens", min=1,
                                             max=LIMITS["max_new_tokens"][1], help="Generation limit per item.")),
        "backend_opt": (list[str], typer.Option([], "--backend-opt", help=BACKEND_OPT_HELP)),
        "embedder": (str | None, typer.Option(None, "--embedder", help=EMBEDDER_HELP)),
        "rbm25_variant": (str, typer.Option(d["rbm25_variant"], "--rbm25-variant", help=RBM25_HELP)),
        "ctq_model": (str | None, typer.Option(None, "--ctq-model", help=CTQ_MODEL_HELP)),
        "parser": (list[str], typer.Option([], "--parser", help=PARSER_HELP)),
        "reuse": (str, typer.Option(d["reuse"], "--reuse", help=(
            "exact: an item whose source is stored verbatim (after whitespace and Unicode normalisation; within "
            "--corpus and --where) gets the stored translation, no model call (origin tm); off: the model "
            "translates every item."))),
        "where": (list[str], typer.Option([], "--where", help=WHERE_HELP)),
        "min_match": (float | None, typer.Option(None, "--min-match", min=0, max=100, help=(
            "Only examples whose match % (word-level edit-distance similarity, docs/method.md) is at least this; "
            "a prompt then holds fewer than k examples when too few qualify."))),
        "glossary": (str | None, typer.Option(None, "--glossary", help="A glossary's name (scoi glossary list): its "
                                              "terms found in each sentence go into the prompt, and each output is "
                                              "checked for the required target terms (docs/glossary.md).")),
    }


#: What ``scoi experiment run`` takes from the group (its grid options replace method, k,
#: order and template; each cell is a job with the rest at their defaults).
EXPERIMENT = ("src", "tgt", "pool", "max_new_tokens", "backend_opt", "embedder", "ctq_model")  # --model: its own, repeatable


def job_options(only: tuple[str, ...] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the job options (all, or ``only`` these) to a Typer command after its own
    parameters; the command receives them as ``opts: JobOptions``."""
    declared = _options()
    names = [n for n in declared if only is None or n in only]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != "opts"]
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=declared[n][1],
                                   annotation=declared[n][0]) for n in names]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            opts = JobOptions(**{n: kwargs.pop(n) for n in names})
            return fn(opts=opts, **kwargs)

        command.__signature__ = sig.replace(parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                                                        for p in own] + added)
        command.__annotations__ = {**{k: v for k, v in fn.__annotations__.items() if k != "opts"},
                                   **{n: declared[n][0] for n in names}}
        return command

    return decorate


__all__ = ["EXPERIMENT", "JobOptions", "job_options"]
