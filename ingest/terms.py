"""Polynomial terms of analysed sentences: a parser's label registry (the ``label``
table), term ids resolved or inserted per batch, and the ``sentence_term`` rows; shared by
ingest's BatchWriter and ``scoi reanalyze``.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from ingest.rows import ParsedSentence
from scoi.core.polynomial import LabelSpace, parse_key
from scoi.db.literals import VECTOR_WIDTH, int_array, sparsevec, text_array
from scoi.db.queries import load

_SQL = load("terms")


def copy_sentence_terms(cur: psycopg.Cursor, rows: Iterable[str]) -> None:
    """COPY ``sentence_term`` rows (from ``sentence_term_rows``) in the cursor's transaction."""
    with cur.copy(_SQL["copy_sentence_terms"]) as cp:
        cp.write("".join(rows))


class LabelRegistry:
    """A parser's label -> dimension map, mirrored in the ``label`` table."""

    def __init__(self, conn: psycopg.Connection, parser_id: int, initial: list[str]) -> None:
        self.parser_id = parser_id
        rows = conn.execute(_SQL["parser_labels"], {"parser_id": parser_id}).fetchall()
        self.space = LabelSpace([name for _, name in rows])
        self.pending: list[tuple[int, str]] = []
        self._vectors: dict[str, tuple[str, int]] = {}
        for name in initial:
            self.idx(name)

    def idx(self, name: str) -> int:
        before = len(self.space.index)
        i = self.space.add(name)
        if len(self.space.index) > before:
            if i >= VECTOR_WIDTH:
                raise RuntimeError(f"label inventory of parser {self.parser_id} exceeds {VECTOR_WIDTH} labels; "
                                   "widen term.exps with a migration")
            self.pending.append((i, name))
        return i

    def flush(self, conn: psycopg.Connection) -> None:
        for i, name in self.pending:
            conn.execute(_SQL["insert_label"], {"parser_id": self.parser_id, "idx": i, "name": name})
        self.pending.clear()

    def sparsevec(self, key: str) -> tuple[str, int]:
        """pgvector sparsevec literal (1-based indices) and degree of a term key (memoised:
        a label's dimension never changes, and the same terms recur in every batch)."""
        cached = self._vectors.get(key)
        if cached is None:
            cached = self._vectors[key] = self._sparsevec(key)
        return cached

    def _sparsevec(self, key: str) -> tuple[str, int]:
        exps = parse_key(key)
        return sparsevec({self.idx(name): power for name, power in exps.items()}), sum(exps.values())


def term_arrays(terms: dict[str, int]) -> tuple[str, str]:
    """``sentence.term_keys`` and ``term_mults`` of a polynomial, as array literals (keys sorted)."""
    keys = sorted(terms)
    return text_array(keys), int_array([terms[k] for k in keys])


def sentence_term_rows(sid: int, pid: int, terms: dict[str, int], term_ids: dict[tuple[int, str], int]) -> list[str]:
    """COPY rows of ``sentence_term`` for one sentence (one per distinct term)."""
    return [f"{sid}\t{term_ids[(pid, key)]}\t{mult}\n" for key, mult in terms.items()]


class TermResolver:
    """term.id of polynomial terms, per parser row, inserting the terms the table lacks
    (their labels first). Used by ingest's BatchWriter and by ``scoi reanalyze``."""

    def __init__(self, conn: psycopg.Connection, parsers: dict[str, int], labels: dict[str, LabelRegistry]) -> None:
        self.conn = conn
        self.parsers = parsers  # lang -> parser row the sentences are written with
        self.labels = labels    # lang -> that row's label registry
        # (parser_id, key) -> term.id: ids never change once a row exists. Filled only
        # after a commit (committed()).
        self._known: dict[tuple[int, str], int] = {}

    def resolve(self, cur: psycopg.Cursor, new: list[ParsedSentence]) -> dict[tuple[int, str], int]:
        """term.id of every term of ``new``, inserting the terms the table does not have."""
        ids = dict(self._known)
        missing: dict[int, dict[str, str]] = {}  # parser_id -> key -> lang
        for s in new:
            pid = self.parsers[s.lang]
            for key in s.analysis.terms:
                if (pid, key) not in ids:
                    missing.setdefault(pid, {})[key] = s.lang
        for pid, keys in missing.items():
            defs = [(key, *self.labels[lang].sparsevec(key)) for key, lang in keys.items()]
            for reg in self.labels.values():
                reg.flush(self.conn)  # labels first: a term's dimensions must be interpretable
            cur.execute(_SQL["insert_terms"], {"parser_id": pid, "keys": text_array([d[0] for d in defs]),
                                              "exps": text_array([d[1] for d in defs]),
                                              "degrees": int_array([d[2] for d in defs])})
            for key, tid in cur.execute(_SQL["term_ids"], {"parser_id": pid, "keys": text_array(list(keys))}):
                ids[(pid, key)] = tid
        return ids

    def committed(self, ids: dict[tuple[int, str], int]) -> None:
        """Remember ids resolved in a transaction that has committed."""
        self._known.update(ids)

