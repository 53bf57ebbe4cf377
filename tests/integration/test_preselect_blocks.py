"""Block preselection (migration 0016, scoi/selection/preselect.py): exact BM25 top n, proven.

Random corpora go through the real ingest writer in several batches (each appends to
the tokens' last blocks), into several corpora and two directions (fr-en, fr-de), with
French sentences shared between pairs; after each batch the blocks must equal the
postings, and the preselection, under random reading budgets, must equal BM25 computed
in plain Python, with and without a corpus filter.
"""

from __future__ import annotations

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoi.selection.preselect import Stats, preselect_blocks
from tests.helpers.bm25 import blocks_equal_postings, corpus, reference, same

# A skewed vocabulary: a few tokens in most sentences, many rare ones.
VOCAB = ["de", "la", ",", "le", "et"] + [f"w{i}" for i in range(25)]
token = st.one_of(st.sampled_from(VOCAB[:5]), st.sampled_from(VOCAB))
sentence = st.lists(token, min_size=1, max_size=14)
query = st.lists(st.one_of(token, st.just("inconnu")), min_size=1, max_size=10)
batch = st.tuples(st.lists(sentence, min_size=1, max_size=60), st.sampled_from(["a", "b"]),
                  st.sampled_from(["en", "en", "de"]))
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow])


#: (target, corpora, metadata filter) of the parity cases
FILTERS = (("en", None, None), ("en", ["a"], None), ("de", None, None), ("en", ["b"], None),
           ("en", None, {"domain": "legal"}), ("en", ["a"], {"domain": "legal", "client": "acme"}))


def blocks(conn: psycopg.Connection, q: list[str], n: int, tgt: str = "en", corpora: list[int] | None = None,
           **kw) -> list[tuple[int, float]]:
    return preselect_blocks(conn, lang="fr", tgt=tgt, tokens=q, n=n, corpora=corpora, **kw)


@SETTINGS
@given(batches=st.lists(batch, min_size=1, max_size=4), queries=st.lists(query, min_size=1, max_size=3),
       n=st.integers(1, 12), read_all=st.sampled_from([0, 0, 10**9]), budget=st.integers(0, 200),
       probe=st.integers(1, 30))
def test_blocks_equal_python_bm25_after_each_batch(server_url, template_url, batches, queries, n, read_all, budget,
                                                   probe):
    with corpus(server_url) as c:
        for frs, name, tgt in batches:
            # repeat some earlier French sentences: one sentence, pairs in several corpora
            c.add(frs + frs[: len(frs) // 5], corpus=name, tgt=tgt)
            c.tag_pairs()
            blocks_equal_postings(c.conn)
            for q in queries:
                for tgt_, corpora, where in FILTERS:
                    docs, pairs_of = c.truth(tgt_, corpora, where)
                    exp = reference(docs, pairs_of, q, n)
                    got = blocks(c.conn, q, n, tgt_, c.corpus_ids(corpora), read_all=read_all, budget=budget,
                                 probe=probe, where=where)
                    assert same(got, exp), (q, tgt_, corpora, where, got, exp)


def test_blocks_span_many_blocks_and_skip_common_ones(server_url, template_url):
    """Lists longer than a block, appended over batches; a query whose rare token decides
    the top n reads far fewer postings than its tokens have."""
    frs = [["de", "la", f"w{i % 7}", f"u{i}"] + ["de"] * (i % 3) for i in range(700)] + [["rare", "de"], ["rare", "rare"]]
    with corpus(server_url) as c:
        for i in range(0, len(frs), 150):
            c.add(frs[i:i + 150])
        blocks_equal_postings(c.conn)
        docs, pairs_of = c.truth()
        q = ["rare", "de", "la"]
        stats = Stats()
        got = blocks(c.conn, q, 2, read_all=0, budget=0, stats=stats)
        assert same(got, reference(docs, pairs_of, q, 2))
        assert stats.blocks_total > 10 and stats.postings < 100, stats
        q = ["de", "la", "w3", "de"]
        assert same(blocks(c.conn, q, 50), reference(docs, pairs_of, q, 50))
        # scoi db check compares the blocks with the forward rows, and names a broken one
        from scoi.db.check import run_checks

        names = ["bm25_blocks", "bm25_doc_postings", "bm25_dirs"]
        assert all(r.ok for r in run_checks(c.url, names))
        c.conn.execute("UPDATE bm25_block SET tfdl = overlay(tfdl placing '\\x7f7f'::bytea from 1) "
                       "WHERE (token_id, block_no) = (SELECT token_id, 0 FROM bm25_dir WHERE n_blocks > 1 LIMIT 1)")
        c.conn.execute("UPDATE bm25_dir SET tail_n = tail_n + 1 WHERE token_id = (SELECT min(token_id) FROM bm25_dir)")
        assert {r.name: r.violations for r in run_checks(c.url, names)} == {
            "bm25_blocks": 0, "bm25_doc_postings": 1, "bm25_dirs": 1}


def test_a_batch_rewrites_the_partial_block_until_its_postings_fill_the_group(server_url, template_url):
    """Appending to a token rewrites its partial last block, not the full blocks before it
    in its open group (they keep their row versions: rewriting them made a batch rewrite
    ~50 postings per one added at 1M pairs); the batch whose postings fill the group
    reads them back and stores the group as one row."""
    from scoi.core.bm25blocks import BLOCK

    with corpus(server_url) as c:
        c.add([["de", f"u{i}"] for i in range(3 * BLOCK + 5)])
        (tid,) = c.conn.execute("SELECT id FROM vocab WHERE lang = 'fr' AND token = 'de'").fetchone()

        def rows() -> list[tuple[int, str]]:
            return c.conn.execute("SELECT block_no, xmin::text FROM bm25_block WHERE token_id = %s ORDER BY block_no",
                                  (tid,)).fetchall()

        before = rows()
        assert [b for b, _ in before] == [0, 1, 2, 3]
        c.add([["de", f"v{i}"] for i in range(10)])
        after = rows()
        assert after[:3] == before[:3] and [b for b, _ in after] == [0, 1, 2, 3]
        assert after[3][1] != before[3][1]
        blocks_equal_postings(c.conn)
        c.add([["de", f"w{i}"] for i in range(BLOCK + 10)])  # 5 blocks, the last one partial: no group yet
        assert [b for b, _ in rows()][:3] == [0, 1, 2] and rows()[:3] == before[:3]
        blocks_equal_postings(c.conn)
        c.add([["de", f"x{i}"] for i in range(4 * BLOCK)])  # 389 + 10 + 138 + 512 postings: 8 full blocks and 25
        assert [b for b, _ in rows()] == [0, 8]
        blocks_equal_postings(c.conn)
        docs, pairs_of = c.truth()
        assert same(blocks(c.conn, ["de", "x3"], 5), reference(docs, pairs_of, ["de", "x3"], 5))


def test_full_groups_of_blocks_are_one_row_and_read_the_same(server_url, template_url):
    """A token in thousands of sentences, appended in uneven batches: each group of 8 full
    blocks becomes one row the moment it fills (within a batch or across batches), the
    other blocks stay one row each, and both the whole-list read and the MaxScore path
    (which cuts single blocks out of grouped rows) equal plain-Python BM25. scoi db check
    sees a changed byte inside a grouped row."""
    frs = [["de", f"w{i % 11}", f"u{i % 401}"] + ["la"] * (i % 4 == 0) + ["de"] * (i % 5 == 0) for i in range(2700)]
    frs[300], frs[1100] = ["rare", "de"], ["rare", "rare", "la"]  # inside grouped rows of "de" and "la"
    with corpus(server_url) as c:
        for lo, hi in ((0, 300), (300, 1400), (1400, 1450), (1450, len(frs))):
            c.add(frs[lo:hi])
            blocks_equal_postings(c.conn)
        n_rows, n_blocks = c.conn.execute(
            "SELECT (SELECT count(*) FROM bm25_block), (SELECT sum(n_blocks) FROM bm25_dir)").fetchone()
        assert n_rows < n_blocks
        # a rebuild from the forward rows (migration 0016, the 1M benchmark) writes the same rows
        from scoi.db.queries import load

        stored = "SELECT * FROM bm25_block ORDER BY 1, 2"
        dirs = "SELECT * FROM bm25_dir ORDER BY 1"
        before = (c.conn.execute(stored).fetchall(), c.conn.execute(dirs).fetchall())
        with c.conn.transaction():
            c.conn.execute(load("bm25")["rebuild_blocks"])
        assert (c.conn.execute(stored).fetchall(), c.conn.execute(dirs).fetchall()) == before
        docs, pairs_of = c.truth()
        cut = []
        for q, n in ((["rare", "de", "la"], 2), (["de", "la", "w3", "de", "u17"], 40), (["la", "w5"], 100)):
            exp = reference(docs, pairs_of, q, n)
            assert same(blocks(c.conn, q, n), exp), q
            stats = Stats()
            assert same(blocks(c.conn, q, n, read_all=0, budget=0, probe=5, stats=stats), exp), q
            cut.append(0 < stats.blocks < stats.blocks_total)
        assert cut[0], "the rare query reads single blocks"
        # the statement MaxScore reads single blocks with, for every block: cut from its row
        from scoi.core.bm25blocks import BLOCK
        from scoi.db.literals import int_array
        from scoi.selection.preselect import SQL

        want = c.conn.execute("SELECT token_id, block_no, ids, tfdl FROM bm25_block_unpacked "
                              "ORDER BY token_id, block_no DESC").fetchall()
        got = {tid: (bytes(ids), bytes(tfdl)) for tid, ids, tfdl in c.conn.execute(SQL["blocks_fetch"], {
            "ids": int_array([r[0] for r in want]), "block_nos": int_array([r[1] for r in want]), "block": BLOCK})}
        for tid in {r[0] for r in want}:
            mine = [r for r in want if r[0] == tid]
            assert got[tid] == (b"".join(bytes(r[2]) for r in mine), b"".join(bytes(r[3]) for r in mine)), tid
        from scoi.db.check import run_checks

        assert all(r.ok for r in run_checks(c.url, ["bm25_blocks", "bm25_dirs"]))
        c.conn.execute("UPDATE bm25_block SET ids = overlay(ids placing '\\x00000001'::bytea from 4 * 128 * 5 + 9) "
                       "WHERE (token_id, block_no) = (SELECT token_id, 8 FROM bm25_block WHERE length(tfdl) = 2048 "
                       "AND block_no = 8 LIMIT 1)")
        assert {r.name: r.violations for r in run_checks(c.url, ["bm25_blocks", "bm25_dirs"])} == {
            "bm25_blocks": 1, "bm25_dirs": 0}


# A process that commits one batch, then stops inside the next batch's transaction right
# after it deleted the tokens' last blocks and before it writes their replacements.
CHILD = """
import json, sys, time
import psycopg
from tests.helpers.bm25 import Corpus
url, batches = sys.argv[1], json.loads(sys.argv[2])
c = Corpus(url, psycopg.connect(url, autocommit=True))
c.add(batches[0])
real = psycopg.Cursor.copy
def copy(self, statement, *args, **kwargs):
    if "bm25_block" in str(statement):
        print("mid-maintenance", flush=True)
        time.sleep(600)
    return real(self, statement, *args, **kwargs)
psycopg.Cursor.copy = copy
c.add(batches[1])
"""


def test_kill_9_mid_maintenance_leaves_the_index_whole(server_url, template_url):
    """Readers are not blocked by a batch rewriting blocks (they read the committed
    versions), and ``kill -9`` in the middle leaves the blocks equal to the postings and
    the preselection equal to plain-Python BM25; later batches append as usual."""
    import json
    import os
    import signal
    import subprocess
    import sys

    first = [["de", "la", f"w{i % 9}", f"u{i}"] + ["de"] * (i % 3) for i in range(300)]
    second = [["de", "w1", f"v{i}", "la", "la"] for i in range(200)]
    q = ["w1", "de", "la", "la", "u7"]
    with corpus(server_url) as c:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        proc = subprocess.Popen([sys.executable, "-c", CHILD, c.url, json.dumps([first, second])], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": root})
        try:
            line = proc.stdout.readline()
            assert line.strip() == "mid-maintenance", (line, proc.stderr.read() if proc.poll() is not None else "")
            with psycopg.connect(c.url, autocommit=True) as reader:
                reader.execute("SET statement_timeout = '20s'")  # a blocked read fails instead of hanging
                docs, pairs_of = c.truth()
                assert len(docs) == 300  # the open batch is invisible
                assert same(blocks(reader, q, 20), reference(docs, pairs_of, q, 20))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        blocks_equal_postings(c.conn)
        docs, pairs_of = c.truth()
        assert len(docs) == 300
        assert same(blocks(c.conn, q, 20), reference(docs, pairs_of, q, 20))
        c.add(second)  # the same batch again, by another writer: appends where the first left off
        blocks_equal_postings(c.conn)
        docs, pairs_of = c.truth()
        assert len(docs) == 500
        assert same(blocks(c.conn, q, 20), reference(docs, pairs_of, q, 20))


def test_many_queries_at_once_equal_one_by_one(server_url, template_url):
    """preselect_many (batches: select --file, job preparation) returns what
    preselect_blocks returns query by query, on the read-all and the per-query paths."""
    from scoi.selection.preselect import preselect_many

    frs = [["de", "la", f"w{i % 11}", f"u{i % 50}"] + ["la"] * (i % 4) for i in range(400)]
    queries = [["de", "w1", "u3"], ["la", "la", "w2"], [], ["inconnu"], ["u7", "de", "de", "w10", "la"]]
    with corpus(server_url) as c:
        c.add(frs[:250])
        c.add(frs[250:], corpus="b")
        c.tag_pairs()
        for read_all in (10**9, 0):
            for names, where in ((None, None), (["b"], None), (None, {"domain": "legal"})):
                corpora = c.corpus_ids(names)
                many = preselect_many(c.conn, lang="fr", tgt="en", token_lists=queries, n=15, corpora=corpora,
                                      where=where, read_all=read_all, budget=0)
                one = [blocks(c.conn, q, 15, corpora=corpora, where=where) if q else [] for q in queries]
                assert all(same(a, b) for a, b in zip(many, one)), (read_all, corpora, where)
                docs, pairs_of = c.truth(corpora=names, where=where)
                assert all(same(a, reference(docs, pairs_of, q, 15)) for a, q in zip(many, queries))


def test_migration_0022_groups_and_ungroups_stored_blocks(server_url, template_url):
    """0022 on a database written one row per block: full groups of 8 become one row, the
    lists read the same; downgrade splits them back."""
    from scoi.db.engine import dispose_engines, get_engine
    from scoi.db.migrate import downgrade, upgrade

    frs = [["de", f"w{i % 7}", f"u{i}"] + ["la"] * (i % 3 == 0) for i in range(2200)]
    q = ["de", "la", "w2"]
    with corpus(server_url) as c:
        c.add(frs[:1500])
        c.add(frs[1500:])
        docs, pairs_of = c.truth()
        exp = reference(docs, pairs_of, q, 30)
        lists = "SELECT token_id, string_agg(ids, ''::bytea ORDER BY block_no) FROM bm25_block GROUP BY 1 ORDER BY 1"
        before = c.conn.execute(lists).fetchall()
        engine = get_engine(c.url)
        downgrade(engine, "0021")
        assert c.conn.execute("SELECT max(length(tfdl)) FROM bm25_block").fetchone()[0] == 256
        assert c.conn.execute(lists).fetchall() == before
        # today's statements read pair.meta (0023, the --where filter): lent for the read of
        # the old block layout, dropped again before 0023 adds it back
        c.conn.execute("ALTER TABLE pair ADD COLUMN meta jsonb NOT NULL DEFAULT '{}'")
        assert same(blocks(c.conn, q, 30), exp)
        c.conn.execute("ALTER TABLE pair DROP COLUMN meta")
        upgrade(engine)
        dispose_engines()
        assert c.conn.execute("SELECT count(*) FROM bm25_block b JOIN vocab v ON v.id = b.token_id "
                              "WHERE v.lang = 'fr' AND length(b.tfdl) = 2048").fetchone()[0] >= 2
        assert c.conn.execute(lists).fetchall() == before
        blocks_equal_postings(c.conn)
        assert same(blocks(c.conn, q, 30), exp)


def test_streamed_chunks_sum_the_same_in_any_order(server_url, template_url):
    """The read-all path sums each token's chunks in (df, id, chunk) order whatever order
    the rows come in: the real rows of a query spanning several chunks, shuffled, give
    the same floats, and the same pool."""
    import random

    from scoi.core.bm25blocks import DIR
    from scoi.selection.blockread import NO_CACHE, sum_chunks
    from scoi.selection.preselect import SQL

    frs = [["de", f"w{i % 13}", f"u{i}"] + ["la"] * (i % 3 == 0) for i in range(2600)]
    with corpus(server_url) as c:
        c.add(frs)
        rows = c.conn.cursor(binary=True).execute(SQL["blocks_stream"], {
            "lang": "fr", "tokens": ["de", "la", "w4", "la"], "read_all": 2**62, "chunk": 8, "rec": DIR.itemsize,
            **NO_CACHE}
        ).fetchall()
        assert len({(r[0], r[2]) for r in rows}) == len(rows) > 4
        _, ordered = sum_chunks(rows, 1.5, 0.75, Stats())
        for seed in range(5):
            shuffled = rows[:]
            random.Random(seed).shuffle(shuffled)
            _, again = sum_chunks(shuffled, 1.5, 0.75, Stats())
            assert again.sums.tobytes() == ordered.sums.tobytes()


def snapshot_of(conn: psycopg.Connection):
    """``conn`` inside one REPEATABLE READ, read-only transaction (the selector's), so
    that its snapshot can be exported to the helper connections."""
    from contextlib import contextmanager

    @contextmanager
    def held():
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
    return held()


@SETTINGS
@given(batches=st.lists(batch, min_size=1, max_size=3), queries=st.lists(query, min_size=1, max_size=3),
       n=st.integers(1, 12), helpers=st.integers(1, 3), read_all=st.sampled_from([0, 10**9, 10**9]))
def test_ranges_on_several_connections_equal_python_bm25(server_url, template_url, batches, queries, n, helpers,
                                                         read_all):
    """Sentence-id ranges read and summed on 2-4 connections (one exported snapshot) and
    merged: the same pools as plain-Python BM25, for every filter; above read_all the
    MaxScore path runs on the first connection alone."""
    with corpus(server_url) as c:
        extra = [psycopg.connect(c.url, autocommit=True) for _ in range(helpers)]
        try:
            for frs, name, tgt in batches:
                c.add(frs + frs[: len(frs) // 5], corpus=name, tgt=tgt)
                c.tag_pairs()
                for q in queries:
                    for tgt_, corpora, where in FILTERS:
                        docs, pairs_of = c.truth(tgt_, corpora, where)
                        exp = reference(docs, pairs_of, q, n)
                        with snapshot_of(c.conn):
                            got = blocks(c.conn, q, n, tgt_, c.corpus_ids(corpora), where=where, helpers=extra,
                                         read_all=read_all, budget=0)
                        assert same(got, exp), (q, tgt_, corpora, where, got, exp)
        finally:
            for h in extra:
                h.close()


def test_ranges_cut_grouped_rows_and_read_one_snapshot(server_url, template_url):
    """Lists of grouped and open rows cut into 2-5 ranges: each range reads its rows (an
    edge row at most twice), the merged pools equal one connection's and plain-Python
    BM25; and a batch committed after the snapshot was taken is invisible to every range,
    the helpers' included (it holds the best matches, all in the last range), until the
    next transaction."""
    frs = [["de", f"w{i % 11}", f"u{i % 401}"] + ["la"] * (i % 4 == 0) + ["de"] * (i % 5 == 0) for i in range(2700)]
    queries = [(["de", "la", "w3", "de", "u17"], 40), (["la", "w5"], 100), (["u3", "w1"], 7), (["w2", "de"], 300)]
    with corpus(server_url) as c:
        c.add(frs[:1400])
        c.add(frs[1400:])
        docs, pairs_of = c.truth()
        extra = [psycopg.connect(c.url, autocommit=True) for _ in range(4)]
        reader = psycopg.connect(c.url, autocommit=True)
        try:
            for q, n in queries:
                exp = reference(docs, pairs_of, q, n)
                one = Stats()
                with snapshot_of(reader):
                    assert same(blocks(reader, q, n, stats=one), exp), q
                for k in (1, 2, 4):
                    st_k = Stats()
                    with snapshot_of(reader):
                        assert same(blocks(reader, q, n, helpers=extra[:k], stats=st_k), exp), (q, k)
                    assert one.postings <= st_k.postings <= one.postings + 2 * k * len(set(q)) * 8 * 128, (q, k)
            q = ["w7", "u9", "la"]
            before = reference(docs, pairs_of, q, 20)
            with snapshot_of(reader):
                blocks(reader, ["de"], 1)  # the snapshot is taken here
                c.add([["w7", "u9", "la"]] * 1 + [["w7", "u9", "la", f"v{i}"] for i in range(30)])
                assert same(blocks(reader, q, 20, helpers=extra[:2]), before)
            docs, pairs_of = c.truth()
            after = reference(docs, pairs_of, q, 20)
            assert not same(after, before)
            with snapshot_of(reader):
                assert same(blocks(reader, q, 20, helpers=extra[:2]), after)
        finally:
            for h in [*extra, reader]:
                h.close()
