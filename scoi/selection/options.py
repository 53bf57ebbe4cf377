"""A selector's settings, checked once with one clear message each (SelectionError), and
the record they leave: the params a selection stores and the signature that names every
setting changing its result (scoi.core.signature)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from scoi.core import defaults, methods
from scoi.core.exact import check_where, where_part
from scoi.core.greedy import check_args
from scoi.core.limits import LIMITS
from scoi.core.match import check_min_match
from scoi.core.names import is_language_code, printable
from scoi.core.rbm25 import check_variant
from scoi.core.signature import corpora_part, method_parts, signature
from scoi.parsers import Scheme
from scoi.selection.preselector import Bm25Params
from scoi.selection.types import SelectionError

FILLS = ("none", "random")


@dataclass
class Options:
    """Everything but the direction's data that decides a selection."""

    k: int = defaults.K
    method: str = defaults.METHOD
    pool: int = defaults.POOL
    similarity: str = defaults.SIMILARITY
    word_overlap: str = defaults.WORD_OVERLAP
    fill: str = defaults.FILL
    seed: int = defaults.SEED
    rbm25_variant: str = defaults.RBM25_VARIANT
    ef_search: int = defaults.EF_SEARCH
    min_match: float | None = None
    corpora: list[str] | None = None
    where: dict[str, str] | None = None
    bm25: Bm25Params = field(default_factory=Bm25Params)

    def check(self) -> Options:
        """This, with ``where`` and ``min_match`` normalised; SelectionError (ValueError for
        the method's own arguments) naming the first bad one."""
        check_args(self.method, self.similarity, self.word_overlap, self.k)
        check_variant(self.rbm25_variant)
        if not 1 <= self.pool <= LIMITS["pool"][1]:
            raise SelectionError(f"pool size must be from 1 to {LIMITS['pool'][1]}, not {self.pool}")
        if self.fill not in FILLS:
            raise SelectionError(f"unknown fill {self.fill!r}; expected one of {FILLS}")
        if self.ef_search < 1:
            raise SelectionError("ef_search must be at least 1")
        self.min_match = checked_min_match(self.min_match)
        self.where = checked_where(self.where)
        return self

    def method_settings(self, method: str, embedder: str | None, model: str | None = None) -> dict[str, str | int]:
        """The settings only ``method`` reads, as params and the signature name them
        (``embedder``: the stored embedder's name; ``model``: a learned method's model signature)."""
        return methods.method_settings(method, rbm25_variant=self.rbm25_variant, embedder=embedder,
                                       ef_search=self.ef_search, ctq_model=model)

    def params(self, method: str, k: int, min_match: float | None, embedder: str | None,
               model: str | None = None) -> dict[str, Any]:
        """The settings of a selection (``min_match`` only when one was set; ``bm25.exact``:
        the pool is exact BM25's top n, as the signature's ``exact`` says, whatever engine)."""
        return {"method": method, **self.method_settings(method, embedder, model), "k": k, "pool": self.pool,
                "similarity": self.similarity, "word_overlap": self.word_overlap, "fill": self.fill,
                "seed": self.seed, "corpora": self.corpora, **({"where": self.where} if self.where else {}),
                "bm25": {**asdict(self.bm25), "exact": True}, **({} if min_match is None else {"min_match": min_match})}

    def signature(self, src: str, tgt: str, method: str, k: int, min_match: float | None, embedder: str | None,
                  scheme: Scheme, model: str | None = None) -> str:
        """Every setting that changes the result (scoi.core.signature)."""
        return signature(src, tgt, {
            "method": method, **method_parts(self.method_settings(method, embedder, model)), "k": k, "pool": self.pool,
            "match": None if min_match is None else f"{min_match:g}",
            "sim": self.similarity, "words": self.word_overlap, "fill": self.fill, "seed": self.seed,
            "bm25": self.bm25.signature(), "corpora": corpora_part(self.corpora), "where": where_part(self.where),
            "parser": scheme})


def check_direction(src: str, tgt: str) -> tuple[str, str]:
    """The lowercased language codes; SelectionError for one that is not a code (the hints
    paste it into a command to copy)."""
    for code, option in ((src, "--src"), (tgt, "--tgt")):
        if not is_language_code(code):
            raise SelectionError(f"{option} '{printable(code[:40])}' is not a language code; expected an ISO "
                                 "639 code such as fr, en or pt-BR")
    return src.lower(), tgt.lower()


def checked_min_match(value: float | None) -> float | None:
    """``--min-match`` checked, as SelectionError."""
    try:
        return check_min_match(value)
    except ValueError as e:
        raise SelectionError(str(e)) from None


def checked_where(where: dict[str, str] | None) -> dict[str, str] | None:
    """``--where`` checked (scoi.core.exact), as SelectionError."""
    try:
        return check_where(where)
    except ValueError as e:
        raise SelectionError(str(e)) from None


__all__ = ["FILLS", "Options", "check_direction", "checked_min_match", "checked_where"]
