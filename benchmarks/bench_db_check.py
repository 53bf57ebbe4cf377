"""``scoi db check`` on an existing database, read only: each check's time as it ends, the
total, and the load average before and after (the machine is shared: say what it was).

    PYTHONPATH=$PWD python benchmarks/bench_db_check.py URL [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import time

from scoi.db.check import default_jobs, run_checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="libpq URL of the database to check (nothing is written)")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="sessions (default: %(default)s)")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}  cpus {os.cpu_count()}  jobs {args.jobs}  "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.perf_counter()
    results = run_checks(args.url, jobs=args.jobs, progress=lambda r: print(
        f"  {r.name:24s} {r.violations:>8}  {r.seconds:6.1f} s  load {os.getloadavg()[0]:.1f}", flush=True))
    print(f"total {time.perf_counter() - t0:.1f} s wall, {sum(1 for r in results if r.ok)} of {len(results)} ok, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
