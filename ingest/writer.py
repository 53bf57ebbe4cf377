"""Write analysed batches to PostgreSQL: COPY straight into the tables, one transaction per batch.

One batch is one transaction, so a crash (even ``kill -9``) leaves whole batches or
nothing; a rerun skips what is already there. Sentences that already exist are neither
re-parsed nor re-written: the pair simply points at them.

The only reader of scoi/db/sql/ingest.sql: the pipeline and ``scoi reanalyze`` take the
ingest lock and write ``sentence_term`` rows through ``lock_writes`` and ``copy_sentence_terms``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import psycopg
from psycopg import sql

from ingest.runs import add_run_counts
from scoi.analysis import MAX_EXAMPLE_TOKENS, Analysis
from scoi.core.bm25blocks import BLOCK, DIR, GROUP, Directory, decode_dir, decode_postings, open_from, pack
from scoi.core.polynomial import LabelSpace, parse_key
from scoi.db.literals import VECTOR_WIDTH, bytea_array, copy_text, int_array, sparsevec, text_array
from scoi.db.queries import load

_SQL = load("ingest")
_DELETE = load("delete")
ON_CONFLICT = ("add", "replace", "keep")


def lock_writes(conn: psycopg.Connection | psycopg.Cursor) -> None:
    """Take the ingest lock until commit: ingest batches, reanalyze batches and the
    creation of corpus and parser rows run one at a time (why: ingest.sql, lock_writes)."""
    conn.execute(_SQL["lock_writes"])


def stored_sentences(conn: psycopg.Connection | psycopg.Cursor, lang: str, shas: list[bytes]) -> dict[bytes, int]:
    """sha -> sentence.id of those of ``shas`` already stored in ``lang``."""
    return {bytes(h): sid for h, sid in conn.execute(_SQL["stored_sentences"],
                                                     {"lang": lang, "shas": bytea_array(shas)})}


def copy_sentence_terms(cur: psycopg.Cursor, rows: Iterable[str]) -> None:
    """COPY ``sentence_term`` rows (from ``sentence_term_rows``) in the cursor's transaction."""
    with cur.copy(_SQL["copy_sentence_terms"]) as cp:
        cp.write("".join(rows))


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def write_blocks(cur: psycopg.Cursor, tids: np.ndarray, sids: np.ndarray, tfs: np.ndarray, dls: np.ndarray) -> None:
    """Add postings to the posting blocks (migrations 0016, 0022) in the cursor's transaction.

    Each token's open blocks (its last ones not in a full group: at most ``GROUP - 1``
    full and a partial one) are read back and rewritten with the new postings, a group
    that fills becomes one row, more blocks follow, and the token's directory records
    from there on are replaced: readers keep seeing the previous row versions until
    commit (MVCC), and a crash leaves the previous blocks intact. The new sentence ids are
    larger than every stored one (drawn from the sequence under the ingest lock), so
    appending keeps each list in id order.
    """
    if not len(tids):
        return
    touched = np.unique(tids).tolist()
    layout = {"block": BLOCK, "group": GROUP, "rec": DIR.itemsize}
    base: dict[int, int] = {}
    tails: list[tuple[np.ndarray, ...]] = []
    rewritten: list[tuple[int, int]] = []
    for tid, n_blocks, tail_n, recs, ids, tfdl in cur.execute(_SQL["block_tails"], {"ids": touched, **layout}):
        base[tid] = open_from(n_blocks, tail_n)
        if base[tid] < n_blocks:
            t_sids, t_tfs, t_dls = decode_postings(decode_dir(bytes(recs)), bytes(ids), bytes(tfdl))
            tails.append((np.full(len(t_sids), tid), t_sids, t_tfs, t_dls))
            rewritten.append((tid, base[tid]))
    if tails:
        tids, sids, tfs, dls = (np.concatenate([t[i] for t in tails] + [a]) for i, a in enumerate((tids, sids, tfs, dls)))
    order = np.lexsort((sids, tids))
    rows, per_token = pack(tids[order], sids[order], tfs[order], dls[order], base)
    if rewritten:
        cur.execute(_SQL["delete_blocks"], {"ids": [t for t, _ in rewritten], "block_nos": [b for _, b in rewritten],
                                            **layout})
    with cur.copy(_SQL["copy_blocks"]) as cp:
        for row in rows:
            cp.write_row(row)
    ids = list(per_token)
    cur.execute(_SQL["upsert_dirs"], {
        "ids": ids, "n_blocks": [per_token[t][0] + per_token[t][1] for t in ids],
        "tail_n": [int(np.frombuffer(per_token[t][2][-DIR.itemsize:], dtype=DIR)["n"][0]) for t in ids],
        "metas": [per_token[t][2] for t in ids], **layout})


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
    meta: str = "{}"  # pair.meta, as JSON text


@dataclass
class Dropped:
    """What a delete removed: pairs, and the sentences no pair used any more (``kept``:
    such sentences left in place because a later batch of the run relies on them)."""

    pairs: int = 0
    sentences: int = 0
    kept: list[int] = field(default_factory=list)

    def __iadd__(self, other: "Dropped") -> "Dropped":
        self.pairs += other.pairs
        self.sentences += other.sentences
        return self


def drop_pairs(cur: psycopg.Cursor, ids: list[int], protect: set[tuple[str, bytes]] | None = None) -> Dropped:
    """Delete the pairs ``ids`` in the cursor's transaction (which holds ``lock_writes``),
    and every sentence of theirs that no other pair uses, keeping the BM25 index exact:
    forward rows deleted, df and N/total length reduced, and each affected token's blocks
    rewritten from the first one that held a deleted posting (the later ones shift: a
    block is 128 consecutive postings).
    Sentences in ``protect`` (lang, sha) are left in place (see :func:`drop_unused`)."""
    if not ids:
        return Dropped()
    gone = cur.execute(_DELETE["delete_pairs"], {"ids": ids}).fetchall()
    n, kept = drop_unused(cur, sorted({sid for _, a, b in gone for sid in (a, b)}), protect)
    return Dropped(len(gone), n, kept)


def drop_unused(cur: psycopg.Cursor, candidates: list[int], protect: set[tuple[str, bytes]] | None = None
                ) -> tuple[int, list[int]]:
    """Delete those of the sentences ``candidates`` that no pair uses, with their terms,
    embeddings and BM25 entries (as :func:`drop_pairs` says): how many, and the ids of
    those left in place because ``protect`` names them (an ingest's later batches were
    told they are stored, and do not parse them again: they recheck them when they run)."""
    if not candidates:
        return 0, []
    found = cur.execute(_DELETE["orphans"], {"ids": candidates}).fetchall()
    kept = [sid for sid, lang, h in found if protect and (lang, bytes(h)) in protect]
    orphans = [sid for sid, lang, h in found if not (protect and (lang, bytes(h)) in protect)]
    if orphans:
        docs = cur.execute(_DELETE["delete_docs"], {"ids": orphans}).fetchall()
        tids = np.array([t for _, toks in docs for t in toks], dtype=np.int64)
        sids = np.array([sid for sid, toks in docs for _ in toks], dtype=np.int64)
        cur.execute(_DELETE["delete_sentence_terms"], {"ids": orphans})
        stats: dict[str, list[int]] = {}
        for lang, eligible, n in cur.execute(_DELETE["delete_sentences"], {"ids": orphans}).fetchall():
            if eligible:
                lang_stats = stats.setdefault(lang, [0, 0])
                lang_stats[0] += 1
                lang_stats[1] += n
        if stats:
            cur.execute(_DELETE["sub_bm25_stats"], {"langs": list(stats), "ns": [v[0] for v in stats.values()],
                                                    "lens": [v[1] for v in stats.values()]})
            cur.execute(_DELETE["drop_empty_stats"], {"langs": list(stats)})
        if len(tids):
            rewrite_blocks(cur, tids, sids)
    return len(orphans), kept


def rewrite_blocks(cur: psycopg.Cursor, tids: np.ndarray, sids: np.ndarray) -> None:
    """Rewrite the posting blocks of the tokens whose postings (``tids``, ``sids``) are
    deleted: each token's rows from the group holding its first deleted posting on are
    read back (bytes, decoded here), the deleted postings left out, packed again and
    replace the old rows; its directory keeps the records before them (``upsert_dirs``),
    or goes when the token has no posting left. Each token's df is recounted from its
    blocks: the full groups kept before the rewritten rows, and the postings rewritten."""
    first_deleted: dict[int, int] = {}
    for tid, sid in zip(tids.tolist(), sids.tolist()):
        if sid < first_deleted.get(tid, sid + 1):
            first_deleted[tid] = sid
    base: dict[int, int] = {}
    dirs: dict[int, Directory] = {}
    for tid, meta in cur.execute(_DELETE["dirs"], {"ids": int_array(list(first_deleted))}):
        directory = decode_dir(bytes(meta))
        j = int(np.searchsorted(directory.last, first_deleted[tid], side="left"))
        base[tid] = GROUP * (min(j, len(directory) - 1) // GROUP)
        dirs[tid] = directory[base[tid]:]
    ids = list(base)
    where = {"ids": int_array(ids), "block_nos": int_array([base[t] for t in ids])}
    parts: list[tuple[np.ndarray, ...]] = []
    for tid, b_ids, b_tfdl in cur.execute(_DELETE["blocks_from"], where):
        t_sids, t_tfs, t_dls = decode_postings(dirs[tid], bytes(b_ids), bytes(b_tfdl))
        parts.append((np.full(len(t_sids), tid, dtype=np.int64), t_sids, t_tfs, t_dls))
    cols = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dtype=np.int64) for i in range(4)]
    keep = ~np.isin(cols[1], sids)  # a deleted sentence loses all its postings: one test for every token
    order = np.lexsort((cols[1][keep], cols[0][keep]))
    packed, per_token = pack(*(c[keep][order] for c in cols), base)
    left = Counter(cols[0][keep].tolist())
    cur.execute(_DELETE["set_df"], {"ids": int_array(ids), "df": int_array([BLOCK * base[t] + left[t] for t in ids])})
    layout = {"block": BLOCK, "group": GROUP, "rec": DIR.itemsize}
    cur.execute(_DELETE["delete_blocks_from"], where)
    with cur.copy(_SQL["copy_blocks"]) as cp:
        for row in packed:
            cp.write_row(row)
    emptied = [t for t in ids if t not in per_token]
    cur.execute(_DELETE["delete_dirs"], {"ids": int_array([t for t in emptied if base[t] == 0])})
    # a token whose blocks from base[t] on are all gone keeps the full groups before them
    out = {**per_token, **{t: (base[t], 0, b"") for t in emptied if base[t] > 0}}
    if out:
        tids_out = list(out)
        cur.execute(_SQL["upsert_dirs"], {
            "ids": tids_out, "n_blocks": [out[t][0] + out[t][1] for t in tids_out],
            "tail_n": [int(np.frombuffer(out[t][2][-DIR.itemsize:], dtype=DIR)["n"][0]) if out[t][2] else BLOCK
                       for t in tids_out],
            "metas": [out[t][2] for t in tids_out], **layout})


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
        stmt = sql.SQL(_DELETE["source_pairs"]).format(src=sql.Identifier("a_id" if self.src_is_a else "b_id"))
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
