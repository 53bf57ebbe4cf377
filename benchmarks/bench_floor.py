"""Where a selection's time goes, step by step, next to what the step cannot go below.

The latency targets (long queries at 42k pairs: whole selection p50 <= 15 ms,
p95 <= 30 ms; preselection p95 <= 15 ms) are checked against floors measured in the same
run, on the same queries (the two sets of bench_select.py):

- *parse*: ``Analyzer.analyze`` on one sentence (Moses tokens + spaCy tok2vec and parser,
  the other components excluded): the tree is the method's input, and coverage needs it,
  so parse + coverage is a floor of the whole selection even when preselection runs
  beside the parse (it does: a helper thread);
- *coverage*: coverage + greedy on the 100-candidate pool (numpy);
- *PostgreSQL per posting*: reading every posting block of the query's tokens and summing
  their sizes, the least the server does for the block preselection, as µs per posting,
  and how many postings that is (sum of the tokens' document frequencies);
- *round trip*: ``SELECT 1``.

    python benchmarks/bench_floor.py     # on the database bench_select.py --build made
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from shared_data import MISSING, available, held_out_queries, long_queries, warm_up  # noqa: E402

POSTINGS_OF = """
SELECT coalesce(sum(length(b.tfdl) / 2), 0), sum(length(b.ids)) FROM bm25_block b
WHERE b.token_id = ANY(ARRAY(SELECT v.id FROM vocab v WHERE v.lang = 'fr' AND v.token = ANY(%(tokens)s::text[])))
"""


def pct(xs: list[float]) -> tuple[float, float]:
    return float(np.percentile(xs, 50)), float(np.percentile(xs, 95))


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return 1000 * (time.perf_counter() - t0)


def measure(sel, queries: list[str]) -> dict[str, list[float]]:
    """Per query: each step's ms, and the postings of its tokens."""
    out: dict[str, list[float]] = {k: [] for k in ("parse", "coverage", "preselect", "whole", "rows", "scan", "us_row", "rtt")}
    an = sel.analyzer
    conn = sel.reader
    for q in queries:
        out["parse"].append(timed(an.analyze, [q]))
        t0 = time.perf_counter()
        r = sel.select(q, k=4)
        out["whole"].append(1000 * (time.perf_counter() - t0))
        out["coverage"].append(r.timings_ms["coverage"])
        tokens = sorted({t.lower() for t in r.query_tokens})
        out["preselect"].append(timed(sel.preselect, r.query_tokens))
        t0 = time.perf_counter()
        rows = conn.execute(POSTINGS_OF, {"tokens": tokens}).fetchone()[0]
        scan = 1000 * (time.perf_counter() - t0)
        out["rows"].append(rows)
        out["scan"].append(scan)
        out["us_row"].append(1000 * scan / max(rows, 1))
        out["rtt"].append(timed(lambda: conn.execute("SELECT 1").fetchone()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--database", default="scoi_bench_select", help="built by bench_select.py --build")
    args = ap.parse_args()
    if not available():
        sys.exit(MISSING)
    from bench_select import describe  # noqa: E402 - the same caption as bench_select

    from scoi.db.engine import resolve_database, server_url
    from scoi.selection.selector import Selector

    sel = Selector("fr", "en", url=server_url(resolve_database().url, args.database))
    warm_up(lambda q: sel.select(q, k=4))
    sets = {"long": long_queries(args.queries), "short": held_out_queries(args.queries)}
    res = {name: measure(sel, qs) for name, qs in sets.items()}
    print(describe(sel.reader) + f"; {args.queries} queries per set; k=4, pool=100")
    print()
    print("| step | long p50 | long p95 | short p50 | short p95 |")
    print("| --- | --- | --- | --- | --- |")
    rows = [("parse (Analyzer.analyze, one sentence), ms", "parse"),
            ("coverage + greedy, ms", "coverage"),
            ("whole selection incl. parse, ms", "whole"),
            ("preselection (SQL), ms", "preselect"),
            ("postings of the query's tokens", "rows"),
            ("reading their blocks, ms", "scan"),
            ("  per posting, µs", "us_row"),
            ("round trip SELECT 1, ms", "rtt")]
    for label, key in rows:
        (lp50, lp95), (sp50, sp95) = pct(res["long"][key]), pct(res["short"][key])
        fmt = "{:,.0f}" if key == "rows" else "{:.2f}" if key in ("us_row", "rtt") else "{:.1f}"
        print(f"| {label} | {fmt.format(lp50)} | {fmt.format(lp95)} | {fmt.format(sp50)} | {fmt.format(sp95)} |")
    floor = [p + c for p, c in zip(res["long"]["parse"], res["long"]["coverage"])]
    print()
    print("long: parse + coverage (floor of the whole selection) p50 {:.1f} / p95 {:.1f} ms "
          "(target p50 <= 15, p95 <= 30)".format(*pct(floor)))


if __name__ == "__main__":
    main()
