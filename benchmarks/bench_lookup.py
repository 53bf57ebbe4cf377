"""Fuzzy lookup (``scoi lookup``): latency, and recall of the true best match.

For each query set, the lookup (match % on the exact BM25 top ``--pool``) is timed, and
its best match is compared with the brute force: the match % of the query against every
stored French source sentence of fr-en (rapidfuzz over the whole table, in memory). Recall
counts the queries whose true best match is >= 70% and whose lookup found a match of
that same %. Recall at smaller and larger pools is read from one larger pool's BM25 order.

Query sets: ``long`` (held-out Europarl lines), ``short`` (Multi30k test captions), and
``near-dup``: stored sentences with 1-3 words replaced, deleted or inserted (the CAT case:
a >= 70% match exists). The baseline, timed in the same run, is the brute force itself.

    python benchmarks/bench_lookup.py --database scoi_bench_select   # 42k
    python benchmarks/bench_lookup.py --database scoi_bench_1m       # 1M

Reads only; never migrates the database it is pointed at.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_select import describe, load_average, pct  # noqa: E402
from shared_data import held_out_queries, long_queries  # noqa: E402

from scoi.core import defaults  # noqa: E402
from scoi.core.match import normalise  # noqa: E402
from scoi.lookup import candidates, lookup, rank  # noqa: E402
from scoi.selection.selector import Selector  # noqa: E402

THRESHOLD = 70.0
POOLS = (100, 200, 500, 1000)


class Memory:
    """Every stored fr source sentence of fr-en, each token coded as one character (the
    same token, the same character), so rapidfuzz's string Levenshtein is the word-level one."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.codes: dict[str, str] = {}
        self.ids: list[int] = []
        self.texts: list[str] = []
        self.tokens: list[list[str]] = []  # a sample only: the near-duplicate queries' sources
        t0 = time.perf_counter()
        with conn.cursor(name="memory") as cur:
            cur.itersize = 20000
            cur.execute("SELECT e.pair_id, s.tokens FROM example e JOIN sentence s ON s.id = e.src_id "
                        "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en'")
            for pair_id, toks in cur:
                self.ids.append(pair_id)
                self.texts.append(self.encode(toks))
        self.load_s = time.perf_counter() - t0

    def encode(self, tokens: list[str]) -> str:
        out = []
        for t in normalise(tokens):
            c = self.codes.get(t)
            if c is None:
                n = len(self.codes) + 0x100
                c = self.codes[t] = chr(n if n < 0xD800 else n + 0x800)  # no surrogates
            out.append(c)
        return "".join(out)

    def best(self, tokens: list[str]) -> float:
        """The highest match % of ``tokens`` against every stored sentence."""
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein

        q = self.encode(tokens)
        if not q:
            return 0.0
        found = process.extractOne(q, self.texts, scorer=Levenshtein.normalized_similarity)
        return round(100.0 * found[1], 2) if found else 0.0


def near_duplicates(conn: psycopg.Connection, n: int, seed: int = 7) -> list[str]:
    """Stored sentences (8-40 tokens) with 1-3 words replaced by another stored word,
    deleted, or a word inserted; texts joined with spaces (the lookup tokenises again)."""
    rng = random.Random(seed)
    rows = conn.execute("SELECT s.tokens FROM example e JOIN sentence s ON s.id = e.src_id "
                        "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en' "
                        "AND cardinality(s.tokens) BETWEEN 8 AND 40 ORDER BY e.pair_id LIMIT 20000").fetchall()
    vocab = [t for r in rows[:2000] for t in r[0] if t.isalpha()]
    out = []
    for toks in (list(r[0]) for r in rng.sample(rows, n)):
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(toks))
            op = rng.choice(("replace", "delete", "insert"))
            if op == "replace":
                toks[i] = rng.choice(vocab)
            elif op == "delete" and len(toks) > 2:
                del toks[i]
            else:
                toks.insert(i, rng.choice(vocab))
        out.append(" ".join(toks))
    return out


def run_set(sel: Selector, memory: Memory, name: str, queries: list[str], pool: int, big: int, first: int,
            compare: bool) -> dict:
    times, full_ms, brute_ms = [], [], []
    qualified = 0
    found = {p: 0 for p in POOLS}
    for q in queries:
        if compare:  # the whole pool from the start, back to back with the default
            t0 = time.perf_counter()
            whole = lookup(sel, q, n=1, pool=pool, first=pool)
            full_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        got = lookup(sel, q, n=1, pool=pool, first=first)
        times.append((time.perf_counter() - t0) * 1000)
        if compare:
            assert got.matches == whole.matches, q  # the first pool is kept only when provably the same
        tokens = sel.analyzer.tokenize(q)
        t0 = time.perf_counter()
        truth = memory.best(tokens)
        brute_ms.append((time.perf_counter() - t0) * 1000)
        if truth < THRESHOLD:
            continue
        qualified += 1
        pool_rows = candidates(sel, tokens, big)
        for p in POOLS:
            best = rank(tokens, pool_rows[:p], n=1, min_match=0)
            found[p] += bool(best) and best[0][1] == truth
        if got.matches and got.matches[0].match != truth and pool in POOLS:
            print(f"    missed ({name}): best {truth} vs lookup {got.matches[0].match}: {q[:80]}")
    p50, p95 = pct(times)
    b50, b95 = pct(brute_ms)
    return {"set": name, "queries": len(queries), "qualified": qualified, "p50": p50, "p95": p95,
            "full": pct(full_ms) if compare else None,
            "brute_p50": b50, "brute_p95": b95,
            "recall": {p: (found[p] / qualified if qualified else None) for p in POOLS}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", default="scoi_bench_select", help="database on the configured server")
    ap.add_argument("--queries", type=int, default=100, help="queries per set")
    ap.add_argument("--pool", type=int, default=1000, help="the lookup's pool (the timed one)")
    ap.add_argument("--first", type=int, default=defaults.LOOKUP_FIRST_POOL,
                    help="the lookup's first pool (kept when provably enough, else the whole pool)")
    ap.add_argument("--compare", action="store_true",
                    help="also time each query with the whole pool from the start (--first = --pool)")
    ap.add_argument("--sets", default="near-dup,short,long", help="query sets to run, comma-separated")
    args = ap.parse_args()
    from scoi.db.engine import resolve_database, server_url

    url = server_url(resolve_database().url, args.database)
    with psycopg.connect(url) as conn:
        print(describe(conn), f"; load average {load_average()}")
        memory = Memory(conn)
        near = near_duplicates(conn, args.queries)
    print(f"brute force memory: {len(memory.texts):,} sentences, {len(memory.codes):,} distinct tokens, "
          f"loaded in {memory.load_s:.1f} s")
    sets = [(name, queries) for name, queries in
            (("near-dup", near), ("short", held_out_queries(args.queries)), ("long", long_queries(args.queries)))
            if name in args.sets.split(",")]
    with Selector("fr", "en", url=url, method="bm25") as sel:
        for q in held_out_queries(50, start=500):  # warm-up: caches, spaCy, Moses
            lookup(sel, q, pool=args.pool, first=args.first)
        full = " whole pool p50 / p95 ms |" if args.compare else ""
        print(f"\n| set | queries | best >= {THRESHOLD:g}% | lookup p50 / p95 ms (pool {args.pool}, "
              f"first {args.first}) |{full} recall @ pool {' / '.join(map(str, POOLS))} | brute force p50 / p95 ms |")
        print("|---" * (7 if args.compare else 6) + "|")
        for name, queries in sets:
            r = run_set(sel, memory, name, queries, args.pool, max(POOLS), args.first, args.compare)
            recall = " / ".join("-" if v is None else f"{v:.3f}" for v in r["recall"].values())
            whole = f" {r['full'][0]:.1f} / {r['full'][1]:.1f} |" if r["full"] else ""
            print(f"| {name} | {r['queries']} | {r['qualified']} | {r['p50']:.1f} / {r['p95']:.1f} |{whole} {recall} | "
                  f"{r['brute_p50']:.1f} / {r['brute_p95']:.1f} |", flush=True)
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
