"""The data of a selection, one name per concept: a pool row is a :class:`Candidate`, a
chosen example a :class:`Pick`, a preselection's answer a :class:`PoolResult`, the whole
answer a :class:`SelectionResult`. Plain data, no I/O: recording, the CLI and the service
read these without importing the selector."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from scoi.core.criteria import value_of
from scoi.db.reads import ReadStatus

#: Why a blank sentence (empty, or only whitespace) gets no selection.
BLANK_QUERY = "the sentence is blank (empty or only whitespace): there is nothing to select examples for"


class SelectionError(RuntimeError):
    """A selection that cannot run (no corpus for the direction, bad option)."""


@dataclass
class Candidate:
    """One pair of a pool: its BM25 score, texts, source tokens and tree terms."""

    pair_id: int
    score: float
    src: str
    tgt: str
    tokens: list[str]
    term_keys: list[str]
    term_mults: list[int]
    match: float | None = None  # match % of its source against the query (scoi.core.match)

    def pick(self, criterion: str, coverage: float | None) -> Pick:
        """This candidate chosen by ``criterion`` (with the method's score for it)."""
        return Pick(self.pair_id, self.src, self.tgt, criterion, coverage, self.match)


@dataclass
class Pick:
    """One chosen example, with the criterion that chose it."""

    pair_id: int
    src: str
    tgt: str
    criterion: str
    #: the criterion's number for this pick, whatever quantity it is (kept under this name,
    #: the stored column's; :meth:`to_dict` names the quantity: scoi.core.criteria)
    coverage: float | None
    match: float | None = None  # match % of its source against the query (scoi.core.match)

    def to_dict(self) -> dict[str, Any]:
        """The pick's JSON: its fields, and ``value`` naming what its number is
        (``{"kind": "residual", "value": 6.05}``; null when it has none). ``coverage`` is
        the same number under its old name, deprecated (docs/selection.md)."""
        return {**asdict(self), "value": value_of(self.criterion, self.coverage)}


@dataclass
class PoolResult:
    """A preselection's answer: the pool, whether it is proven to be exact BM25's top n
    (None: no pool asked, or no pair matched) and where it read (None: no replica set)."""

    rows: list[Candidate]
    certified: bool | None
    read: ReadStatus | None = None


@dataclass
class SelectionResult:
    query: str
    src_lang: str
    tgt_lang: str
    method: str
    k: int
    params: dict[str, Any]
    signature: str
    query_tokens: list[str]
    query_terms: dict[str, int]
    candidates: list[Candidate]
    selected: list[Pick]
    timings_ms: dict[str, float] = field(default_factory=dict)
    selection_id: int | None = None
    #: the pool is proven to be exact BM25's top ``pool`` (None: no pool, or no pair matched)
    certified: bool | None = None
    #: where the selection read (a replica, or the primary) and the replica's lag; None
    #: when no replica is configured (scoi.db.reads)
    read: ReadStatus | None = None
    #: only candidates at or above this match % were offered to the method (None: all)
    min_match: float | None = None
    #: why fewer than k examples were picked, when --min-match left too few candidates
    notice: str | None = None

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        """The JSON shape of ``scoi select --json`` (``--explain``: candidates as objects)."""
        cands: list[Any]
        if explain:
            cands = [{"pair_id": c.pair_id, "score": c.score, "match": c.match, "src": c.src, "tgt": c.tgt}
                     for c in self.candidates]
        else:
            cands = [c.pair_id for c in self.candidates]
        return {
            "query": self.query, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang, "method": self.method,
            "k": self.k, "params": self.params, "signature": self.signature,
            "candidates": cands, "selected": [p.to_dict() for p in self.selected],
            "selection_id": self.selection_id, "certified": self.certified, "timings_ms": self.timings_ms,
            "read": self.read.to_dict() if self.read else None, "min_match": self.min_match, "notice": self.notice,
        }


__all__ = ["BLANK_QUERY", "Candidate", "Pick", "PoolResult", "SelectionError", "SelectionResult"]
