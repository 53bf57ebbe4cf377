"""Per-item cost of scoi's batch jobs around the model, and throughput with 1 and 2 workers.

For each item the worker stores select_ms (SCOI selection), generate_ms
(the model) and overhead_ms (everything but generation: claim, selection, prompt,
answer extraction, recording, result writes). This prints their p50/p95 on a tiny
random-weight model (so generation is cheap and scoi's own cost is visible), with one
worker and with two (separate processes, as on two machines), for short sentences
(held-out Multi30k test) and long ones (held-out Europarl lines), and where the one
worker's overhead goes (WorkerStats.phase_ms). Target: overhead p50 <= 20 ms, p95 <= 30 ms.

Database: --database NAME (an existing database on the configured server, e.g. one that
``benchmarks/bench_select.py --build`` filled with the dev data (benchmarks/shared_data.py) minus the held-out
lines), else $SCOI_DATABASE_URL if set (the demo corpus is ingested there only if it has
no fr-en pairs), else a scratch database on the embedded server with the demo corpus.
Usage:

    python benchmarks/bench_jobs.py [--database scoi_bench_select] [--items 100] [--batch-size 8] [-k 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo root: tests.tiny_model builds the stand-in model
sys.path.insert(0, str(Path(__file__).resolve().parent))
DEMO = ROOT / "scoi" / "data" / "demo.fr-en.tsv"
DEMO_TEST = ROOT / "scoi" / "data" / "demo_test.fr-en.tsv"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def queries(n: int, kind: str = "short") -> list[str]:
    """Held-out French sentences from the dev data (shared_data.py) if there: Multi30k test (short) or the
    held-out Europarl lines (long); else the demo test set."""
    try:
        from shared_data import available, held_out_queries, long_queries

        if available():
            qs = long_queries(n) if kind == "long" else held_out_queries(n)
            if len(qs) >= n:
                return qs
    except Exception:  # noqa: BLE001 - fall back to the shipped demo sentences
        pass
    if kind == "long":
        return []
    demo = [line.split("\t")[0] for line in DEMO_TEST.read_text(encoding="utf-8").splitlines()[1:] if line]
    demo += [line.split("\t")[0] for line in DEMO.read_text(encoding="utf-8").splitlines()[1:] if line]
    return [demo[i % len(demo)] + ("" if i < len(demo) else f" ({i // len(demo)})") for i in range(n)]


def database(name: str | None = None) -> tuple[str, callable]:
    """(url, cleanup) of a database holding fr-en pairs."""
    import psycopg

    from scoi.db.engine import (create_database, dispose_engines, drop_database, get_engine, resolve_database,
                                server_url)
    from scoi.selection.scheme import direction_exists

    if name:
        url = server_url(resolve_database().url, name)
        get_engine(url)
        return url, lambda: None

    def has_fr_en(url: str) -> bool:
        with psycopg.connect(url) as conn:
            return direction_exists(conn, "fr", "en")

    def ingest_demo(url: str) -> None:
        from ingest.options import IngestOptions
        from ingest.pipeline import ingest_files

        ingest_files(IngestOptions(files=[str(DEMO)], src="fr", tgt="en", fmt="tsv", workers=0), url)

    if os.environ.get("SCOI_DATABASE_URL"):
        url = resolve_database().url
        get_engine(url)
        if not has_fr_en(url):
            ingest_demo(url)
        return url, lambda: None
    base = resolve_database().url
    name = "scoi_bench_jobs"
    url = create_database(base, name)
    get_engine(url)
    ingest_demo(url)

    def cleanup() -> None:
        dispose_engines()
        drop_database(base, name)

    return url, cleanup


def stats_of(url: str, job_id: int) -> dict:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT select_ms, generate_ms, overhead_ms FROM job_item "
                            "WHERE job_id = %s AND status = 'done'", (job_id,)).fetchall()
        span = conn.execute("SELECT extract(epoch FROM max(finished_at) - min(locked_at)), count(*) FROM job_item "
                            "WHERE job_id = %s AND status = 'done'", (job_id,)).fetchone()
        workers = conn.execute("SELECT count(DISTINCT locked_by) FROM job_item WHERE job_id = %s",
                               (job_id,)).fetchone()[0]
    sel = [r[0] for r in rows]
    gen = [r[1] for r in rows]
    ovh = [r[2] for r in rows]
    other = [o - s for s, o in zip(sel, ovh)]
    return {"n": len(rows), "select": sel, "generate": gen, "overhead": ovh, "other": other,
            "items_per_s": span[1] / float(span[0]) if span[0] else float("nan"), "workers": workers}


def table(runs: dict[str, dict]) -> None:
    """p50 / p95 of each per-item figure, a column pair per run."""
    print("| per item, ms | " + " | ".join(f"{name} p50 | p95" for name in runs) + " |")
    print("| --- |" + " --- | --- |" * len(runs))
    for key, label in (("select", "selection work (parse, preselect, coverage; overlaps generation)"),
                       ("overhead", "**overhead = wall time per item outside generation**"),
                       ("generate", "generation")):
        cells = [f"{pct(r[key], q):.1f}" for r in runs.values() for q in (.5, .95)]
        print(f"| {label} | {' | '.join(cells)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", help="an existing database on the configured server holding fr-en pairs")
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--sets", default="short,long", help="short, long or both (long needs the dev data, SCOI_DEV_DATA)")
    args = ap.parse_args()

    import psycopg

    from scoi.jobs.create import submit
    from scoi.jobs.spec import JobSpec
    from scoi.jobs.worker import Worker, WorkerOptions
    from tests.tiny_model import build_tiny_model

    url, cleanup = database(args.database)
    tmp = tempfile.mkdtemp(prefix="scoi_bench_jobs_")
    model = "hf:" + str(build_tiny_model(Path(tmp) / "tiny"))
    sets = {kind: queries(args.items, kind) for kind in args.sets.split(",")}
    sets = {kind: qs for kind, qs in sets.items() if qs}
    with psycopg.connect(url) as conn:
        pairs = conn.execute("SELECT count(*) FROM pair").fetchone()[0]
    print(f"{pairs:,} pairs in the database; {args.items} items per set, batch {args.batch_size}, k={args.k}, "
          f"tiny random Llama (max {args.max_new_tokens} new tokens), {os.cpu_count()} cores")

    def new_job(tag: str, qs: list[str]) -> int:
        spec = JobSpec("fr", "en", model=model, k=args.k, max_new_tokens=args.max_new_tokens,
                       name=f"bench-{tag}-{os.getpid()}-{time.time_ns()}", backend_options={"threads": 1})
        with psycopg.connect(url, autocommit=True) as conn:
            return submit(conn, spec, qs)

    job_ids = []
    results: dict[str, dict] = {}
    phases: dict[str, dict] = {}
    try:
        with Worker(url, WorkerOptions(batch_size=args.batch_size, burst=True)) as w:
            # One worker, in this process: warm up (parser, model, server caches) on other
            # held-out sentences first.
            job_ids.append(new_job("warm", queries(args.items + 50)[args.items:]))
            w.opts.job_id = job_ids[-1]
            w.run()
            for kind, qs in sets.items():
                for prefetch in (False, True):  # without: each batch selects, then generates
                    job_ids.append(new_job(f"one-{kind}", qs))
                    w.opts.job_id, w.opts.prefetch = job_ids[-1], prefetch
                    w.stats = type(w.stats)(worker=w.id)
                    w.run()
                    name = f"{kind}, 1 worker{'' if prefetch else ', no prefetch'}"
                    results[name] = stats_of(url, job_ids[-1])
                    phases[name] = w.stats.to_dict()["phase_ms_per_item"]

        # Two workers, separate processes (each loads parser and model before its first claim).
        env = dict(os.environ, SCOI_DATABASE_URL=url)
        for kind, qs in sets.items():
            job_ids.append(new_job(f"two-{kind}", qs))
            cmd = [sys.executable, "-m", "scoi.cli.main", "worker", "--burst", "--batch-size", str(args.batch_size),
                   "--job", str(job_ids[-1]), "--json"]
            procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                     for _ in range(2)]
            outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
            two = results[f"{kind}, 2 workers"] = stats_of(url, job_ids[-1])
            assert two["n"] == len(qs) and sum(o["done"] for o in outs) == len(qs)

        print()
        table(results)
        print()
        # parse, select and prompt run in the prepare thread while the previous batch
        # generates; prepare_wait is the part of them the batch waited for.
        print("| where the time goes, 1 worker, mean ms per item | " + " | ".join(phases) + " |")
        print("| --- |" + " --- |" * len(phases))
        for name in ("claim", "parse", "select", "prompt", "prepare_wait", "record", "write"):
            print(f"| {name} | " + " | ".join(f"{p.get(name, 0.0):.1f}" for p in phases.values()) + " |")
        print()
        print("| throughput | items/s |")
        print("| --- | --- |")
        for name, r in results.items():
            print(f"| {name} ({r['workers']} took items) | {r['items_per_s']:.1f} |")
        print()
        for name, r in results.items():
            p50, p95 = pct(r["overhead"], .5), pct(r["overhead"], .95)
            ok = "OK" if p50 <= 20 and p95 <= 30 else "ABOVE TARGET"
            print(f"{name}: overhead p50 {p50:.1f} / p95 {p95:.1f} ms/item (target <= 20 / 30 ms): {ok}; "
                  f"mean {statistics.fmean(r['overhead']):.1f} ms")
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM job WHERE id = ANY(%s)", (job_ids,))
        cleanup()


if __name__ == "__main__":
    main()
