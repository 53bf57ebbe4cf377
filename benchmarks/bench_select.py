"""Selection speed and preselection quality on the fr→en development corpora (shared_data.DATA; SCOI_DEV_DATA).

Two query sets, side by side, neither in the database: *short*, 200 French Multi30k
test_2016_flickr captions (~12 tokens); *long*, the last 200 non-empty Europarl French
lines, which ``--build`` leaves out of the database (~30 tokens). For each: p50/p95 of
query analysis, preselection alone, preselection + fetch (the one statement
``Selector.select`` runs), coverage and the whole selection including analysis;
overlap@100 (mean, min) of the pool with exact BM25's (bm25s, method="lucene",
k1=1.5, b=0.75, over the same lowercased Moses tokens, one pair per source sentence as
tests/reference.py's ``distinct_pool`` keeps them); the same-selection rate (SCOI's k=4
picks from our pool equal those from that exact pool); fidelity with the authors' pool
(exact BM25's top 100 pairs as they come, a source sentence with several targets
included): the share of queries whose SCOI k=4 picks are the same, of such pools that
hold a repeated source, and of the authors' selections that fill two slots with one
source; the share of pools certified exact; and (short set) the coverage step's speed-up
over the straightforward docs/method.md §4 implementation (tests/reference.py) on the same pools.

    SCOI_DATABASE_URL=... python benchmarks/bench_select.py      # an existing database
    python benchmarks/bench_select.py --build                     # ingest the development corpora first
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the repo root: tests.reference is the literal reference
from shared_data import MISSING, available, held_out_queries, long_queries, selection_corpus_files, warm_up  # noqa: E402


def bench_url(database: str | None, build_as: str | None) -> str:
    """The database a benchmark runs on: ``build_as`` created fresh and filled by
    :func:`build`, else the existing ``database`` on the configured server, else scoi's own."""
    from scoi.db.engine import create_database, get_engine, resolve_database, server_url

    url = resolve_database().url
    if database:
        url = server_url(url, database)
    if build_as:
        url = create_database(url, build_as)
        get_engine(url)
        build(url)
    return url


def build(url: str) -> None:
    """Ingest the development corpora except the held-out Europarl lines (the long queries)."""
    import tempfile

    from ingest.options import IngestOptions
    from ingest.pipeline import ingest_files

    workdir = Path(tempfile.mkdtemp(prefix="scoi-bench-"))
    for fr, en in selection_corpus_files(workdir):
        s = ingest_files(IngestOptions(files=[str(fr), str(en)], src="fr", tgt="en", corpus="shared",
                                       workers=2, skip_bad=True), url)
        print(f"  ingested {fr.name}: {s.inserted} pairs in {s.seconds:.0f}s")


def french_documents(conn) -> tuple[dict[int, list[str]], dict[int, list[int]]]:
    """The eligible French sentences' lowercased tokens by sentence id, and each sentence's
    fr-en pair ids: what the in-memory BM25 baseline indexes."""
    docs: dict[int, list[str]] = {}
    pairs: dict[int, list[int]] = {}
    words: dict[str, str] = {}  # one string object per distinct token: 10M sentences fit in a few GB
    with conn.transaction(), conn.cursor(name="french_documents") as cur:  # streamed, not fetched whole
        cur.itersize = 50_000
        cur.execute("""
            SELECT s.id, s.tokens, p.id FROM sentence s
            JOIN pair p ON (p.a_id = s.id AND p.a_lang = 'fr' AND p.b_lang = 'en')
                        OR (p.b_id = s.id AND p.b_lang = 'fr' AND p.a_lang = 'en')
            WHERE s.lang = 'fr' AND s.eligible""")
        for sid, toks, pid in cur:
            if sid not in docs:
                docs[sid] = [words.setdefault(w, w) for w in (t.lower() for t in toks)]
            pairs.setdefault(sid, []).append(pid)
    return docs, pairs


def exact_bm25_top(conn, queries_tokens: list[list[str]], n: int) -> list[list[int]]:
    """Exact BM25 top-n pair ids (bm25s lucene) over the eligible French sentences."""
    import bm25s

    docs, pairs = french_documents(conn)
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


def picks(sel, tokens: list[str], terms: dict[str, int], rows) -> list[int]:
    """SCOI's k=4 picks (pair ids) from a pool, as ``Selector.select`` makes them."""
    from scoi.core.greedy import select as greedy_select

    q, q_ids, cands, table = sel.query.coverage_inputs(terms, rows)
    chosen = greedy_select(q, tokens, cands, k=4, method="scoi", similarity=sel.options.similarity,
                           word_overlap=sel.options.word_overlap, seed=sel.options.seed, term_table=table,
                           query_term_ids=q_ids)
    return [rows[p.index].pair_id for p in chosen]


def run_set(sel, queries: list[str]) -> dict:
    """Time and check one query set (after the caller's warm-up)."""
    from scoi.selection.preselect import Stats

    timings, runs, stats = [], [], []
    for q in queries:
        r = sel.select(q)
        certified = r.certified
        st = Stats()
        t0 = time.perf_counter()
        sel.preselect(r.query_tokens, stats=st)
        timings.append({**r.timings_ms, "preselect": 1000 * (time.perf_counter() - t0)})
        runs.append((r, certified))
        stats.append(st)
    from scoi.core.pool import source_key
    from tests.reference import distinct_pool

    deep = exact_bm25_top(sel.reader, [r.query_tokens for r, _ in runs], 300)  # room for the repeats
    exact, overlaps, same, authors, repeated_pool, repeated_pick = [], [], [], [], [], []
    for (r, _), ranked in zip(runs, deep):
        if not ranked:
            exact.append([])
            continue
        rows = sel.fetch([(p, 0.0) for p in ranked])
        ref_rows = distinct_pool(rows, 100)
        exact.append(ranked[:100])  # what preselect() returns (exact_mode compares with it)
        overlaps.append(len({c.pair_id for c in r.candidates} & {c.pair_id for c in ref_rows}) / len(ref_rows))
        ours = [p.pair_id for p in r.selected]
        same.append(picks(sel, r.query_tokens, r.query_terms, ref_rows) == ours)
        raw = rows[:100]  # the authors' pool: BM25's top 100 pairs, repeats and all
        raw_picks = picks(sel, r.query_tokens, r.query_terms, raw)
        authors.append(raw_picks == ours)
        repeated_pool.append(len({source_key(c.src) for c in raw}) < len(raw))
        by_id = {c.pair_id: c for c in raw}
        repeated_pick.append(len({source_key(by_id[p].src) for p in raw_picks}) < len(raw_picks))
    return {"timings": timings, "overlaps": overlaps, "same": same, "stats": stats, "authors": authors,
            "repeated_pool": repeated_pool, "repeated_pick": repeated_pick,
            "certified": [bool(c) for _, c in runs], "runs": runs, "exact": exact}


def coverage_speedup(sel, runs, n: int) -> tuple[float, float, float]:
    """Fast coverage vs the docs/method.md §4 reference on the same pools: (speed-up, fast ms, reference ms)."""
    from scoi.core.greedy import select as fast_select
    from tests import reference

    fast_t, ref_t = [], []
    for r, _ in runs[:n]:
        q, q_ids, cs, table = sel.query.coverage_inputs(r.query_terms, r.candidates)
        t0 = time.perf_counter()
        a = fast_select(q, r.query_tokens, cs, k=4, method="scoi", term_table=table, query_term_ids=q_ids)
        t1 = time.perf_counter()
        b = reference.select(q, r.query_tokens, cs, k=4, method="scoi")
        t2 = time.perf_counter()
        assert [p.index for p in a] == [p.index for p in b], "fast and reference disagree"
        fast_t.append(t1 - t0)
        ref_t.append(t2 - t1)
    return sum(ref_t) / sum(fast_t), 1000 * float(np.mean(fast_t)), 1000 * float(np.mean(ref_t))


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min): it is shared, and figures move with it."""
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def index_size(conn, pairs: int) -> str:
    """The BM25 index's size: the posting blocks and directories (what the selector
    reads), and the forward rows beside them (rescoring, deletes)."""
    rows = conn.execute("""
        SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
        WHERE c.relname IN ('bm25_block', 'bm25_dir', 'bm25_doc') AND c.relkind = 'r'""").fetchall()
    size = dict(rows)
    blocks = size.get("bm25_block", 0) + size.get("bm25_dir", 0)
    return (f"index: posting blocks + directories {blocks / 1e6:,.0f} MB ({blocks / max(pairs, 1):,.0f} bytes per pair); "
            f"beside them bm25_doc {size.get('bm25_doc', 0) / 1e6:,.0f} MB")


def describe(conn) -> str:
    """Date, database size and machine, for the tables' captions."""
    import datetime
    import platform

    size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    pairs = conn.execute("SELECT count(*) FROM pair").fetchone()[0]
    return (f"{datetime.date.today()}; database {pairs:,} pairs, {size}; "
            f"{os.cpu_count()} cores, {platform.machine()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="store_true", help="ingest the development corpora (SCOI_DEV_DATA) into a fresh database first")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--database", help="an existing database on the configured server (e.g. scoi_bench_select, "
                                       "which --build makes)")
    ap.add_argument("--reference-queries", type=int, default=50, help="queries timed with the slow reference")
    ap.add_argument("--json", action="store_true", help="also print one JSON object per query set")
    args = ap.parse_args()
    if not available():
        sys.exit(MISSING)
    from scoi.selection.selector import Selector

    url = bench_url(args.database, "scoi_bench_select" if args.build else None)
    sel = Selector("fr", "en", url=url, k=4, pool=100)
    warm_up(sel.select)
    sets = {"long": run_set(sel, long_queries(args.queries)), "short": run_set(sel, held_out_queries(args.queries))}
    speedup, fast_ms, ref_ms = coverage_speedup(sel, sets["short"]["runs"], args.reference_queries)

    print(f"{describe(sel.reader)}; {args.queries} queries per set (after 200 other short held-out queries as "
          f"warm-up); k=4, pool=100; {sel.options.bm25}; load average {load_average()}")
    print()
    print("| step | long p50 ms | long p95 ms | short p50 ms | short p95 ms |")
    print("| --- | --- | --- | --- | --- |")
    for key, label in (("analyze", "query analysis (Moses + spaCy)"), ("preselect", "preselection (SQL, alone)"),
                       ("pool", "preselection + fetch (one statement, what select runs)"),
                       ("coverage", "coverage + greedy (numpy)"), ("total", "whole selection incl. analysis")):
        cells = [f"{v:.1f}" for name in ("long", "short") for v in pct([t[key] for t in sets[name]["timings"]])]
        print(f"| {label} | {' | '.join(cells)} |")
    print()
    print("| measure | long | short |")
    print("| --- | --- | --- |")
    ov = {k: v["overlaps"] for k, v in sets.items()}
    print(f"| overlap@100 with exact BM25, mean (min) | {np.mean(ov['long']):.3f} ({min(ov['long']):.2f}) | "
          f"{np.mean(ov['short']):.3f} ({min(ov['short']):.2f}) |")
    print(f"| same SCOI k=4 selection as from the exact pool | {np.mean(sets['long']['same']):.3f} | "
          f"{np.mean(sets['short']['same']):.3f} |")
    for key, label in (("authors", "same SCOI k=4 selection as from the authors' pool (repeats kept)"),
                       ("repeated_pool", "authors' pools holding a source sentence twice"),
                       ("repeated_pick", "authors' selections filling two slots with one source")):
        print(f"| {label} | {np.mean(sets['long'][key]):.3f} | {np.mean(sets['short'][key]):.3f} |")
    print(f"| pools certified exact | {np.mean(sets['long']['certified']):.3f} | "
          f"{np.mean(sets['short']['certified']):.3f} |")
    for key, label in (("postings", "postings read"), ("blocks", "blocks read"),
                       ("blocks_total", "blocks of the query's tokens"), ("bytes", "bytes read")):
        cells = [f"{pct([getattr(s, key) for s in sets[name]['stats']])[0]:,.0f}" for name in ("long", "short")]
        print(f"| {label}, p50 | {' | '.join(cells)} |")
    print()
    pairs = sel.reader.execute("SELECT count(*) FROM pair").fetchone()[0]
    print(index_size(sel.reader, pairs))
    print()
    print(f"coverage speed-up over the docs/method.md §4 reference (short set): {speedup:.0f}x "
          f"(fast {fast_ms:.2f} ms vs reference {ref_ms:.0f} ms per query, {args.reference_queries} pools)")
    if args.json:
        for name in ("long", "short"):
            v = sets[name]
            p50, p95 = pct([t["preselect"] for t in v["timings"]])
            pool50, pool95 = pct([t["pool"] for t in v["timings"]])
            total50, total95 = pct([t["total"] for t in v["timings"]])
            cov50, cov95 = pct([t["coverage"] for t in v["timings"]])
            print(json.dumps({"name": name, "pairs": pairs, "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                              "overlap_mean": round(float(np.mean(v["overlaps"])), 4),
                              "overlap_min": round(float(min(v["overlaps"])), 4),
                              "same_as_authors_pool": round(float(np.mean(v["authors"])), 4),
                              "authors_pool_repeats": round(float(np.mean(v["repeated_pool"])), 4),
                              "authors_pick_repeats": round(float(np.mean(v["repeated_pick"])), 4),
                              "certified": round(float(np.mean(v["certified"])), 4),
                              "pool_p50_ms": round(pool50, 2), "pool_p95_ms": round(pool95, 2),
                              "coverage_p50_ms": round(cov50, 2), "coverage_p95_ms": round(cov95, 2),
                              "total_p50_ms": round(total50, 2), "total_p95_ms": round(total95, 2),
                              "load": load_average()}))


if __name__ == "__main__":
    main()
