"""Write analysed batches to PostgreSQL: COPY into staging tables, then idempotent SQL.

One batch is one transaction, so a crash (even ``kill -9``) leaves whole batches or
nothing; a rerun skips what is already there. Sentences that already exist are neither
re-parsed nor re-written: the pair simply points at them.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

import psycopg

from ingest.analysis import MAX_EXAMPLE_TOKENS, Analysis
from scoi.core.polynomial import LabelSpace, parse_key
from scoi.db.queries import load

SQL = load("ingest")
VECTOR_WIDTH = 1024  # term.exps is sparsevec(1024); the label table refuses idx >= 1024


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class ParsedSentence:
    lang: str
    text: str
    sha: bytes
    analysis: Analysis


@dataclass
class PairRow:
    line: int
    a_sha: bytes
    b_sha: bytes


class LabelRegistry:
    """A parser's label -> dimension map, mirrored in the ``label`` table."""

    def __init__(self, conn: psycopg.Connection, parser_id: int, initial: list[str]) -> None:
        self.parser_id = parser_id
        rows = conn.execute(SQL["parser_labels"], {"parser_id": parser_id}).fetchall()
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
            conn.execute(SQL["insert_label"], {"parser_id": self.parser_id, "idx": i, "name": name})
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
        items = sorted((self.idx(name), power) for name, power in exps.items())
        body = ",".join(f"{i + 1}:{p}" for i, p in items)
        return f"{{{body}}}/{VECTOR_WIDTH}", sum(exps.values())


class BatchWriter:
    """Owns the writing connection of one ingest run."""

    def __init__(self, conn: psycopg.Connection, *, corpus_id: int, run_id: int,
                 a_lang: str, b_lang: str, parsers: dict[str, int], labels: dict[str, LabelRegistry]) -> None:
        self.conn = conn
        self.corpus_id, self.run_id = corpus_id, run_id
        self.a_lang, self.b_lang = a_lang, b_lang
        self.parsers = parsers
        self.labels = labels
        self._known_keys: set[tuple[int, str]] = set()
        conn.execute(SQL["create_stage_tables"])
        conn.commit()

    def write(self, sentences: list[ParsedSentence], pairs: list[PairRow], *, read: int, rejected: int) -> int:
        """Write one batch in one transaction; returns the number of pairs inserted."""
        term_defs: dict[tuple[int, str], tuple[str, int]] = {}
        with self.conn.transaction():
            cur = self.conn.cursor()
            cur.execute(SQL["lock_writes"])
            with cur.copy("COPY stage_sentence (lang, text, sha, tokens, n_tokens, parser_id, eligible, "
                          "term_keys, term_mults) FROM STDIN") as cp:
                for s in sentences:
                    n = len(s.analysis.tokens)
                    keys = sorted(s.analysis.terms)
                    cp.write_row((s.lang, s.text, s.sha, s.analysis.tokens, n, self.parsers[s.lang],
                                  n <= MAX_EXAMPLE_TOKENS, keys, [s.analysis.terms[k] for k in keys]))
            with cur.copy("COPY stage_term (lang, sha, parser_id, key, mult) FROM STDIN") as cp:
                for s in sentences:
                    pid = self.parsers[s.lang]
                    for key, mult in s.analysis.terms.items():
                        cp.write_row((s.lang, s.sha, pid, key, mult))
                        if (pid, key) not in self._known_keys and (pid, key) not in term_defs:
                            term_defs[(pid, key)] = self.labels[s.lang].sparsevec(key)
            for reg in self.labels.values():
                reg.flush(self.conn)
            with cur.copy("COPY stage_term_def (parser_id, key, exps, degree) FROM STDIN") as cp:
                for (pid, key), (vec, degree) in term_defs.items():
                    cp.write_row((pid, key, vec, degree))
            with cur.copy("COPY stage_token (lang, sha, token, tf) FROM STDIN") as cp:
                for s in sentences:
                    if len(s.analysis.tokens) <= MAX_EXAMPLE_TOKENS:
                        for tok, tf in Counter(t.lower() for t in s.analysis.tokens).items():
                            cp.write_row((s.lang, s.sha, tok, tf))
            with cur.copy("COPY stage_pair (line, a_sha, b_sha) FROM STDIN") as cp:
                for p in pairs:
                    cp.write_row((p.line, p.a_sha, p.b_sha))
            for name in ("insert_sentences", "insert_terms", "insert_sentence_terms", "insert_vocab",
                         "insert_bm25_docs", "insert_postings", "update_df", "update_bm25_stats"):
                cur.execute(SQL[name])
            cur.execute(SQL["insert_pairs"], {"corpus_id": self.corpus_id, "run_id": self.run_id,
                                              "a_lang": self.a_lang, "b_lang": self.b_lang})
            inserted = cur.fetchone()[0]
            cur.execute(SQL["add_run_counts"], {"run_id": self.run_id, "read": read, "inserted": inserted,
                                                "duplicates": len(pairs) - inserted, "rejected": rejected})
        self._known_keys.update(term_defs)
        return inserted
