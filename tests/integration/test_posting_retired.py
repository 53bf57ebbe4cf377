"""Migration 0034 retires ``posting``: the blocks are the only inverted lists, and a
downgrade gives back every posting, signature and token bound from them (lossless)."""

from __future__ import annotations

from collections import Counter

from scoi.db.check import run_checks
from scoi.db.engine import get_engine
from scoi.db.migrate import downgrade, upgrade
from scoi.selection.preselect import preselect_blocks
from tests.helpers.bm25 import blocks_equal_postings, corpus, reference, same

BASE = [["de", "la", "de", "w1"], ["w2", ",", ",", ","], ["la"], ["w1", "w1", "w3", "de", "de", "de"]]
DOCS = [BASE[i % 4] + [f"u{i}"] for i in range(800)] + [["rare", "de"]]  # 6 blocks of "de"


def bounds(docs: list[list[str]]) -> dict[str, tuple]:
    """Per token, migration 0008's (df, df_rep, max_tf, min_dl, min_dl2, min_dl3) from their definitions."""
    out: dict[str, list[tuple[int, int]]] = {}
    for d in docs:
        for tok, tf in Counter(d).items():
            out.setdefault(tok, []).append((tf, len(d)))
    return {tok: (len(p), sum(tf >= 2 for tf, _ in p), max(tf for tf, _ in p), min(dl for _, dl in p),
                  min((dl for tf, dl in p if tf == 2), default=None), min((dl for tf, dl in p if tf >= 3), default=None))
            for tok, p in out.items()}


def test_ingest_writes_no_posting_table_and_the_index_is_whole(server_url, template_url):
    with corpus(server_url) as c:
        c.add(DOCS[:500])
        c.add(DOCS[500:])
        assert c.conn.execute("SELECT to_regclass('posting'), to_regproc('bm25_token_bit')").fetchone() == (None, None)
        blocks_equal_postings(c.conn)


def test_downgrade_refills_posting_from_the_blocks_and_upgrade_drops_it_again(server_url, template_url):
    with corpus(server_url) as c:
        c.add(DOCS[:500])
        c.add(DOCS[500:])
        blocks = "SELECT * FROM bm25_block ORDER BY 1, 2"
        forward = "SELECT sentence_id, dl, token_ids, tfs FROM bm25_doc ORDER BY 1"
        before = (c.conn.execute(blocks).fetchall(), c.conn.execute(forward).fetchall())
        engine = get_engine(c.url)
        try:
            downgrade(engine, "0036")
            # every posting of the forward rows, once, with its sentence's signature
            assert c.conn.execute("""
                SELECT count(*) FROM (SELECT u.token_id, d.sentence_id, u.tf, d.dl,
                                             (SELECT bit_or(bm25_token_bit(t)) FROM unnest(d.token_ids) t) AS sig
                                      FROM bm25_doc d CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(token_id, tf)) f
                FULL JOIN posting p USING (token_id, sentence_id)
                WHERE (p.tf, p.dl, p.sig) IS DISTINCT FROM (f.tf, f.dl, f.sig)""").fetchone()[0] == 0
            assert c.conn.execute("SELECT count(*) FROM posting p JOIN vocab v ON v.id = p.token_id "
                                  "WHERE v.lang = 'fr'").fetchone()[0] == sum(len(set(d)) for d in DOCS)
            # the token bounds of migration 0008, as ingest kept them before 0034
            got = {tok: tuple(rest) for tok, *rest in c.conn.execute(
                "SELECT token, df, df_rep, max_tf, min_dl, min_dl2, min_dl3 FROM vocab WHERE lang = 'fr'")}
            assert got == bounds(DOCS)
            assert c.conn.execute("SELECT to_regclass('posting_rep') IS NOT NULL").fetchone()[0]
            upgrade(engine)
        finally:
            engine.dispose()
        assert (c.conn.execute(blocks).fetchall(), c.conn.execute(forward).fetchall()) == before
        assert c.conn.execute("SELECT to_regclass('posting')").fetchone()[0] is None
        assert not [r.name for r in run_checks(c.url) if not r.ok and r.name != "sentence_root_term"]
        q = ["de", "w1", "w1", ","]
        assert same(preselect_blocks(c.conn, lang="fr", tgt="en", tokens=q, n=5, corpora=None),
                    reference(*c.truth(), q, 5))
