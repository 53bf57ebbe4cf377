"""Ingest throughput vs the parser's own speed, and 2 workers vs 1 (issue: ingest §10).

Prints, in one run on the same sentences: raw ``nlp.pipe`` throughput (tok2vec+parser,
one process, same batch size), full ingest throughput into a fresh database with one
worker and with two, and the ratios; every run is repeated (``--rounds``, default 3) in
alternation, and the ratios are taken within each round (the machine's speed drifts) and
their medians reported. Usage:

    python benchmarks/bench_ingest.py [--limit N] [--rounds R]
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


def _pipe(job: tuple[dict[str, list[str]], dict[str, str]]) -> tuple[int, float]:
    """Sentences parsed and seconds spent by plain ``nlp.pipe`` (tok2vec+parser) in this process."""
    from scoi.analysis import load_pipeline

    texts_by_lang, pipelines = job
    n, seconds = 0, 0.0
    for lang, texts in texts_by_lang.items():
        nlp = load_pipeline(pipelines[lang])
        list(nlp.pipe(texts[:200], batch_size=256))  # warm-up
        t0 = time.perf_counter()
        for _ in nlp.pipe(texts, batch_size=256):
            n += 1
        seconds += time.perf_counter() - t0
    return n, seconds


def raw_pipe(texts_by_lang: dict[str, list[str]], pipelines: dict[str, str], processes: int = 1) -> float:
    """Raw parser throughput with the ingest workers' settings: spawned processes, one BLAS
    thread each. With 2 processes the sentences are dealt out alternately; the figure is
    the hardware's own ceiling for 2 parse processes."""
    import multiprocessing as mp

    from ingest.workers import single_threaded_children

    jobs = [({lang: texts[i::processes] for lang, texts in texts_by_lang.items()}, pipelines)
            for i in range(processes)]
    with single_threaded_children():
        pool = mp.get_context("spawn").Pool(processes)
    with pool:
        done = pool.map(_pipe, jobs)
    return sum(n for n, _ in done) / max(s for _, s in done)


def ingest_once(tsv: str, url: str, workers: int) -> tuple[float, int]:
    from ingest.pipeline import IngestOptions, ingest_files

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
    args = ap.parse_args()
    if not available():
        sys.exit(MISSING)
    from scoi.analysis import choose_parser
    from scoi.db.engine import create_database, drop_database, get_engine, resolve_database

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


if __name__ == "__main__":
    main()
