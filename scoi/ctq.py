"""CTQ Scorer inside scoi (docs/method.md §7.4): the stored models (``ctq_model``), the
inputs of their features (an embedder's vectors, a local LLM's token likelihoods: the I/O
that scoi.core.ctq_features leaves to its caller), and ``--method ctq``'s ranking of a
BM25 pool. Training is scoi.ctq_train's; the selector and the worker need only this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from scoi.backends.loader import load_backend
from scoi.backends.spec import parse_spec
from scoi.core import ctq_features as cf
from scoi.core.ctq_rank import CRITERION
from scoi.core.ctq_regressor import Regressor
from scoi.core.prompt import Example
from scoi.core.rbm25 import ctq_tokens
from scoi.db.queries import load
from scoi.embedding.embedder import Embedder

SQL = load("ctq")
#: The criterion a ctq pick is recorded with (its value: the predicted quality).


class CtqError(RuntimeError):
    """A CTQ Scorer operation that cannot be done (unknown model, bad input, nothing to fit)."""


@dataclass
class CtqModel:
    """A row of ``ctq_model``; ``regressor`` once fitted."""

    id: int
    name: str
    src: str
    tgt: str
    llm: str
    metric: str
    pool: int
    features: list[str]
    omitted: dict[str, str]
    embedder: str | None
    job_id: int | None
    dev_hash: str
    status: str
    regressor: Regressor | None = None
    fit: dict[str, Any] | None = None
    n_rows: int | None = None
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``scoi ctq train --json`` (no bytes: the regressor's settings)."""
        return {"name": self.name, "src": self.src, "tgt": self.tgt, "llm": self.llm, "metric": self.metric,
                "pool": self.pool, "features": self.features, "omitted": self.omitted, "embedder": self.embedder,
                "job_id": self.job_id, "status": self.status, "regressor": self.fit, "n_rows": self.n_rows,
                "signature": self.signature}


def model_row(row: dict[str, Any] | None) -> CtqModel | None:
    """A ``ctq_model`` row (dict_row) as a CtqModel, its regressor loaded from its bytes."""
    if row is None:
        return None
    data = row["model"]
    return CtqModel(row["id"], row["name"], row["src_lang"], row["tgt_lang"], row["llm"], row["metric"], row["pool"],
                    list(row["features"]), dict(row["omitted"]), row["embedder"], row["job_id"], row["dev_hash"],
                    row["status"], Regressor.from_bytes(bytes(data)) if data is not None else None,
                    row["regressor"], row["n_rows"], row["signature"])


def find_model(conn: psycopg.Connection, name: str | None, src: str, tgt: str) -> CtqModel:
    """The fitted model ``name`` for ``src``-``tgt`` (None: the direction's newest); ``name``
    may be a model's signature (``NAME@...``, what a job stores), which must still match.
    CtqError naming the fix when there is none."""
    wanted = None
    if name is not None and "@" in name:
        wanted, name = name, name.split("@", 1)[0]
    with conn.cursor(row_factory=dict_row) as cur:
        if name is None:
            model = model_row(cur.execute(SQL["newest_model"], {"src": src, "tgt": tgt}).fetchone())
            if model is None:
                raise CtqError(f"no fitted CTQ Scorer model for {src}-{tgt}; train one first: scoi ctq train "
                               f"--src {src} --tgt {tgt} --dev DEV_SRC --dev-ref DEV_REF --model M")
            return model
        model = model_row(cur.execute(SQL["model_by_name"], {"name": name}).fetchone())
    if model is None:
        raise CtqError(f"no CTQ Scorer model named {name!r}; see `scoi ctq list`")
    if (model.src, model.tgt) != (src, tgt):
        raise CtqError(f"CTQ Scorer model {name!r} ranks {model.src}-{model.tgt} examples, not {src}-{tgt}")
    if model.status != "fitted":
        raise CtqError(f"CTQ Scorer model {name!r} is not fitted yet (its training job has not finished): "
                       f"scoi ctq train --name {name} ... resumes it")
    if wanted is not None and model.signature != wanted:
        raise CtqError(f"CTQ Scorer model {name!r} is now {model.signature}, not {wanted} (it was trained again "
                       "under the same name)")
    return model


def list_models(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every stored model's row without its bytes (``scoi ctq list``)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(SQL["list_models"]).fetchall()


def one_shot_example(conn: psycopg.Connection, job_id: int, idx: int) -> list[Example]:
    """A training item's one example (fixed at submit), for the worker's prompt."""
    row = conn.execute(SQL["one_shot_example"], {"job_id": job_id, "idx": idx}).fetchone()
    if row is None:
        raise CtqError(f"item {idx} of job {job_id} has no CTQ training example (was its pair deleted?)")
    return [Example(row[0], row[1])]


# --------------------------------------------------------------------------- features
NLL_BATCH = 8  # texts per forward pass of token_nlls (right-padded, masked)


def token_nlls(backend: Any, texts: Sequence[str]) -> list[list[float]]:
    """Each text's token negative log-likelihoods (nats) under a local transformers
    backend's model, after a BOS token (the released perplexity metric's ``add_start_token``);
    :data:`NLL_BATCH` texts per forward pass, right-padded and masked."""
    import torch

    tok, model = backend.tokenizer, backend.model
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else bos
    limit = getattr(backend, "context_length", None)
    seqs = [([bos] + tok(t, add_special_tokens=False)["input_ids"])[:limit or None] for t in texts]
    out: list[list[float]] = []
    with torch.no_grad():
        for start in range(0, len(seqs), NLL_BATCH):
            batch = seqs[start:start + NLL_BATCH]
            width = max(map(len, batch))
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in batch], device=model.device)
            mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in batch], device=model.device)
            logp = torch.log_softmax(model(ids, attention_mask=mask).logits[:, :-1].double(), dim=-1)
            nll = -logp.gather(2, ids[:, 1:, None])[:, :, 0]
            out += [nll[i, :len(s) - 1].tolist() for i, s in enumerate(batch)]
    return out


class FeatureSource:
    """Computes a model's features for a test sentence's pool: loads the embedder and the
    LLM it needs on first use (the same code at training and at selection)."""

    def __init__(self, features: Sequence[str], *, embedder: str | None = None, llm: str | None = None) -> None:
        self.features, self.embedder_name, self.llm_spec = list(features), embedder, llm
        self._embedder: Any = None
        self._llm: Any = None

    def embedder(self) -> Embedder:
        """The sentence embedder of the ``labse_score_*`` features, loaded on first use."""
        if self._embedder is None:
            self._embedder = Embedder(self.embedder_name)
        return self._embedder

    def llm(self) -> Any:
        """The local LLM of the perplexity features (a TransformersBackend), loaded on first use."""
        if self._llm is None:
            self._llm = load_backend(self.llm_spec)
        return self._llm

    def matrix(self, query: str, srcs: Sequence[str], tgts: Sequence[str], bm25: Sequence[float]) -> np.ndarray:
        """(len(srcs), features) values, infinities as 99999 (the released code's cleaning)."""
        needs = {cf.NEEDS[f] for f in self.features if f in cf.NEEDS}
        if not srcs:
            return np.zeros((0, len(self.features)))
        x = cf.Inputs(query, srcs, tgts, bm25, ctq_tokens(query), [ctq_tokens(s) for s in srcs],
                      available=frozenset(needs))
        if "embedder" in needs:
            vecs = self.embedder().encode([query, *srcs, *tgts])
            x.query_vec, x.src_vecs, x.tgt_vecs = vecs[0], vecs[1:1 + len(srcs)], vecs[1 + len(srcs):]
        if "llm" in needs:
            if "src_dst_ppl" in self.features:
                x.nll_src_dst = token_nlls(self.llm(), [cf.src_dst_text(s, t) for s, t in zip(srcs, tgts)])
            if "src_dst_query_ppl" in self.features:
                x.nll_src_dst_query = token_nlls(self.llm(), [cf.src_dst_query_text(s, t, query)
                                                              for s, t in zip(srcs, tgts)])
        m = cf.feature_matrix(self.features, x)
        m[np.isinf(m)] = cf.PPL_INF
        return m


def available_models(llm: str, embedder: str | None, likelihood: bool = True) -> frozenset[str]:
    """What a training with this LLM spec and embedder can compute features from
    (``likelihood=False``: not the LLM's likelihoods, even from a local model)."""
    have = {"embedder"} if embedder else set()
    if likelihood and parse_spec(llm).kind in ("hf", "gguf"):
        have.add("llm")
    return frozenset(have)


# --------------------------------------------------------------------------- ranking
class CtqRanker:
    """``--method ctq``: a fitted model and its feature source, ranking BM25 pools."""

    def __init__(self, model: CtqModel) -> None:
        if model.regressor is None:
            raise CtqError(f"CTQ Scorer model {model.name!r} is not fitted")
        self.model = model
        self.source = FeatureSource(model.features, embedder=model.embedder, llm=model.llm)

    def predict(self, query: str, srcs: Sequence[str], tgts: Sequence[str], bm25: Sequence[float]) -> np.ndarray:
        """Each candidate's predicted one-shot quality for ``query`` (what
        scoi.core.ctq_rank.ctq_picks ranks the pool by)."""
        return self.model.regressor.predict(self.source.matrix(query, srcs, tgts, bm25))


__all__ = ["CRITERION", "CtqError", "CtqModel", "CtqRanker", "FeatureSource", "available_models", "find_model",
           "list_models", "model_row", "one_shot_example", "token_nlls"]
