"""Write analysed batches to PostgreSQL: COPY straight into the tables, one transaction per batch.

One batch is one transaction, so a crash (even ``kill -9``) leaves whole batches or
nothing; a rerun skips what is already there. Sentences that already exist are neither
re-parsed nor re-written: the pair simply points at them.

The only reader of scoi/db/sql/ingest.sql: the pipeline and ``scoi reanalyze`` take the
ingest lock through ``lock_writes`` (and write ``sentence_term`` rows through
ingest.terms.copy_sentence_terms).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import psycopg
from psycopg import sql

from ingest.blocks import write_blocks
from ingest.drops import Dropped, drop_pairs, drop_unused
from ingest.rows import PairRow, ParsedSentence
from ingest.runs import add_run_counts
from ingest.terms import LabelRegistry, TermResolver, copy_sentence_terms, sentence_term_rows, term_arrays
from scoi.analysis import MAX_EXAMPLE_TOKENS
from scoi.db.literals import bytea_array, copy_text, int_array, text_array
from scoi.db.queries import load

_SQL = load("ingest")
ON_CONFLICT = ("add", "replace", "keep")


def lock_writes(conn: psycopg.Connection | psycopg.Cursor) -> None:
    """Take the ingest lock until commit: ingest batches, reanalyze batches and the
    creation of corpus and parser rows run one at a time (why: ingest.sql, lock_writes)."""
    conn.execute(_SQL["lock_writes"])


def stored_sentences(conn: psycopg.Connection | psycopg.Cursor, lang: str, shas: list[bytes]) -> dict[bytes, int]:
    """sha -> sentence.id of those of ``shas`` already stored in ``lang``."""
    return {bytes(h): sid for h, sid in conn.execute(_SQL["stored_sentences"],
                                                     {"lang": lang, "shas": bytea_array(shas)})}


class BatchWriter:
    """Owns the writing connection of one ingest run.

    A batch is written under the ingest lock (``lock_writes``), so no other ingest writes
    between this writer's look-up of the batch's stored sentences and its inserts. That
    lets it COPY rows straight into the real tables, with sentence ids drawn from the
    sequence, term and token ids resolved on the client and pairs inserted by id, instead
    of staging every row and joining it back on the server. The unique keys stay the
    last line of defence.
    """

    def __init__(self, conn: psycopg.Connection, *, corpus_id: int, run_id: int,
                 a_lang: str, b_lang: str, parsers: dict[str, int], labels: dict[str, LabelRegistry],
                 on_conflict: str = "add", src_lang: str | None = None) -> None:
        self.conn = conn
        self.corpus_id, self.run_id = corpus_id, run_id
        self.a_lang, self.b_lang = a_lang, b_lang
        if on_conflict not in ON_CONFLICT:
            raise ValueError(f"on_conflict {on_conflict!r}; expected one of {', '.join(ON_CONFLICT)}")
        # --on-conflict (docs/ingest.md): what a pair whose source the corpus already holds
        # with another target (from an earlier run) does; src_lang: which side is the source.
        self.on_conflict, self.src_is_a = on_conflict, (src_lang or a_lang) == a_lang
        self.replaced = Dropped()  # stored pairs replaced (and their sentences no pair uses any more)
        self.kept_out = 0          # pairs of the input not inserted: --on-conflict keep
        self._recheck: list[int] = []  # sentences left unused by a replace that later batches rely on
        self.parsers = parsers
        self.labels = labels
        self.terms = TermResolver(conn, parsers, labels)
        # Ids never change once a row exists: (lang, token) -> vocab.id.
        # Filled only after a commit.
        self._vocab: dict[tuple[str, str], int] = {}

    def write(self, sentences: list[ParsedSentence], pairs: list[PairRow], *, read: int, rejected: int,
              relied_on: set[tuple[str, bytes]] | None = None) -> int:
        """Write one batch in one transaction; returns the number of pairs inserted.

        ``sentences`` are the batch's parsed sentences (those not stored when the batch
        was read); every sentence a pair names is either among them or already stored.
        ``relied_on``: (lang, sha) of the stored sentences that the run's later batches,
        read already, will not parse: a replace keeps them until :meth:`finish`.
        """
        with self.conn.transaction():
            cur = self.conn.cursor()
            lock_writes(cur)
            ids = self._stored_ids(cur, pairs)
            new = list({(s.lang, s.sha): s for s in sentences if (s.lang, s.sha) not in ids}.values())
            term_ids = self.terms.resolve(cur, new)
            vocab = self._resolve_tokens(cur, new)
            new_ids = [r[0] for r in cur.execute(_SQL["next_sentence_ids"], {"n": len(new)})] if new else []
            self._write_sentences(cur, new_ids, new, term_ids)
            self._write_bm25(cur, new_ids, new, vocab)
            ids.update(((s.lang, s.sha), sid) for sid, s in zip(new_ids, new))
            todo, stale = self._conflicts(cur, pairs, ids)
            kept_out = len(pairs) - len(todo)
            inserted = self._write_pairs(cur, todo, ids)
            # after the insert: a replaced pair's source is the new pair's too
            replaced = drop_pairs(cur, stale, relied_on)
            if self._recheck:
                n, kept = drop_unused(cur, self._recheck, relied_on)
                replaced.sentences += n
                replaced.kept += kept
            if kept_out:  # the kept-out pairs' new sentences (written above) are in no pair
                taken = {id(p) for p in todo}
                drop_unused(cur, sorted({ids[(lang, h)] for p in pairs if id(p) not in taken
                                         for lang, h in ((self.a_lang, p.a_sha), (self.b_lang, p.b_sha))}), relied_on)
            add_run_counts(cur, self.run_id, read=read, inserted=inserted,
                           duplicates=len(pairs) - inserted - kept_out, rejected=rejected)
        self.kept_out += kept_out
        self.replaced += replaced
        self._recheck = replaced.kept
        self.terms.committed(term_ids)
        self._vocab.update(vocab)
        return inserted

    def finish(self) -> None:
        """After the run's last batch: delete the sentences a replace left in place for
        later batches that, in the end, no pair uses (one transaction)."""
        if not self._recheck:
            return
        with self.conn.transaction():
            cur = self.conn.cursor()
            lock_writes(cur)
            self.replaced.sentences += drop_unused(cur, self._recheck)[0]
        self._recheck = []

    def _pair_ids(self, pairs: list[PairRow], ids: dict[tuple[str, bytes], int]) -> tuple[list[int], list[int]]:
        """The a and b sentence ids of ``pairs``."""
        try:
            return [ids[(self.a_lang, p.a_sha)] for p in pairs], [ids[(self.b_lang, p.b_sha)] for p in pairs]
        except KeyError:
            # Only possible if sentences were deleted (scoi pairs rm, corpora rm) while this ingest ran.
            raise RuntimeError("a sentence of this batch vanished from the database during the ingest "
                               "(deleted by another command); rerun the ingest") from None

    def _conflicts(self, cur: psycopg.Cursor, pairs: list[PairRow], ids: dict[tuple[str, bytes], int]
                   ) -> tuple[list[PairRow], list[int]]:
        """The batch's pairs to insert (``keep`` leaves out those whose source the corpus
        holds from an earlier run with another target) and the stored pairs to delete
        (``replace``: the corpus's pairs from earlier runs whose source is one of the
        batch's and which the batch does not hold). ``add``: all of them, none."""
        if self.on_conflict == "add" or not pairs:
            return pairs, []
        keyed = list(zip(*self._pair_ids(pairs, ids), pairs))
        src_ids = sorted({a if self.src_is_a else b for a, b, _ in keyed})
        stmt = sql.SQL(_SQL["source_pairs"]).format(src=sql.Identifier("a_id" if self.src_is_a else "b_id"))
        stored = cur.execute(stmt, {"src_ids": src_ids, "corpus_id": self.corpus_id, "run_id": self.run_id}).fetchall()
        batch = {(a, b) for a, b, _ in keyed}
        if self.on_conflict == "replace":
            return pairs, [pid for pid, a, b in stored if (a, b) not in batch]
        have = {(a, b) for _, a, b in stored}
        taken = {a if self.src_is_a else b for _, a, b in stored}
        return [p for a, b, p in keyed if (a, b) in have or (a if self.src_is_a else b) not in taken], []

    def _stored_ids(self, cur: psycopg.Cursor, pairs: list[PairRow]) -> dict[tuple[str, bytes], int]:
        """(lang, sha) -> sentence.id of the batch's sentences already in the table (looked
        up under the lock: another ingest may have written some since the batch was read)."""
        ids: dict[tuple[str, bytes], int] = {}
        for lang, shas in ((self.a_lang, {p.a_sha for p in pairs}), (self.b_lang, {p.b_sha for p in pairs})):
            ids.update(((lang, h), sid) for h, sid in stored_sentences(cur, lang, list(shas)).items())
        return ids

    def _write_sentences(self, cur: psycopg.Cursor, ids: list[int], new: list[ParsedSentence],
                         term_ids: dict[tuple[int, str], int]) -> None:
        """The sentence rows and their polynomials (one ``sentence_term`` row per distinct term)."""
        rows, term_rows = [], []
        for sid, s in zip(ids, new):
            pid = self.parsers[s.lang]
            tokens = s.analysis.tokens
            n = len(tokens)
            keys, mults = term_arrays(s.analysis.terms)
            rows.append(f"{sid}\t{s.lang}\t{copy_text(s.text)}\t\\\\x{s.sha.hex()}\t{copy_text(text_array(tokens))}\t"
                        f"{n}\t{pid}\t{'t' if n <= MAX_EXAMPLE_TOKENS else 'f'}\t{copy_text(keys)}\t{mults}\n")
            term_rows.extend(sentence_term_rows(sid, pid, s.analysis.terms, term_ids))
        with cur.copy(_SQL["copy_sentences"]) as cp:
            cp.write("".join(rows))
        copy_sentence_terms(cur, term_rows)

    def _write_bm25(self, cur: psycopg.Cursor, ids: list[int], new: list[ParsedSentence],
                    vocab: dict[tuple[str, str], int]) -> None:
        """Forward-index rows, posting blocks, df and N/total length of the new eligible
        sentences."""
        df: Counter[int] = Counter()
        stats: dict[str, list[int]] = {}
        docs = []
        blocks: list[list[int]] = [[], [], [], []]    # token ids, sentence ids, tfs, dls of the postings
        for sid, s in zip(ids, new):
            n = len(s.analysis.tokens)
            if n > MAX_EXAMPLE_TOKENS:
                continue
            counts = sorted((vocab[(s.lang, tok)], tf) for tok, tf in Counter(t.lower() for t in s.analysis.tokens).items())
            tids = [tid for tid, _ in counts]
            tfs = [tf for _, tf in counts]
            docs.append(f"{sid}\t{n}\t{int_array(tids)}\t{int_array(tfs)}\n")
            blocks[0] += tids
            blocks[1] += [sid] * len(tids)
            blocks[2] += tfs
            blocks[3] += [n] * len(tids)
            df.update(tids)
            lang_stats = stats.setdefault(s.lang, [0, 0])
            lang_stats[0] += 1
            lang_stats[1] += n
        with cur.copy(_SQL["copy_bm25_docs"]) as cp:
            cp.write("".join(docs))
        if df:
            cur.execute(_SQL["add_df"], {"ids": int_array(list(df)), "n": int_array(list(df.values()))})
        for lang, (n_docs, total_len) in stats.items():
            cur.execute(_SQL["add_bm25_stats"], {"lang": lang, "n_docs": n_docs, "total_len": total_len})
        write_blocks(cur, *(np.array(a, dtype=np.int64) for a in blocks))

    def _write_pairs(self, cur: psycopg.Cursor, pairs: list[PairRow], ids: dict[tuple[str, bytes], int]) -> int:
        """Insert the batch's pairs by sentence id, with their metadata; returns how many
        were new. ``replace`` also makes the stored ones this run's, with the input's
        metadata (a pair the run confirmed is not replaced by its later batches)."""
        a_ids, b_ids = self._pair_ids(pairs, ids)
        metas = [p.meta for p in pairs]
        if self.on_conflict == "replace":  # one row per pair: an upsert may not touch a row twice
            first = {}
            for i, key in enumerate(zip(a_ids, b_ids)):
                first.setdefault(key, i)
            keep = sorted(first.values())
            a_ids, b_ids, metas = [a_ids[i] for i in keep], [b_ids[i] for i in keep], [metas[i] for i in keep]
            pairs = [pairs[i] for i in keep]
        cur.execute(_SQL["upsert_pairs" if self.on_conflict == "replace" else "insert_pairs"],
                    {"corpus_id": self.corpus_id, "run_id": self.run_id, "a_lang": self.a_lang,
                     "b_lang": self.b_lang, "a_ids": int_array(a_ids), "b_ids": int_array(b_ids),
                     "lines": int_array([p.line for p in pairs]), "metas": text_array(metas)})
        return cur.fetchone()[0]

    def _resolve_tokens(self, cur: psycopg.Cursor, new: list[ParsedSentence]) -> dict[tuple[str, str], int]:
        """vocab.id of every lowercased token of the eligible sentences of
        ``new``, inserting the tokens the vocabulary does not have."""
        vocab = dict(self._vocab)
        missing: dict[str, set[str]] = {}
        for s in new:
            if len(s.analysis.tokens) <= MAX_EXAMPLE_TOKENS:
                for tok in s.analysis.tokens:
                    low = tok.lower()
                    if (s.lang, low) not in vocab:
                        missing.setdefault(s.lang, set()).add(low)
        for lang, tokens in missing.items():
            toks = text_array(sorted(tokens))
            cur.execute(_SQL["insert_vocab"], {"lang": lang, "tokens": toks})
            for tok, vid in cur.execute(_SQL["vocab_ids"], {"lang": lang, "tokens": toks}):
                vocab[(lang, tok)] = vid
        return vocab
