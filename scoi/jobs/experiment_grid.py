"""An experiment's grid: its cells (model x method x k x order x template x seed, one job
each), the spec they come from, model labels, and the checks run before anything is
stored. Pure: the database side is scoi.jobs.experiment, the table scoi.jobs.experiment_table."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from scoi.core import defaults
from scoi.core.limits import check_range
from scoi.core.methods import REGISTRY
from scoi.core.names import check_name
from scoi.jobs.eval import model_label
from scoi.jobs.spec import check_backend_options, Job, JobError, JobSpec

#: Seeds a ``random`` cell runs with; its row is their mean (docs/method.md §8).
RANDOM_SEEDS = defaults.RANDOM_SEEDS
#: p below this marks a score as significantly different from the baseline's.
ALPHA = 0.05
#: The coverage of the bootstrap interval each score is shown with.
CONFIDENCE = 0.95
#: What a seeded row's ``std`` is: the sample standard deviation (n - 1) of its seeds' scores.
SPREAD = "sample standard deviation of the seeds' scores"
#: A model label: short, and safe inside job names and table headers.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}")

#: An experiment's jobs never reuse the translation memory (scoi.reuse): they measure the model.
REUSE = "off"


@dataclass(frozen=True)
class Cell:
    """One point of the grid: one job. ``model`` is the model's label ("" in a grid built
    without models)."""

    method: str
    k: int
    order: str
    template: str
    seed: int = 0
    model: str = ""

    @property
    def line(self) -> tuple[str, int, str, str]:
        """The table line the cell belongs to, whatever the model (a random cell's seeds share one)."""
        return self.method, self.k, self.order, self.template

    @property
    def row(self) -> tuple[str, str, int, str, str]:
        """The result row: the line, for one model."""
        return (self.model, *self.line)

    def job_name(self, experiment: str) -> str:
        where = f"{experiment}/{self.model}" if self.model else experiment
        return f"{where}/{self.method}-k{self.k}-{self.order}-{self.template}-s{self.seed}"


def grid(methods: Sequence[str], ks: Sequence[int], orders: Sequence[str], templates: Sequence[str],
         *, random_seeds: int = RANDOM_SEEDS, models: Sequence[str] = ("",)) -> list[Cell]:
    """The cells of a grid, model after model (a worker loads each model once), in the
    order given, without repeats. A method without examples (``zero``) has one cell per
    template (k = 0, the first order), whatever ks and orders say; a seeded one
    (``random``) one per seed."""
    cells: list[Cell] = []
    for model in models:
        for method in methods:
            entry = REGISTRY.get(method.partition(":")[0])  # an unknown method is refused at submit
            examples, seeds = (entry.examples, random_seeds if entry.seeded else 1) if entry else (True, 1)
            for template in templates:
                for k in ks:
                    for order in orders:
                        kk, oo = (k, order) if examples else (0, orders[0])
                        for seed in range(seeds):
                            cell = Cell(method, kk, oo, template, seed, model)
                            if cell not in cells:
                                cells.append(cell)
    return cells


def parse_models(values: Sequence[str]) -> dict[str, str]:
    """Label -> backend spec of ``--model`` values, in order: ``LABEL=SPEC`` names a model,
    a bare ``SPEC`` gets :func:`model_label` (the last part of its path). Two models under
    one label, or one model given twice, are refused (JobError)."""
    out: dict[str, str] = {}
    for value in values:
        head, sep, rest = value.partition("=")
        label, spec = (head, rest.strip()) if sep and LABEL.fullmatch(head) else ("", value.strip())
        if not spec:
            raise JobError(f"--model {value!r}: expected a backend spec (hf:DIR, openai:MODEL, ...) or LABEL=SPEC")
        label = label or model_label(spec)
        if not LABEL.fullmatch(label):
            raise JobError(f"--model {value!r}: its label {label!r} is not a short name (letters, digits, . _ + -, "
                           "at most 40); name it with LABEL=SPEC, e.g. xglm=" + spec)
        if spec in out.values():
            raise JobError(f"--model {spec!r} is given twice")
        if label in out:
            raise JobError(f"models {out[label]!r} and {spec!r} share the label {label!r}; name them with "
                           f"LABEL=SPEC, e.g. --model a={out[label]} --model b={spec}")
        out[label] = spec
    if not out:
        raise JobError("an experiment needs one --model at least")
    return out


def merge_models(stored: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """The experiment's models after a rerun: the stored ones, then the given ones it
    lacks. A label already naming another model, or a model under another label, is a
    conflict (JobError): cells and job names are keyed by the label."""
    merged = dict(stored)
    for label, spec in given.items():
        if label in merged and merged[label] != spec:
            raise JobError(f"the experiment's model {label!r} is {merged[label]!r}, not {spec!r}; give the new "
                           f"model another label (--model OTHER={spec})")
        other = next((lab for lab, sp in merged.items() if sp == spec and lab != label), None)
        if other is not None:
            raise JobError(f"model {spec!r} is in the experiment as {other!r}; rerun with --model {other}={spec}")
        merged[label] = spec
    return merged


@dataclass
class ExperimentSpec:
    """What to compare, on which data, with which models (label -> backend spec); ``job``
    settings every cell's job shares (pool, max_new_tokens, backend options, ...)."""

    name: str
    src: str
    tgt: str
    models: dict[str, str]
    methods: list[str]
    ks: list[int] = field(default_factory=lambda: [defaults.K])
    orders: list[str] = field(default_factory=lambda: [defaults.ORDER])
    templates: list[str] = field(default_factory=lambda: [defaults.TEMPLATE])
    baseline: str | None = None
    random_seeds: int = RANDOM_SEEDS
    pool: int = defaults.POOL
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    max_attempts: int = defaults.MAX_ATTEMPTS
    backend_options: dict[str, Any] = field(default_factory=dict)
    embedder: str | None = None  # fuzzy / fuzzy-ann: the embedding model (default: the paper's)
    ctq_model: str | None = None  # ctq: the stored CTQ model (default: the direction's newest fitted one)

    def cells(self) -> list[Cell]:
        return grid(self.methods, self.ks, self.orders, self.templates, random_seeds=self.random_seeds,
                    models=list(self.models))

    def baseline_method(self) -> str:
        """The named baseline, else bm25 when in the grid (the paper's usual reference), else the first method."""
        if self.baseline:
            return self.baseline
        return "bm25" if "bm25" in self.methods else self.methods[0]

    def job_spec(self, cell: Cell) -> JobSpec:
        """The cell's job. A method ``rbm25:VARIANT`` (e.g. ``rbm25:ctq`` beside
        ``rbm25``, whose variant is the default ``moses``) compares R-BM25 variants. Never
        reuses the translation memory (``reuse="off"``): an experiment measures the model,
        and a test sentence stored in the memory must not score the memory's translation."""
        method, _, variant = cell.method.partition(":")
        return JobSpec(src=self.src, tgt=self.tgt, model=self.models[cell.model], method=method, k=cell.k,
                       template=cell.template, name=cell.job_name(self.name), max_attempts=self.max_attempts,
                       pool=self.pool, order=cell.order, seed=cell.seed, max_new_tokens=self.max_new_tokens,
                       backend_options=self.backend_options, embedder=self.embedder, reuse=REUSE,
                       **({"rbm25_variant": variant} if variant else {}),
                       **({"ctq_model": self.ctq_model} if method == "ctq" else {}))

    def grid_json(self) -> dict[str, Any]:
        """The settings a rerun must repeat (the models are compared apart: a rerun may add one)."""
        d = asdict(self)
        for key in ("name", "src", "tgt", "models"):
            d.pop(key)
        if d["ctq_model"] is None:  # absent unless given: experiments stored before it still resume
            d.pop("ctq_model")
        d["baseline"] = self.baseline_method()
        return d


def input_hash(sources: Sequence[str], references: Sequence[str]) -> str:
    """Identifies the test set, so a rerun on another file is refused instead of mixed in."""
    h = hashlib.sha256()
    for s, r in zip(sources, references):
        h.update(s.encode() + b"\t" + r.encode() + b"\n")
    return h.hexdigest()


@dataclass
class Experiment:
    id: int
    name: str
    src: str
    tgt: str
    models: dict[str, str]
    grid: dict[str, Any]
    cells: list[tuple[Cell, Job]]
    result: dict[str, Any] | None = None


def stored_models(grid_json: Mapping[str, Any], model: str) -> dict[str, str]:
    """Label -> spec of a stored experiment: its grid's ``models``, or (an experiment made
    before several models were possible) its one ``model`` under its short label."""
    models = grid_json.get("models")
    if models:
        return {m["label"]: m["model"] for m in models}
    return {model_label(model): model}


def check_spec(spec: ExperimentSpec) -> None:
    """Refuse, before anything is stored, what no cell's job would take: a name with
    control characters, numbers out of range, a secret in the backend options (the grid,
    stored with the experiment, holds them). Each job is checked again when submitted."""
    try:
        check_name("experiment", spec.name)
        for k in spec.ks:
            check_range("k", k, "--k")
        for limit in ("random_seeds", "pool", "max_new_tokens", "max_attempts"):
            check_range(limit, getattr(spec, limit))
    except ValueError as e:
        raise JobError(str(e)) from None
    if not spec.models:
        raise JobError("an experiment needs one --model at least")
    check_backend_options(spec.backend_options)


__all__ = ["ALPHA", "CONFIDENCE", "Cell", "Experiment", "ExperimentSpec", "LABEL", "RANDOM_SEEDS", "REUSE", "SPREAD",
           "check_spec", "grid", "input_hash", "merge_models", "parse_models", "stored_models"]
