"""Fuzzy lookup (``scoi lookup``): latency, recall of the true best match, and what it reads.

For each database (back to back in one process) and query set, the lookup is timed at the
default minimum (70 %: the count filter over every stored sentence that can reach it,
docs/method.md §8) and at ``--min-match 0`` (the exact BM25 pool's path), alternating
query by query so both see the same machine. Its best match is compared with the brute
force: the match % of the query against every stored French source sentence of fr-en
(rapidfuzz over the whole table, in memory). Recall counts the queries whose true best
match is >= 70 % and whose lookup found a match of that same %. Also: sentences whose
match % was computed per query (candidates), and postings read vs. the query's lists.

Query sets: ``long`` (held-out Europarl lines), ``short`` (Multi30k test captions), and
``near-dup``: stored sentences with 1-3 words replaced, deleted or inserted (the CAT case:
a >= 70 % match exists).

    python benchmarks/bench_lookup.py                                   # 1M, then 42k
    python benchmarks/bench_lookup.py --database scoi_bench_select_head --queries 50

Reads only; never migrates or writes to the databases it is pointed at.
"""

from __future__ import annotations

import argparse
import datetime
import random
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_select import describe, load_average, pct  # noqa: E402
from shared_data import held_out_queries, long_queries  # noqa: E402

from scoi.core import defaults  # noqa: E402
from scoi.core.match import normalise  # noqa: E402
from scoi.lookup import lookup  # noqa: E402
from scoi.selection.selector import Selector  # noqa: E402
from tests.helpers.edits import edited  # noqa: E402

THRESHOLD = 70.0
DATABASES = ("scoi_bench_1m", "scoi_bench_select_head")


class Memory:
    """Every stored fr source sentence of fr-en, each token coded as one character (the
    same token, the same character), so rapidfuzz's string Levenshtein is the word-level one."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.codes: dict[str, str] = {}
        self.texts: list[str] = []
        t0 = time.perf_counter()
        with conn.cursor(name="memory") as cur:
            cur.itersize = 20000
            cur.execute("SELECT s.tokens FROM example e JOIN sentence s ON s.id = e.src_id "
                        "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en'")
            for (toks,) in cur:
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
    return [" ".join(edited(rng, r[0], vocab, shortest=2)) for r in rng.sample(rows, n)]


def run_set(sel: Selector, memory: Memory, queries: list[str], n: int) -> dict:
    """Both paths on every query, alternating; the brute force on the side (not timed)."""
    ms = {70: [], 0: []}
    cands, read, total, tokens_n = [], 0, 0, []
    qualified, found = 0, {70: 0, 0: 0}
    fallbacks = 0
    steps: dict[str, float] = {}  # the count path's ms summed over the queries, by step
    for q in queries:
        got = {}
        for mm in (THRESHOLD, 0.0):
            t0 = time.perf_counter()
            got[int(mm)] = lookup(sel, q, n=n, min_match=mm)
            ms[int(mm)].append((time.perf_counter() - t0) * 1000)
        s = got[70].search
        fallbacks += s.get("path") != "count"
        if s.get("path") == "count":
            cands.append(s["candidates"])
            read += s["postings"]
            total += s["postings_total"]
            for step, v in s["ms"].items():
                steps[step] = steps.get(step, 0.0) + v
        tokens = sel.analyzer.tokenize(q)
        tokens_n.append(len(tokens))
        truth = memory.best(tokens)
        if truth < THRESHOLD:
            continue
        qualified += 1
        for mm, r in got.items():
            ok = bool(r.matches) and r.matches[0].match == truth
            found[mm] += ok
            if not ok:
                print(f"    missed at --min-match {mm}: best {truth} vs "
                      f"{r.matches[0].match if r.matches else None}: {q[:80]}", flush=True)
    return {"queries": len(queries), "tokens": float(np.median(tokens_n)), "qualified": qualified,
            "p70": pct(ms[70]), "p0": pct(ms[0]), "cand": pct(cands) if cands else (0.0, 0.0),
            "read": read / total if total else 0.0, "fallbacks": fallbacks, "steps": steps,
            "recall": {mm: (found[mm] / qualified if qualified else None) for mm in found}}


def bench(database: str, n: int, sets: list[str], matches: int) -> None:
    from scoi.db.engine import resolve_database, server_url

    url = server_url(resolve_database().url, database)
    with psycopg.connect(url) as conn:
        print(f"\n### {database}: {describe(conn)}; {datetime.datetime.now(datetime.timezone.utc):%H:%M} UTC, "
              f"load average {load_average()}", flush=True)
        memory = Memory(conn)
        near = near_duplicates(conn, n)
    print(f"brute force memory: {len(memory.texts):,} sentences, {len(memory.codes):,} distinct tokens, "
          f"loaded in {memory.load_s:.1f} s", flush=True)
    chosen = [(name, queries) for name, queries in
              (("near-dup", near), ("short", held_out_queries(n)), ("long", long_queries(n))) if name in sets]
    with Selector("fr", "en", url=url, method="bm25") as sel:
        for q in held_out_queries(50, start=500):  # warm-up: caches, Moses
            lookup(sel, q)
            lookup(sel, q, min_match=0)
        print(f"\n-n {matches}:\n\n| set | queries (tokens p50) | best >= {THRESHOLD:g}% | min 70: p50 / p95 ms | min 0 (pool "
              f"{defaults.LOOKUP_POOL}): p50 / p95 ms | recall at 70 / at 0 | candidates p50 / p95 | "
              "postings read | pool fallbacks |")
        print("|---" * 9 + "|")
        where: list[str] = []
        for name, queries in chosen:
            r = run_set(sel, memory, queries, matches)
            recall = " / ".join("-" if v is None else f"{v:.3f}" for v in r["recall"].values())
            print(f"| {name} | {r['queries']} ({r['tokens']:g}) | {r['qualified']} | {r['p70'][0]:.1f} / "
                  f"{r['p70'][1]:.1f} | {r['p0'][0]:.1f} / {r['p0'][1]:.1f} | {recall} | {r['cand'][0]:.0f} / "
                  f"{r['cand'][1]:.0f} | {100 * r['read']:.1f} % | {r['fallbacks']} |", flush=True)
            where.append(f"{name}: " + ", ".join(f"{k} {v:.0f}" for k, v in r["steps"].items()))
    print("\nmin 70, ms summed over the queries by step (read the lists; count, incl. lists read after; "
          "check the kept sentences): " + "; ".join(where))
    print(f"load average after: {load_average()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", action="append", help=f"database on the configured server (repeatable; "
                                                         f"default: {', '.join(DATABASES)})")
    ap.add_argument("--queries", type=int, default=100, help="queries per set")
    ap.add_argument("--sets", default="near-dup,short,long", help="query sets to run, comma-separated")
    ap.add_argument("-n", type=int, default=defaults.LOOKUP_N, help="matches asked for (the lookup's -n)")
    args = ap.parse_args()
    for database in args.database or DATABASES:
        bench(database, args.queries, args.sets.split(","), args.n)


if __name__ == "__main__":
    main()
