"""Selection speed and preselection quality on the ../shared/data fr→en database.

Prints, over 200 French queries that are not in the database (Multi30k test_2016_flickr):
p50/p95 of preselection and candidate fetch (each as its own statement), of the two in
the single statement ``Selector.select`` runs, of coverage and of end-to-end selection; mean
overlap@100 of the SQL preselection with exact BM25 (bm25s, method="lucene", k1=1.5,
b=0.75, over the same lowercased Moses tokens); and the coverage step's speed-up over the
straightforward SPEC §4 implementation (tests/reference.py: recompute every candidate
set's coverage from scratch) on the same pools, measured in the same run.

    SCOI_DATABASE_URL=... python benchmarks/bench_select.py      # an existing database
    python benchmarks/bench_select.py --build                     # ingest ../shared/data first
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from shared_data import available, corpus_files, held_out_queries, warm_up  # noqa: E402


def build(url: str) -> None:
    from ingest.pipeline import IngestOptions, ingest_files

    for fr, en in corpus_files():
        s = ingest_files(IngestOptions(files=[str(fr), str(en)], src="fr", tgt="en", corpus="shared",
                                       workers=2, skip_bad=True), url)
        print(f"  ingested {fr.name}: {s.inserted} pairs in {s.seconds:.0f}s")


def exact_bm25_top(conn, queries_tokens: list[list[str]], n: int) -> list[list[int]]:
    """Exact BM25 top-n pair ids (bm25s lucene) over the eligible French sentences."""
    import bm25s

    rows = conn.execute("""
        SELECT s.id, s.tokens, p.id FROM sentence s
        JOIN pair p ON (p.a_id = s.id AND p.a_lang = 'fr' AND p.b_lang = 'en')
                    OR (p.b_id = s.id AND p.b_lang = 'fr' AND p.a_lang = 'en')
        WHERE s.lang = 'fr' AND s.eligible""").fetchall()
    docs: dict[int, list[str]] = {}
    pairs: dict[int, list[int]] = {}
    for sid, toks, pid in rows:
        docs[sid] = [t.lower() for t in toks]
        pairs.setdefault(sid, []).append(pid)
    sids = sorted(docs)
    model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    model.index([docs[s] for s in sids], show_progress=False)
    vocab = model.vocab_dict
    first_pair = np.array([min(pairs[s]) for s in sids])
    out = []
    for toks in queries_tokens:
        ids = [vocab[t.lower()] for t in toks if t.lower() in vocab]
        scores = model.get_scores(ids) if ids else np.zeros(len(sids))
        order = np.lexsort((first_pair, -scores))[: n + 20]
        top: list[int] = []
        for i in order:
            top.extend(sorted(pairs[sids[i]]))
        out.append(top[:n])
    return out


def pct(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="store_true", help="ingest ../shared/data into a fresh database first")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--reference-queries", type=int, default=50, help="queries timed with the slow reference")
    args = ap.parse_args()
    if not available():
        sys.exit("../shared/data is not there; this benchmark needs it")
    from scoi.db.engine import create_database, get_engine, resolve_database
    from scoi.selector import Selector

    url = resolve_database().url
    if args.build:
        url = create_database(url, "scoi_bench_select")
        get_engine(url)
        build(url)
    sel = Selector("fr", "en", url=url, k=4, pool=100)
    n_pairs = sel.conn.execute("SELECT count(*) FROM pair").fetchone()[0]
    queries = held_out_queries(args.queries)
    warm_up(sel.select)
    timings, tokens, pools = [], [], []
    for q in queries:
        r = sel.select(q)
        # The two SQL steps alone (select runs them as one statement, timed as "pool").
        t0 = time.perf_counter()
        scored = sel.preselect(r.query_tokens)
        t1 = time.perf_counter()
        sel.fetch(scored)
        t2 = time.perf_counter()
        timings.append({**r.timings_ms, "preselect": 1000 * (t1 - t0), "fetch": 1000 * (t2 - t1)})
        tokens.append(r.query_tokens)
        pools.append((r.query_tokens, r.query_terms, r.candidates))

    exact = exact_bm25_top(sel.conn, tokens, 100)
    overlaps = []
    for (toks, _, cands), ref in zip(pools, exact):
        if ref:
            overlaps.append(len({c.pair_id for c in cands} & set(ref)) / len(ref))

    # Coverage speed-up on the same pools: fast path vs reference (SPEC §4 as written).
    import reference
    from scoi.core.greedy import select as fast_select

    fast_t, ref_t = [], []
    for toks, terms, cands in pools[: args.reference_queries]:
        q, q_ids, cs, table = sel._matrices(terms, cands)
        t0 = time.perf_counter()
        a = fast_select(q, toks, cs, k=4, method="scoi", term_table=table, query_term_ids=q_ids)
        t1 = time.perf_counter()
        b = reference.select(q, toks, cs, k=4, method="scoi")
        t2 = time.perf_counter()
        assert [p.index for p in a] == [p.index for p in b], "fast and reference disagree"
        fast_t.append(t1 - t0)
        ref_t.append(t2 - t1)
    speedup = sum(ref_t) / sum(fast_t)

    print(f"database: {n_pairs} pairs; {len(queries)} queries (after 200 other warm-up queries); "
          f"k=4, pool=100; {os.cpu_count()} cores")
    print()
    print("| step | p50 ms | p95 ms | target |")
    print("| --- | --- | --- | --- |")
    for key, label, target in (("preselect", "preselection (SQL)", "p95 <= 20"),
                               ("fetch", "candidate fetch (SQL, as a second statement)", ""),
                               ("pool", "preselection + fetch in one statement (what select runs)", ""),
                               ("coverage", "coverage + greedy (numpy)", ""),
                               ("select", "end-to-end selection (excl. query parse)", "p50 <= 15"),
                               ("analyze", "query parse (Moses + spaCy)", ""), ("total", "total incl. parse", "")):
        p50, p95 = pct([t[key] for t in timings])
        print(f"| {label} | {p50:.1f} | {p95:.1f} | {target} |")
    print()
    print(f"mean overlap@100 with exact BM25: {np.mean(overlaps):.3f} (min {min(overlaps):.2f}; target >= 0.95)")
    print(f"coverage speed-up over the SPEC §4 reference: {speedup:.0f}x "
          f"(fast {1000 * np.mean(fast_t):.2f} ms vs reference {1000 * np.mean(ref_t):.0f} ms per query, "
          f"{len(fast_t)} pools; target >= 20x)")


if __name__ == "__main__":
    main()
