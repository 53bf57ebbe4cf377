"""Batched selection throughput at 42k pairs: long queries per second, one process batched
(what ``scoi select --file`` and job preparation do: 64 queries parsed with ``nlp.pipe``,
their posting lists read once for all, pairs and candidates in one round trip each)
against one by one, and two batched processes at once.

Long queries: the 200 held-out Europarl French lines (not in the database that
``bench_select.py --build`` makes). Each process warms up on 200 other short held-out
queries first. Usage:

    SCOI_DATABASE_URL=... python benchmarks/bench_batches.py [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_select import describe, load_average  # noqa: E402
from shared_data import long_queries, warm_up  # noqa: E402


def throughput(url: str, queries: list[str], batched: bool, start: float | None = None) -> tuple[float, float]:
    """(queries per second, end time) of selecting ``queries`` (k = 4, pool 100, SCOI) in
    this process; ``start``: a wall-clock time to wait for, so that processes start together."""
    from scoi.selection.selector import Selector

    sel = Selector("fr", "en", url=url, k=4, pool=100)
    warm_up(lambda q: sel.select(q))
    if start is not None:
        time.sleep(max(0.0, start - time.time()))
    t0 = time.perf_counter()
    if batched:
        for _ in sel.select_many(queries):  # BATCH at a time
            pass
    else:
        for q in queries:
            sel.select(q)
    return len(queries) / (time.perf_counter() - t0), time.time()


def _child(args: tuple[str, list[str], float]) -> tuple[float, float]:
    url, queries, start = args
    return throughput(url, queries, True, start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="also print one JSON object")
    args = ap.parse_args()
    from scoi.db.engine import resolve_database

    url = resolve_database().url
    queries = long_queries(200)
    one_by_one, _ = throughput(url, queries, False)
    batched, _ = throughput(url, queries, True)
    start = time.time() + 25  # both children warmed up by then
    with mp.get_context("spawn").Pool(2) as pool:
        (a, end_a), (b, end_b) = pool.map(_child, [(url, queries[:100], start), (url, queries[100:], start)])
    together = 200 / (max(end_a, end_b) - start)
    import psycopg

    with psycopg.connect(url) as conn:
        print(f"{describe(conn)}; 200 long queries; k=4, pool=100, SCOI; load average {load_average()}")
    print()
    print("| run | queries/s |")
    print("| --- | --- |")
    print(f"| one process, one by one | {one_by_one:.0f} |")
    print(f"| one process, batched ({BATCH}) | {batched:.0f} |")
    print(f"| two processes at once, batched, 100 queries each | {a:.0f} + {b:.0f}; "
          f"{together:.0f} over the wall time of both (target >= 100) |")
    if args.json:
        print(json.dumps({"name": "batches", "one_by_one": round(one_by_one, 1), "batched": round(batched, 1),
                          "two_processes": round(together, 1)}))


if __name__ == "__main__":
    main()
