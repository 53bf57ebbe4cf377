"""``scoi ctq train``: CTQ Scorer's training data made on scoi's workers, and its regressor fitted.

As the released code does (AI4Bharat/CTQScorer, ``generate_ctqscorer_train_data.py``,
``cummulate_features.py``, ``ctqscorer.py``): each development sentence's BM25 pool gives
one tuple per candidate; the tuple's one-shot prompt (that candidate as the only example)
is translated by the LLM and the translation's score against the reference (``metric``)
is the target. The translations are one job (each item: a development sentence, its
example fixed in ``ctq_train_item``), so a killed training resumes where it stopped; the
features are computed at submit and stored with the tuples; the regressor is fitted when
the job is done and stored with its feature list and signature (scoi.ctq).
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import psycopg
from psycopg.rows import dict_row

from scoi.core import ctq_features as cf
from scoi.core import defaults
from scoi.core.ctq_regressor import Regressor, model_signature
from scoi.core.names import BadName, check_name
from scoi.ctq import SQL, CtqError, CtqModel, FeatureSource, available_models, find_model, model_row
from scoi.jobs.create import new_job
from scoi.jobs.eval import EvalError, comet_score, sacrebleu_metric
from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.store import add_items
from scoi.jobs.supervisor import run_workers
from scoi.jobs.validate import validate
from scoi.jobs.worker import Worker, WorkerOptions
from scoi.selection.selector import SelectionError, Selector

METRICS = ("chrf", "bleu", "comet")
#: The released regressor's defaults (``ctqscorer.py``: 4 hidden layers of 128, batch 64,
#: learning rate 0.01, 40 epochs); activation and optimizer were swept there, fixed here.
HIDDEN, LAYERS, BATCH, LEARNING_RATE, EPOCHS = 128, 4, 64, 0.01, 40
#: Rows below which no validation split is held out (sklearn's early stopping needs some).
EARLY_STOPPING_ROWS = 50


@dataclass
class TrainRequest:
    """What ``scoi ctq train`` was asked for."""

    src: str
    tgt: str
    dev: list[str]
    refs: list[str]
    model: str
    metric: str = defaults.CTQ_METRIC
    pool: int = defaults.POOL
    name: str | None = None
    embedder: str | None = None
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    #: the LLM's likelihoods as features (a local model only): each selection then runs the LLM
    likelihood: bool = True
    backend_options: dict[str, Any] = field(default_factory=dict)

    def dev_hash(self) -> str:
        """What the training data depends on besides the corpus: a rerun with another
        input under the same name is refused, not mixed in."""
        blob = json.dumps([self.src, self.tgt, self.dev, self.refs, self.model, self.metric, self.pool,
                           self.embedder, self.max_new_tokens, self.likelihood], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def default_name(self) -> str:
        return f"ctq-{self.src}-{self.tgt}-{self.metric}-{self.dev_hash()[:8]}"


def check_request(req: TrainRequest) -> None:
    """Refuse bad input with one line, before anything is stored."""
    if req.metric not in METRICS:
        raise CtqError(f"unknown metric {req.metric!r}; expected one of {', '.join(METRICS)}")
    if len(req.dev) != len(req.refs):
        raise CtqError(f"the development references have {len(req.refs)} lines but the sentences {len(req.dev)}; "
                       "they must be aligned line by line")
    blank = next((i for i, s in enumerate(req.dev, 1) if not s.strip()), None)
    if blank is not None:
        raise CtqError(f"development sentence {blank} is blank; every line needs a sentence to translate")
    if not req.dev:
        raise CtqError("the development file has no sentences")
    if req.name is not None:
        try:
            check_name("CTQ model", req.name)
        except BadName as e:
            raise CtqError(str(e)) from None


def start_training(conn: psycopg.Connection, url: str, req: TrainRequest,
                   progress: Callable[[str], None] = lambda msg: None) -> CtqModel:
    """The training named ``req.name`` (default from its inputs): resumed when it exists
    with the same inputs, else created (features of every tuple, the one-shot job, the
    model row) in one transaction. CtqError for the same name with other inputs."""
    check_request(req)
    name = req.name or req.default_name()
    with conn.cursor(row_factory=dict_row) as cur:
        existing = model_row(cur.execute(SQL["model_by_name"], {"name": name}).fetchone())
    if existing is not None:
        if existing.dev_hash != req.dev_hash():
            raise CtqError(f"a CTQ Scorer model named {name!r} was trained with other inputs (development set, "
                           "model, metric, pool or embedder); choose another --name")
        return existing
    spec = JobSpec(src=req.src, tgt=req.tgt, model=req.model, method="bm25", k=1, name=f"ctq-train:{name}",
                   pool=req.pool, reuse="off", max_new_tokens=req.max_new_tokens,
                   backend_options=req.backend_options, ctq_train=name)
    try:
        validate(conn, spec)
        sel = Selector(req.src, req.tgt, url=url, method="bm25", pool=req.pool)
    except (JobError, SelectionError, ValueError) as e:
        raise CtqError(str(e)) from None
    have = available_models(req.model, req.embedder, req.likelihood)
    features = list(cf.usable(have))
    source = FeatureSource(features, embedder=req.embedder, llm=req.model)
    sources, refs, tuples = [], [], []
    with sel:
        for i, (text, ref) in enumerate(zip(req.dev, req.refs)):
            rows = sel.pool_of(sel.analyzer.tokenize(text)).rows
            m = source.matrix(text, [r.src for r in rows], [r.tgt for r in rows], [r.score for r in rows])
            for r, values in zip(rows, m):
                sources.append(text)
                refs.append(ref)
                tuples.append((i, r.pair_id, [float(v) for v in values]))
            if (i + 1) % max(1, len(req.dev) // 10) == 0 or i + 1 == len(req.dev):  # about ten lines
                progress(f"features: {i + 1} of {len(req.dev)} development sentences, {len(tuples)} tuples")
    if not tuples:
        raise CtqError(f"no development sentence shares a word with the {req.src}-{req.tgt} corpus: "
                       "nothing to train on")
    try:
        with new_job(conn, spec) as job_id:
            add_items(conn, job_id, 0, sources, refs, spec.max_attempts)
            with conn.cursor() as cur:
                cur.execute(SQL["insert_model"], {
                    "name": name, "src": req.src, "tgt": req.tgt, "llm": req.model, "metric": req.metric,
                    "pool": req.pool, "features": features, "omitted": json.dumps(cf.omitted(have)),
                    "embedder": req.embedder, "job_id": job_id, "dev_hash": req.dev_hash()})
                with cur.copy(SQL["copy_train_items"]) as cp:
                    cp.set_types(["int8", "int4", "int4", "int8", "float8[]"])
                    for idx, (d, p, f) in enumerate(tuples):
                        cp.write_row((job_id, idx, d, p, f))
    except psycopg.errors.UniqueViolation:
        raise CtqError(f"a job named 'ctq-train:{name}' or a CTQ Scorer model named {name!r} was stored meanwhile "
                       "(another training under the name?); rerun to resume it, or choose another --name") from None
    with conn.cursor(row_factory=dict_row) as cur:
        return model_row(cur.execute(SQL["model_by_name"], {"name": name}).fetchone())


def targets(metric: str, outputs: Sequence[str], refs: Sequence[str], sources: Sequence[str], tgt: str,
            comet: str | None = None) -> list[float]:
    """Each one-shot translation's score against its reference: sentence chrF or BLEU
    (sacrebleu; the released code's ``bleu_score`` is ``sentence_bleu``), or segment COMET
    (x100) from a local checkpoint (the released code's target: ``comet_score``)."""
    if metric == "comet":
        if not comet:
            raise CtqError("--metric comet needs a local COMET checkpoint: --comet PATH (scoi downloads nothing)")
        try:
            return list(comet_score(sources, outputs, refs, comet).segments or [])
        except EvalError as e:
            raise CtqError(str(e)) from None
    m = sacrebleu_metric(metric, tgt)
    return [float(m.sentence_score(o, [r]).score) for o, r in zip(outputs, refs)]


class Fitted(NamedTuple):
    """A fitted regressor as scoi stores it, how it was fitted, and scikit-learn's estimator."""

    regressor: Regressor
    info: dict[str, Any]
    estimator: Any


def fit(x: np.ndarray, y: np.ndarray, *, seed: int = 0) -> Fitted:
    """Fit the released code's regressor shape with scikit-learn: min-max scaled features
    and target, an MLP of :data:`LAYERS` hidden ReLU layers of :data:`HIDDEN`, Adam, MSE,
    the best validation epoch kept (early stopping) when there are enough rows."""
    try:  # scikit-learn is the "llm" extra's: only training needs it, selection reads plain arrays
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import MinMaxScaler
    except ImportError as e:
        raise CtqError(f"fitting a CTQ Scorer needs scikit-learn ({e}): pip install 'scoi[llm]'") from None

    early = len(y) >= EARLY_STOPPING_ROWS
    mlp = MLPRegressor(hidden_layer_sizes=(HIDDEN,) * LAYERS, activation="relu", solver="adam",
                       batch_size=min(BATCH, len(y)), learning_rate_init=LEARNING_RATE, max_iter=EPOCHS,
                       random_state=seed, early_stopping=early, validation_fraction=0.1, n_iter_no_change=EPOCHS)
    model = TransformedTargetRegressor(regressor=make_pipeline(MinMaxScaler(), mlp), transformer=MinMaxScaler())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, y)
    scaler, net = model.regressor_[0], model.regressor_[-1]
    reg = Regressor(scaler.min_.astype(np.float64), scaler.scale_.astype(np.float64),
                    tuple(np.asarray(w, dtype=np.float64) for w in net.coefs_),
                    tuple(np.asarray(b, dtype=np.float64) for b in net.intercepts_),
                    float(model.transformer_.min_[0]), float(model.transformer_.scale_[0]), "relu")
    info = {"library": "scikit-learn", "version": _sklearn_version(), "estimator": "MLPRegressor",
            "hidden_layer_sizes": [HIDDEN] * LAYERS, "activation": "relu", "solver": "adam", "batch_size": BATCH,
            "learning_rate_init": LEARNING_RATE, "max_iter": EPOCHS, "early_stopping": early, "seed": seed,
            "epochs_run": int(net.n_iter_), "scaling": "MinMaxScaler (features and target)"}
    return Fitted(reg, info, model)


def store_fitted(conn: psycopg.Connection, model: CtqModel, reg: Regressor, info: dict[str, Any], n_rows: int) -> None:
    """Store a model's fitted regressor (its bytes, how it was fitted, its signature): once."""
    data = reg.to_bytes()
    with conn.transaction():
        cur = conn.execute(SQL["set_fitted"], {"id": model.id, "model": data, "regressor": json.dumps(info),
                                               "n_rows": n_rows,
                                               "signature": model_signature(model.name, model.features, data)})
        if cur.rowcount != 1:
            raise CtqError(f"CTQ Scorer model {model.name!r} is fitted already")


def _sklearn_version() -> str:
    import sklearn

    return sklearn.__version__


def finish_training(conn: psycopg.Connection, model: CtqModel, *, comet: str | None = None,
                    seed: int = 0) -> CtqModel:
    """Fit the regressor on the done tuples of the model's training job and store it.
    CtqError while items are still queued or running, or with fewer than two done rows."""
    if model.status == "fitted":
        return model
    if model.job_id is None:
        raise CtqError(f"the training job of {model.name!r} was deleted; train again under another --name")
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(SQL["train_rows"], {"job_id": model.job_id}).fetchall()
    pending = sum(r["status"] in ("queued", "running") for r in rows)
    if pending:
        raise CtqError(f"{pending} of {len(rows)} one-shot translations of {model.name!r} are not done yet: run "
                       f"workers (scoi worker --job {model.job_id}), then rerun scoi ctq train to fit")
    done = [r for r in rows if r["status"] == "done"]
    if len(done) < 2:
        raise CtqError(f"only {len(done)} of {len(rows)} one-shot translations of {model.name!r} succeeded; "
                       f"see scoi job status {model.job_id}")
    y = np.array(targets(model.metric, [r["output"] for r in done], [r["reference"] for r in done],
                         [r["source"] for r in done], model.tgt, comet), dtype=np.float64)
    x = np.array([r["features"] for r in done], dtype=np.float64).reshape(len(done), len(model.features))
    reg, info, _ = fit(x, y, seed=seed)
    info["target"] = {"metric": model.metric, "mean": round(float(y.mean()), 4), "min": float(y.min()),
                      "max": float(y.max())}
    info["train_mse"] = round(float(np.mean((reg.predict(x) - y) ** 2)), 6) if math.isfinite(y.sum()) else None
    store_fitted(conn, model, reg, info, len(done))
    return find_model(conn, model.name, model.src, model.tgt)


def run_job(url: str, model: CtqModel, *, workers: int = 1, batch_size: int = 8,
            progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Translate the training job's queued items: one worker in this process, or a pool
    of ``workers`` processes; both resume what a killed run left."""
    opts = WorkerOptions(batch_size=batch_size, burst=True, job_id=model.job_id)
    if workers > 1:
        stats = run_workers(workers, opts, url, progress=progress)
    else:
        with Worker(url, opts) as worker:
            stats = worker.run().to_dict()
    return {k: stats[k] for k in ("done", "failed", "requeued")}


__all__ = ["METRICS", "Fitted", "TrainRequest", "check_request", "finish_training", "fit", "run_job",
           "start_training", "store_fitted", "targets"]
