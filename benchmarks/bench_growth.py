"""Preselection growth from 42k to 10M pairs: one table, one script run.

For each size, ``bench_preselect_1m.py --pairs N --no-overlap --memory --json`` runs in a
process of its own (the same recombined long queries and Multi30k short ones at every
size; a database is built by recombination first when it does not exist, its build time
kept as the database's comment) and its JSON lines become the table's rows: p50/p95 ms,
postings and bytes read, peak memory per query (tracemalloc), the database's bytes per
pair and build time. bm25s is left out (its in-memory index of 10M sentences is the slow
part: the 1M side-by-side is ``bench_preselect_1m.py`` itself).

    python benchmarks/bench_growth.py [--sizes 42785,1000000,4000000,10000000] [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_average() -> str:
    return ", ".join(open("/proc/loadavg").read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="42785,1000000,4000000,10000000", help="pairs per database, comma-separated")
    ap.add_argument("--queries", type=int, default=100, help="queries per set")
    args = ap.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        before = load_average()
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, str(HERE / "bench_preselect_1m.py"), "--pairs", str(size), "--no-overlap",
                              "--memory", "--json", "--queries", str(args.queries)],
                             capture_output=True, text=True, check=True).stdout
        print(out, file=sys.stderr)
        for line in out.splitlines():
            if line.startswith("{"):
                rows.append({**json.loads(line), "load": f"{before} -> {load_average()}",
                             "run_s": round(time.perf_counter() - t0)})
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.queries} queries per set; "
          "exact top 100 pairs (certified rate in the last column)")
    print()
    print("| pairs | queries | p50 ms | p95 ms | postings read p50 | MB read p50 (p95) | peak memory MB p50 (max) "
          "| database bytes/pair | built | load (before -> after) | certified |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['pairs']:,} | {r['name']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['postings_p50']:,.0f} "
              f"| {r['bytes_p50'] / 1e6:.1f} ({r['bytes_p95'] / 1e6:.1f}) "
              f"| {r['peak_mb_p50']:.1f} ({r['peak_mb_max']:.1f}) | {r['db_bytes_per_pair']:,} "
              f"| {r['built'] or 'before this run'} | {r['load']} | {r['certified']:.2f} |")


if __name__ == "__main__":
    main()
