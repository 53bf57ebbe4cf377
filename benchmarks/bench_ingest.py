"""Ingest throughput vs the parser's own speed, and 2 workers vs 1 (issue: ingest §10).

Prints, in one run on the same sentences: raw ``nlp.pipe`` throughput (tok2vec+parser,
one process, same batch size), full ingest throughput into a fresh database with one
worker and with two, and the ratios; every run is repeated (``--rounds``, default 3) in
alternation, and the ratios are taken within each round (the machine's speed drifts) and
their medians reported. Usage:

    python benchmarks/bench_ingest.py [--limit N] [--rounds R]

A big import: ``--big N`` writes N recombined fr-en pairs (each side the
first half of one real sentence's words and the second half of another's, the same two
pairs on both sides; distinct) as a TSV or TMX, imports it end to end as a user does
(``scoi ingest FILE --workers 2 --json``, a process of its own, into a fresh database),
with trees and with ``--no-trees``, and prints time, pairs/s, raw parsing pairs/s per
process (``nlp.pipe`` alone on a sample of the same pairs, as many processes at once as
workers, before and after the imports: their mean) and the ratio. On a machine shared
with other work wall-clock rates follow the load, so CPU seconds per pair are printed too
(the ingest's processes, read from /proc, and the PostgreSQL backends serving it): their
ratio does not depend on the load. The workers also report the CPU they spent inside the
parser (``--json``: ``parser_cpu_seconds``): its share of their CPU is the same ratio
measured in the same processes over the same hours, which no baseline run apart is.

    python benchmarks/bench_ingest.py --big 100000 [--format tsv|tmx] [--workers 2] [--modes trees,no-trees]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import MISSING, available, corpus_pairs  # noqa: E402


def _pipe(job: tuple[dict[str, list[str]], dict[str, str]]) -> tuple[int, float, float]:
    """Sentences parsed, wall and CPU seconds spent by plain ``nlp.pipe`` (tok2vec+parser,
    ingest's batch size) in this process."""
    from scoi.analysis import PARSE_BATCH
    from scoi.parsers import load_pipeline

    texts_by_lang, pipelines = job
    n, seconds, cpu = 0, 0.0, 0.0
    for lang, texts in texts_by_lang.items():
        nlp = load_pipeline(pipelines[lang])
        list(nlp.pipe(texts[:200], batch_size=PARSE_BATCH))  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in nlp.pipe(texts, batch_size=PARSE_BATCH):
            n += 1
        seconds += time.perf_counter() - t0
        cpu += time.process_time() - c0
    return n, seconds, cpu


def raw_pipe_runs(texts_by_lang: dict[str, list[str]], pipelines: dict[str, str],
                  processes: int = 1) -> list[tuple[int, float, float]]:
    """(sentences, wall s, CPU s) of each of ``processes`` raw parse processes run at once
    with the ingest workers' settings (spawned, one BLAS thread each); the sentences are
    dealt out alternately."""
    import multiprocessing as mp

    from ingest.workers import single_threaded_children

    jobs = [({lang: texts[i::processes] for lang, texts in texts_by_lang.items()}, pipelines)
            for i in range(processes)]
    with single_threaded_children():
        pool = mp.get_context("spawn").Pool(processes)
    with pool:
        return pool.map(_pipe, jobs)


def raw_pipe(texts_by_lang: dict[str, list[str]], pipelines: dict[str, str], processes: int = 1) -> float:
    """Raw parser throughput, sentences/s, of ``processes`` processes at once; with 2 the
    figure is the hardware's own ceiling for 2 parse processes."""
    done = raw_pipe_runs(texts_by_lang, pipelines, processes)
    return sum(n for n, _, _ in done) / max(s for _, s, _ in done)


def ingest_once(tsv: str, url: str, workers: int) -> tuple[float, int]:
    from ingest.options import IngestOptions
    from ingest.pipeline import ingest_files

    t0 = time.perf_counter()
    s = ingest_files(IngestOptions(files=[tsv], src="fr", tgt="en", fmt="tsv", workers=workers, corpus="bench"), url)
    wall = time.perf_counter() - t0
    print(f"  ({workers} worker(s): parse {s.parse_seconds:.0f}s summed over workers, "
          f"writes {s.write_seconds:.0f}s in the main process, wall {wall:.0f}s)")
    return wall, s.parsed_sentences


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="use only the first N pairs")
    ap.add_argument("--rounds", type=int, default=3, help="repeat every run this many times (medians reported)")
    ap.add_argument("--big", type=int, default=0, metavar="N",
                    help="instead: import N recombined pairs end to end (scoi ingest in a process of its own)")
    ap.add_argument("--format", choices=("tsv", "tmx"), default="tsv", help="--big: the file written")
    ap.add_argument("--workers", type=int, default=2, help="--big: scoi ingest --workers")
    ap.add_argument("--modes", default="trees,no-trees",
                    help="--big, comma-separated: trees, no-trees, no-trees+reanalyze (then scoi reanalyze)")
    ap.add_argument("--sample", type=int, default=3000, help="--big: pairs of the raw parsing baseline")
    args = ap.parse_args()
    if not available():
        sys.exit(MISSING)
    if args.big:
        big_import(args)
        return
    from scoi.db.engine import create_database, drop_database, get_engine, resolve_database
    from scoi.parsers import choose_parser

    pairs = [(f.strip(), e.strip()) for f, e in corpus_pairs() if f.strip() and e.strip()]
    if args.limit:
        pairs = pairs[: args.limit]
    tmp = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False, encoding="utf-8")
    for f, e in pairs:
        tmp.write(f"{f.replace(chr(9), ' ')}\t{e.replace(chr(9), ' ')}\n")
    tmp.close()
    pipelines = {lang: choose_parser(lang).name for lang in ("fr", "en")}
    texts = {"fr": list(dict.fromkeys(f for f, _ in pairs)), "en": list(dict.fromkeys(e for _, e in pairs))}
    n_sent = sum(len(v) for v in texts.values())
    print(f"{len(pairs)} pairs, {n_sent} distinct sentences; machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}")

    # A process starts one fork server, which loads the pipelines once for all the parse
    # workers it forks; the first ingest of this process would pay for it and the later
    # ones not. Start it here, outside the timings (the raw baseline's load is not timed
    # either), and report what it costs: a fresh `scoi ingest` process pays it once.
    from ingest.workers import worker_pool
    t0 = time.perf_counter()
    with worker_pool(1, pipelines) as pool:
        pool.map(abs, [0])
    print(f"fork server start (loads the pipelines once per process; not in the timings below): "
          f"{time.perf_counter() - t0:.1f}s")

    base = resolve_database().url
    # Rounds alternate the runs (ingest 1 worker, 2 workers, raw 1 and 2 processes), so a
    # slow phase of a shared machine hits all of them; figures are medians over rounds.
    runs: dict[str, list[float]] = {"1": [], "2": [], "raw": [], "raw2": []}
    for rnd in range(1, args.rounds + 1):
        print(f"round {rnd}:")
        for workers in (1, 2):
            name = f"scoi_bench_ingest_{workers}"
            url = create_database(base, name)
            get_engine(url)
            seconds, parsed = ingest_once(tmp.name, url, workers)
            runs[str(workers)].append(parsed / seconds)
            print(f"  ingest, {workers} worker(s): {parsed} sentences in {seconds:.1f}s = "
                  f"{parsed / seconds:.0f} sentences/s ({len(pairs) / seconds:.0f} pairs/s)")
            from scoi.db.engine import dispose_engines
            dispose_engines()
            drop_database(base, name)
        runs["raw"].append(raw_pipe(texts, pipelines))
        print(f"  raw nlp.pipe (tok2vec+parser, 1 process, 1 BLAS thread, batch 256): {runs['raw'][-1]:.0f} sentences/s")
        runs["raw2"].append(raw_pipe(texts, pipelines, processes=2))
        print(f"  raw nlp.pipe, 2 processes at once: {runs['raw2'][-1]:.0f} sentences/s")
    raw, raw2, one, two = (statistics.median(runs[k]) for k in ("raw", "raw2", "1", "2"))
    # The machine's speed drifts, so each ratio is taken within a round (runs a minute or
    # two apart) and the median of those is the headline; the ratio of the medians is shown too.
    r1 = statistics.median(o / r for o, r in zip(runs["1"], runs["raw"]))
    r2 = statistics.median(t / o for t, o in zip(runs["2"], runs["1"]))
    print()
    print(f"medians over {args.rounds} round(s):")
    print("| measure | value | target |")
    print("| --- | --- | --- |")
    print(f"| raw nlp.pipe, sentences/s | {raw:.0f} | |")
    print(f"| raw nlp.pipe, 2 processes, sentences/s | {raw2:.0f} ({raw2 / raw:.2f}x) | (hardware ceiling) |")
    print(f"| ingest 1 worker, sentences/s | {one:.0f} | |")
    print(f"| ingest 2 workers, sentences/s | {two:.0f} | |")
    print(f"| ingest 1 worker / raw nlp.pipe (median of per-round ratios) | {r1:.2f} (ratio of medians {one / raw:.2f}) | >= 0.80 |")
    print(f"| ingest 2 workers / 1 worker (median of per-round ratios) | {r2:.2f} (ratio of medians {two / one:.2f}) | >= 1.6 |")
    print("per round, 1 worker / raw:", ", ".join(f"{o / r:.2f}" for o, r in zip(runs["1"], runs["raw"])),
          "; 2 workers / 1 worker:", ", ".join(f"{t / o:.2f}" for t, o in zip(runs["2"], runs["1"])))
    os.unlink(tmp.name)


# ---------------------------------------------------------------- --big: one import end to end
def recombined_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct synthetic pairs: the first half of pair i's words followed by the
    second half of pair j's, on both sides (i, j drawn at random from the development
    corpora's pairs); real words and real sentence shapes, any number of them."""
    import random

    real = [(f.split(), e.split()) for f, e in corpus_pairs() if f.strip() and e.strip()]
    rng = random.Random(seed)
    out: dict[str, str] = {}
    while len(out) < n:
        (fa, ea), (fb, eb) = rng.choice(real), rng.choice(real)
        fr = " ".join(fa[:len(fa) // 2] + fb[len(fb) // 2:])
        en = " ".join(ea[:len(ea) // 2] + eb[len(eb) // 2:])
        if fr and en:
            out.setdefault(fr, en)
    return list(out.items())


def write_input(pairs: list[tuple[str, str]], path: Path, fmt: str) -> None:
    """``pairs`` as a TSV (header fr, en) or a TMX 1.4 file at ``path``."""
    from xml.sax.saxutils import escape

    with path.open("w", encoding="utf-8") as f:
        if fmt == "tsv":
            f.write("fr\ten\n")
            f.writelines(f"{fr}\t{en}\n" for fr, en in pairs)
            return
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">\n'
                '<header creationtool="bench_ingest" creationtoolversion="1" datatype="plaintext" '
                'segtype="sentence" adminlang="en" srclang="fr" o-tmf="none"/>\n<body>\n')
        f.writelines(f'<tu><tuv xml:lang="fr"><seg>{escape(fr)}</seg></tuv>'
                     f'<tuv xml:lang="en"><seg>{escape(en)}</seg></tuv></tu>\n' for fr, en in pairs)
        f.write("</body>\n</tmx>\n")


class CpuMeter:
    """CPU seconds of a process tree (its root, and all its descendants: the fork server
    and parse workers) and of the PostgreSQL backends serving one database, read from
    /proc every ``interval`` s (a process that ends between two reads loses at most that
    last interval)."""

    def __init__(self, root: int, url: str, database: str, interval: float = 0.5) -> None:
        import threading

        import psycopg

        self.root, self.database, self.interval = root, database, interval
        self.conn = psycopg.connect(url, autocommit=True)
        self.own = self.conn.info.backend_pid
        self.ticks = os.sysconf("SC_CLK_TCK")
        self.main = 0.0
        self.children: dict[int, float] = {}
        self.backends: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _cpu(self, pid: int) -> tuple[int, float] | None:
        """(parent pid, CPU seconds) of a live process."""
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / self.ticks

    def _read(self) -> None:
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := self._cpu(int(entry))):
                stats[int(entry)] = st
        tree = {self.root}
        grown = True
        while grown:  # descendants of the root
            grown = False
            for pid, (ppid, _) in stats.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grown = True
        for pid in tree:
            if pid in stats:
                if pid == self.root:
                    self.main = stats[pid][1]
                else:
                    self.children[pid] = stats[pid][1]
        rows = self.conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                                 (self.database, self.own)).fetchall()
        for (pid,) in rows:
            if pid in stats:
                self.backends[pid] = stats[pid][1]

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            self._read()

    def finish(self) -> dict[str, float]:
        """CPU seconds by part: main process, its descendants, PostgreSQL backends."""
        self.stop.set()
        self.thread.join()
        self.conn.close()
        return {"main": self.main, "workers": sum(self.children.values()), "postgres": sum(self.backends.values())}


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def timed_scoi(args: list[str], url: str, base: str, name: str) -> dict:
    """``scoi ARGS --json`` against ``url`` (database ``name`` on the server of ``base``) in
    a process of its own: its JSON summary, wall time, CPU seconds and the load around it."""
    import json
    import subprocess

    env = {**os.environ, "SCOI_DATABASE_URL": url}
    load_before = load_average()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", *args, "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    meter = CpuMeter(proc.pid, base, name)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    cpu = meter.finish()
    if proc.returncode != 0:
        raise SystemExit(f"scoi {args[0]} failed ({proc.returncode}): {err.strip()}")
    return {**json.loads(out.strip().splitlines()[-1]), "wall": wall, "cpu": cpu,
            "load": f"{load_before} -> {load_average()}"}


def import_once(path: Path, base: str, workers: int, mode: str) -> dict:
    """``scoi ingest PATH --workers N [--no-trees]`` into a fresh database (mode ``trees``,
    ``no-trees``, or ``no-trees+reanalyze``: then ``scoi reanalyze --workers N`` adds the
    trees, its figures under "reanalyze"), with the database's size."""
    import psycopg

    from scoi.db.engine import create_database, dispose_engines, drop_database, get_engine

    name = f"scoi_bench_big_{os.getpid()}_{mode.replace('-', '').replace('+', '_')}"
    url = create_database(base, name)
    get_engine(url)
    dispose_engines()
    try:
        r = timed_scoi(["ingest", str(path), "--src", "fr", "--tgt", "en", "--corpus", "big", "--workers",
                        str(workers), *(["--no-trees"] if mode != "trees" else [])], url, base, name)
        if mode == "no-trees+reanalyze":
            r["reanalyze"] = timed_scoi(["reanalyze", "--workers", str(workers)], url, base, name)
        with psycopg.connect(url) as conn:
            r["db_bytes"] = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    finally:
        drop_database(base, name)
    return r


def big_import(args: argparse.Namespace) -> None:
    """The --big run: build the file, raw parsing on a sample, each mode's import; print a table."""
    import random

    from scoi.db.engine import resolve_database
    from scoi.parsers import choose_parser

    t0 = time.perf_counter()
    pairs = recombined_pairs(args.big)
    workdir = Path(tempfile.mkdtemp(prefix="bench_ingest_"))
    path = workdir / f"big.fr-en.{args.format}"
    write_input(pairs, path, args.format)
    print(f"{len(pairs)} recombined pairs written as {path.name} ({path.stat().st_size / 1e6:.0f} MB) in "
          f"{time.perf_counter() - t0:.0f}s; {os.cpu_count()} cores, load {load_average()}", flush=True)
    pipelines = {lang: choose_parser(lang).name for lang in ("fr", "en")}
    base = resolve_database().url
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    sample = random.Random(1).sample(pairs, min(args.sample, len(pairs)))
    texts = {"fr": [f for f, _ in sample], "en": [e for _, e in sample]}

    def raw_baseline(when: str) -> tuple[float, float]:
        """(pairs/s per process, CPU s per pair) of raw parsing on the sample, printed."""
        runs = raw_pipe_runs(texts, pipelines, processes=args.workers)
        per_process = len(sample) / args.workers / max(s for _, s, _ in runs)  # each parsed 1/workers
        cpu_per_pair = sum(c for _, _, c in runs) / len(sample)
        print(f"raw nlp.pipe {when}, {args.workers} processes at once, {len(sample)} of the pairs (both sides): "
              f"{per_process:.0f} pairs/s per process, {cpu_per_pair * 1e3:.2f} CPU ms per pair "
              f"(load {load_average()})", flush=True)
        return per_process, cpu_per_pair

    # The baseline before and after the imports: a minute's run follows the machine's speed
    # of that minute (±15% here), the imports' figures are averages over their whole run.
    before = raw_baseline("before the imports")
    results = {}
    for mode in modes:
        r = import_once(path, base, args.workers, mode)
        results[mode] = r
        print(f"{mode}: {r['read']} pairs in {r['wall']:.0f}s = {r['read'] / r['wall']:.0f} pairs/s "
              f"(load {r['load']}); "
              f"CPU s: main {r['cpu']['main']:.0f}, workers {r['cpu']['workers']:.0f} (in the parser "
              f"{r.get('parser_cpu_seconds', 0.0):.0f}), PostgreSQL {r['cpu']['postgres']:.0f}; "
              f"database {r['db_bytes'] / 1e6:.0f} MB", flush=True)
        if "reanalyze" in r:
            ra = r["reanalyze"]
            print(f"  then scoi reanalyze: {ra['reanalyzed']} sentences in {ra['wall']:.0f}s (load {ra['load']}); "
                  f"CPU s: main {ra['cpu']['main']:.0f}, workers {ra['cpu']['workers']:.0f}, "
                  f"PostgreSQL {ra['cpu']['postgres']:.0f}", flush=True)
    after = raw_baseline("after the imports")
    raw_per_process = (before[0] + after[0]) / 2
    raw_cpu_per_pair = (before[1] + after[1]) / 2
    print(f"raw nlp.pipe, mean of before and after: {raw_per_process:.0f} pairs/s per process, "
          f"{raw_cpu_per_pair * 1e3:.2f} CPU ms per pair")
    print()
    print("| mode | pairs | time | pairs/s | pairs/s per worker | / raw parsing per process | CPU ms per pair "
          "(main + workers + PostgreSQL) | raw parsing CPU / workers' CPU | parser's CPU / workers' CPU (in the "
          "workers) | raw parsing CPU / ingest CPU | database |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = dict(results)
    for mode, r in results.items():
        if "reanalyze" in r:  # its own row: the trees added later, per pair of the import
            rows[f"{mode}: the reanalyze"] = {**r["reanalyze"], "read": r["read"], "db_bytes": r["db_bytes"]}
    for mode, r in rows.items():
        rate = r["read"] / r["wall"]
        cpu = r["cpu"]
        per_pair = (cpu["main"] + cpu["workers"] + cpu["postgres"]) / r["read"]
        parses = mode == "trees" or mode.endswith(": the reanalyze")
        parse_ratio = f"{rate / args.workers / raw_per_process:.2f}" if parses else ""
        cpu_ratio = f"{raw_cpu_per_pair / per_pair:.2f}" if parses else ""
        worker_ratio = f"{raw_cpu_per_pair * r['read'] / cpu['workers']:.2f}" if parses else ""
        # Measured inside the workers, over the whole run: spaCy's share of their CPU.
        inside = f"{r.get('parser_cpu_seconds', 0.0) / cpu['workers']:.2f}" if parses else ""
        parts = " + ".join(f"{cpu[k] / r['read'] * 1e3:.2f}" for k in ("main", "workers", "postgres"))
        print(f"| {mode} | {r['read']:,} | {r['wall']:.0f} s | {rate:.0f} | {rate / args.workers:.0f} | "
              f"{parse_ratio} | {per_pair * 1e3:.2f} ({parts}) | {worker_ratio} | {inside} | {cpu_ratio} | {r['db_bytes'] / 1e6:.0f} MB |")
    for mode, r in results.items():
        wall = r["wall"] + r.get("reanalyze", {}).get("wall", 0.0)
        print(f"expected for 2M pairs, {mode}: {2_000_000 / (r['read'] / wall) / 3600:.1f} h at this rate")
    path.unlink()
    workdir.rmdir()


if __name__ == "__main__":
    main()
