"""Random corpora written through the real ingest writer, and BM25 computed from its
definition in plain Python: what the preselection tests check the database against."""

from __future__ import annotations

import math
from collections import Counter
from contextlib import contextmanager

import psycopg

from ingest import runs
from ingest.rows import PairRow, ParsedSentence, sha
from ingest.terms import LabelRegistry
from ingest.writer import BatchWriter, lock_writes
from scoi.analysis import Analysis

K1, B = 1.5, 0.75


def reference(docs: dict[int, list[str]], pairs_of: dict[int, list[int]], q: list[str], n: int
              ) -> list[tuple[int, float]]:
    """Top n (pair id, score): Lucene BM25 over the distinct sentences ``docs``, query
    repeats counted, ranked by score then pair id; a sentence with several pairs gives
    tied pairs, one with none (``pairs_of``) gives none."""
    n_docs = len(docs)
    if not n_docs:
        return []
    avgdl = sum(map(len, docs.values())) / n_docs
    df = Counter(t for d in docs.values() for t in set(d))
    out = []
    for sid, d in docs.items():
        tf = Counter(d)
        norm = K1 * (1 - B + B * len(d) / avgdl)
        terms = [math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] / (tf[t] + norm) for t in q if tf[t]]
        if terms:
            out += [(p, round(math.fsum(terms), 9)) for p in pairs_of.get(sid, ())]
    return sorted(out, key=lambda x: (-x[1], x[0]))[:n]


def reference_pool(docs: dict[int, list[str]], pairs_of: dict[int, list[int]], q: list[str], n: int
                   ) -> list[tuple[int, float]]:
    """The selector's pool: the top n source sentences by :func:`reference`, each by its
    best-ranked pair (the same score for all its pairs: the lowest pair id)."""
    return reference(docs, {sid: [min(pids)] for sid, pids in pairs_of.items() if pids}, q, n)


class Corpus:
    """French sentences (random token lists) paired with unique English or German filler,
    written batch by batch through ``BatchWriter``, in one or more corpora. The same
    French tokens in two batches are one sentence with two pairs."""

    def __init__(self, url: str, conn: psycopg.Connection) -> None:
        self.url, self.conn = url, conn
        self.writers: dict[tuple[str, str], BatchWriter] = {}
        self.lines = 0

    def _writer(self, name: str, tgt: str, on_conflict: str | None = None) -> BatchWriter:
        """The run writing ``tgt`` pairs into corpus ``name``; with ``on_conflict``, a new
        run of that mode (each such batch is a run of its own, as a rerun of a file is)."""
        if on_conflict is not None and (name, tgt) in self.writers:
            runs.finish_run(self.conn, self.writers.pop((name, tgt)).run_id, "done")
        if (name, tgt) not in self.writers:
            conn = self.conn
            a, b = sorted(("fr", tgt))
            with conn.transaction():
                lock_writes(conn)
                corpus_id = runs.get_or_create_corpus(conn, name, "fr", tgt)[0]
                pids = {lang: runs.get_or_create_parser(conn, lang, "test", "0", "spacy") for lang in (a, b)}
                run_id = runs.start_run(conn, corpus_id=corpus_id, files=[], fmt="test", workers=0, parsers="{}",
                                        host="test", pid=0)
            self.writers[(name, tgt)] = BatchWriter(
                conn, corpus_id=corpus_id, run_id=run_id, a_lang=a, b_lang=b, parsers=pids,
                labels={lang: LabelRegistry(conn, pid, []) for lang, pid in pids.items()},
                on_conflict=on_conflict or "add", src_lang="fr")
        return self.writers[(name, tgt)]

    def finish(self, name: str) -> None:
        """End the runs writing into corpus ``name`` (a corpus is deleted only when no
        ingest into it runs); its next batch starts a new run."""
        for key in [k for k in self.writers if k[0] == name]:
            runs.finish_run(self.conn, self.writers.pop(key).run_id, "done")

    def add(self, frs: list[list[str]], corpus: str = "random", tgt: str = "en", on_conflict: str | None = None
            ) -> BatchWriter:
        sentences, pairs = [], []
        for toks in frs:
            self.lines += 1
            fr_text, other = " ".join(toks), f"filler {self.lines}"
            sentences += [ParsedSentence("fr", fr_text, sha(fr_text), Analysis(toks)),
                          ParsedSentence(tgt, other, sha(other), Analysis(other.split()))]
            a, b = (sha(other), sha(fr_text)) if tgt < "fr" else (sha(fr_text), sha(other))
            pairs.append(PairRow(self.lines, a, b))
        writer = self._writer(corpus, tgt, on_conflict)
        writer.write(sentences, pairs, read=len(pairs), rejected=0)
        if on_conflict is not None:  # a run of its own, over
            runs.finish_run(self.conn, self.writers.pop((corpus, tgt)).run_id, "done")
        return writer

    def truth(self, tgt: str = "en", corpora: list[str] | None = None, where: dict[str, str] | None = None
              ) -> tuple[dict[int, list[str]], dict[int, list[int]]]:
        """(every eligible French sentence's lowercased tokens, its fr-tgt pairs of ``corpora``
        whose metadata holds every ``where`` key with that value), filtered here in Python."""
        docs = {sid: [t.lower() for t in toks] for sid, toks in self.conn.execute(
            "SELECT id, tokens FROM sentence WHERE lang = 'fr' AND eligible")}
        pairs_of: dict[int, list[int]] = {}
        for sid, pid, name, meta in self.conn.execute(
                "SELECT e.src_id, e.pair_id, c.name, p.meta FROM example e JOIN corpus c ON c.id = e.corpus_id "
                "JOIN pair p ON p.id = e.pair_id WHERE e.src_lang = 'fr' AND e.tgt_lang = %s ORDER BY e.pair_id",
                (tgt,)):
            if (corpora is None or name in corpora) and all(meta.get(k) == v for k, v in (where or {}).items()):
                pairs_of.setdefault(sid, []).append(pid)
        return docs, pairs_of

    def tag_pairs(self) -> None:
        """Metadata on every pair for the ``--where`` cases: domain legal on every third
        pair (by id), news on the others, and client acme on every other one."""
        self.conn.execute("UPDATE pair SET meta = jsonb_build_object("
                          "'domain', CASE WHEN id % 3 = 0 THEN 'legal' ELSE 'news' END) "
                          "|| CASE WHEN id % 2 = 0 THEN '{\"client\": \"acme\"}'::jsonb ELSE '{}' END")

    def corpus_ids(self, names: list[str] | None) -> list[int] | None:
        if names is None:
            return None
        return [r[0] for r in self.conn.execute("SELECT id FROM corpus WHERE name = ANY(%s)", (names,))]


@contextmanager
def corpus(server_url: str):
    from tests.helpers.database import fresh_database

    with fresh_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        yield Corpus(url, conn)


def same(got: list[tuple[int, float]], exp: list[tuple[int, float]], tol: float = 1e-6) -> bool:
    """Equal top n, up to ties that floating point may order either way.

    Both sides round scores to 1e-9, but two equal sums computed in another order can
    round to neighbouring values when they sit on a rounding boundary (seen once in
    ~1,000 examples), and then score, not pair id, orders them. So: the same scores in
    the same order (within ``tol``), every returned pair has its reference score, and the
    pairs scoring clearly above the n-th score are the same.
    """
    if len(got) != len(exp) or len({p for p, _ in got}) != len(got):
        return False
    if any(abs(a - b) > tol for (_, a), (_, b) in zip(got, exp)):
        return False
    if [p for p, _ in got] == [p for p, _ in exp]:
        return True
    scores = {p: s for p, s in exp}
    last = exp[-1][1] if exp else 0.0
    return (all(p in scores and abs(scores[p] - s) <= tol for p, s in got if s > last + tol)
            and {p for p, s in got if s > last + tol} == {p for p, s in exp if s > last + tol})


def blocks_equal_postings(conn: psycopg.Connection) -> None:
    """The posting blocks hold exactly the postings of the eligible sentences' tokens
    (lowercased, counted here from ``sentence.tokens``: tf, and dl = the sentence's
    length), in id order, cut in blocks of 128, full groups of 8 stored in one row and the
    other blocks one row each, with directories that match them (what a rebuild would
    write); and the forward rows are the same postings by sentence."""
    from scoi.core.bm25blocks import BLOCK, GROUP, decode_dir, decode_postings, open_from

    ids = {(lang, tok): vid for vid, lang, tok in conn.execute("SELECT id, lang, token FROM vocab")}
    want: dict[int, list[tuple[int, int, int]]] = {}
    forward = {}
    for sid, lang, tokens, n in conn.execute("SELECT id, lang, tokens, n_tokens FROM sentence WHERE eligible ORDER BY id"):
        counts = sorted((ids[(lang, tok)], tf) for tok, tf in Counter(t.lower() for t in tokens).items())
        forward[sid] = (n, [t for t, _ in counts], [tf for _, tf in counts])
        for tid, tf in counts:
            want.setdefault(tid, []).append((sid, tf, n))
    assert forward == {sid: (dl, tids, tfs) for sid, dl, tids, tfs in conn.execute(
        "SELECT sentence_id, dl, token_ids, tfs FROM bm25_doc")}
    assert {tid: len(p) for tid, p in want.items()} == dict(conn.execute("SELECT id, df FROM vocab WHERE df > 0").fetchall())
    dirs = {tid: (n, tail, decode_dir(bytes(meta))) for tid, n, tail, meta in conn.execute(
        "SELECT token_id, n_blocks, tail_n, meta FROM bm25_dir")}
    assert set(dirs) == set(want), (set(dirs) ^ set(want))
    for tid, (n_blocks, tail_n, d) in dirs.items():
        stored = [r[0] for r in conn.execute("SELECT block_no FROM bm25_block WHERE token_id = %s ORDER BY block_no",
                                             (tid,))]
        grouped = open_from(n_blocks, tail_n)
        assert stored == list(range(0, grouped, GROUP)) + list(range(grouped, n_blocks)), tid
        rows = conn.execute("SELECT block_no, ids, tfdl FROM bm25_block_unpacked WHERE token_id = %s ORDER BY block_no",
                            (tid,)).fetchall()
        assert [r[0] for r in rows] == list(range(n_blocks)) == list(range(len(d))), tid
        got = []
        for i, (_, ids, tfdl) in enumerate(rows):
            rec = d[i:i + 1]
            sids, tf, dl = decode_postings(rec, bytes(ids), bytes(tfdl))
            assert (rec.first[0], rec.last[0], rec.n[0], rec.max_tf[0]) == (sids[0], sids[-1], len(sids), tf.max())
            for got_dl, m in ((rec.dl1[0], tf == 1), (rec.dl2[0], tf == 2), (rec.dl3[0], tf >= 3)):
                assert got_dl == (dl[m].min() if m.any() else 0), tid
            got += list(zip(sids.tolist(), tf.tolist(), dl.tolist()))
        assert got == want[tid], tid
        assert all(r == BLOCK for r in d.n[:-1]) and tail_n == d.n[-1], tid
