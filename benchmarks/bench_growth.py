"""Preselection growth from 42k to 10M pairs: one table, one script run.

For each size, ``bench_preselect_1m.py --pairs N --no-overlap --memory --json`` runs in a
process of its own (the same recombined long queries and Multi30k short ones at every
size; a database is built by recombination first when it does not exist, its build time
kept as the database's comment) and its JSON lines become the table's rows: p50/p95 ms,
postings and bytes read, peak memory per query (tracemalloc), the database's bytes per
pair and build time; the same engine without its list cache, timed in the same loop; with
``--overlap N``, bm25s too at the sizes up to N pairs, in the same process and loop (its
in-memory index of 10M sentences takes tens of minutes and gigabytes to build). ``--set FIELD=VALUE`` sets a Bm25Params
field at every size (e.g. ``--set connections=2 --set cache_postings=80000000``).

    python benchmarks/bench_growth.py [--sizes 42785,1000000,4000000,10000000] [--queries 100] [--overlap 4000000]
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
    ap.add_argument("--overlap", type=int, default=0, metavar="N",
                    help="also time bm25s side by side (and check the overlap) at the sizes up to N pairs")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a Bm25Params field for every size (repeatable)")
    args = ap.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        before = load_average()
        t0 = time.perf_counter()
        cmd = [sys.executable, str(HERE / "bench_preselect_1m.py"), "--pairs", str(size), "--memory", "--json",
               "--queries", str(args.queries), *([] if size <= args.overlap else ["--no-overlap"]),
               *(a for kv in args.set for a in ("--set", kv))]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        print(out, file=sys.stderr)
        for line in out.splitlines():
            if line.startswith("{"):
                rows.append({**json.loads(line), "load": f"{before} -> {load_average()}",
                             "run_s": round(time.perf_counter() - t0)})
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.queries} queries per set; "
          f"exact top 100 pairs (certified rate in the last column); settings: {' '.join(args.set) or 'defaults'}")
    print()

    def ms(a: float | None, b: float | None) -> str:
        return "" if a is None or b is None else f"{a:.1f} / {b:.1f}"

    print("| pairs | queries | p50 / p95 ms | no cache p50 / p95 | bm25s p50 / p95 | postings read p50 "
          "| MB read p50 (p95) | peak memory MB p50 (max) | list cache MB | database bytes/pair | built "
          "| load (before -> after) | certified (overlap with bm25s, min) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['pairs']:,} | {r['name']} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} "
              f"| {ms(r.get('uncached_p50_ms'), r.get('uncached_p95_ms'))} "
              f"| {ms(r.get('bm25s_p50_ms'), r.get('bm25s_p95_ms'))} | {r['postings_p50']:,.0f} "
              f"| {r['bytes_p50'] / 1e6:.1f} ({r['bytes_p95'] / 1e6:.1f}) "
              f"| {r['peak_mb_p50']:.1f} ({r['peak_mb_max']:.1f}) | {r.get('cache_mb', 0):,} "
              f"| {r['db_bytes_per_pair']:,} | {r['built'] or 'before this run'} | {r['load']} | {r['certified']:.2f}"
              + (f" ({r['overlap_min']:.3f})" if r.get("overlap_min") is not None else "") + " |")


if __name__ == "__main__":
    main()
