"""Select through ``scoi serve``'s API: p50/p95 of the request as a client sees it (HTTP,
JSON, the server's thread hop) and of the selector's own time, with 1 or more clients.

Start a server over the dev data database (benchmarks/shared_data.py) first (``scoi serve``), then:

    python benchmarks/bench_serve.py --url http://127.0.0.1:8765            # long queries
    python benchmarks/bench_serve.py --file queries.fr --clients 2 --coverage

Default queries: the held-out Europarl French lines (shared_data.long_queries, ~30
tokens), which the selection benchmarks' database leaves out. ``SCOI_SERVE_TOKEN`` is sent
as the bearer token when set.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def percentiles(values: list[float]) -> str:
    a = np.asarray(values)
    return f"p50 {np.percentile(a, 50):7.1f}  p95 {np.percentile(a, 95):7.1f}  mean {a.mean():7.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8765")
    ap.add_argument("--file", type=Path, help="One query per line (default: the held-out Europarl lines).")
    ap.add_argument("--src", default="fr")
    ap.add_argument("--tgt", default="en")
    ap.add_argument("--method", default="scoi")
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--clients", type=int, default=1, help="Concurrent clients, each sending every query.")
    ap.add_argument("--coverage", action="store_true", help="Ask for the page's coverage view and tree too.")
    ap.add_argument("--warm", type=int, default=10, help="Requests sent first and not counted.")
    args = ap.parse_args()

    if args.file:
        queries = [q.strip() for q in args.file.read_text(encoding="utf-8").splitlines() if q.strip()]
    else:
        from shared_data import MISSING, available, long_queries

        if not available():
            print(f"{MISSING}, or pass --file", file=sys.stderr)
            return 2
        queries = long_queries()
    token = os.environ.get("SCOI_SERVE_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"src": args.src, "tgt": args.tgt, "method": args.method, "k": args.k, "coverage": args.coverage}
    lat: list[float] = []
    server: dict[str, list[float]] = {"analyze": [], "pool": [], "coverage": [], "total": []}
    errors: list[str] = []
    lock = threading.Lock()

    def client(n_warm: int) -> None:
        with httpx.Client(base_url=args.url, headers=headers, timeout=120) as http:
            for i, q in enumerate(queries[:n_warm] + queries):
                t0 = time.perf_counter()
                r = http.post("/api/select", json={**body, "text": q})
                ms = (time.perf_counter() - t0) * 1000
                if r.status_code != 200:
                    with lock:
                        errors.append(f"{r.status_code} {r.text[:200]}")
                    continue
                if i < n_warm:
                    continue
                t = r.json()["timings_ms"]
                with lock:
                    lat.append(ms)
                    for key in server:
                        server[key].append(t[key])

    threads = [threading.Thread(target=client, args=(args.warm if i == 0 else 0,)) for i in range(args.clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ntok = np.mean([len(q.split()) for q in queries])
    print(f"{len(queries)} queries (~{ntok:.0f} words), {args.src}-{args.tgt}, method {args.method}, k {args.k}, "
          f"{args.clients} client(s){', coverage view + tree' if args.coverage else ''}; {len(errors)} errors")
    print(f"  request (client wall, ms)   {percentiles(lat)}")
    for key, values in server.items():
        print(f"  server {key:<20} {percentiles(values)}")
    print(f"  throughput {len(lat) / wall:.1f} requests/s over {wall:.1f} s")
    for e in errors[:5]:
        print("  error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
