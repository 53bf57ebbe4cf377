"""``scoi demo``: the whole chain, offline, on the embedded database.

Ingests the small fr-en corpus shipped in ``scoi/data``, selects examples for the shipped
test sentences with SCOI and with BM25, prints a prompt and a coverage summary and, when a
model is given, translates both ways as batch jobs and scores them (BLEU, chrF).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import numpy as np

DEMO_CORPUS = "demo"


def data_file(name: str) -> Path:
    return Path(str(resources.files("scoi").joinpath("data", name)))


def read_tsv(path: Path) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r[0], r[1]) for r in rows[1:] if len(r) == 2]


@dataclass
class DemoReport:
    ingested: dict[str, Any]
    coverage: dict[str, dict[str, float]] = field(default_factory=dict)  # method -> mean syn/word coverage
    example_prompt: str = ""
    scores: list[dict[str, Any]] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)


def run_demo(url: str, *, model: str | None = None, k: int = 4, say: Callable[[str], None] = print) -> DemoReport:
    from ingest.options import IngestOptions
    from ingest.pipeline import ingest_files
    from scoi.core.coverage import syn_set_cov, word_set_cov
    from scoi.core.prompt import Example, render_prompt
    from scoi.selection.selector import Selector

    corpus = data_file("demo.fr-en.tsv")
    tests = read_tsv(data_file("demo_test.fr-en.tsv"))
    s = ingest_files(IngestOptions(files=[str(corpus)], src="fr", tgt="en", corpus=DEMO_CORPUS, fmt="tsv",
                                   workers=0), url)
    say(f"1. ingested {corpus.name}: {s.inserted} new pairs, {s.duplicates} already there "
        f"({s.parsed_sentences} sentences parsed in {s.seconds:.1f}s)")
    report = DemoReport(ingested={"inserted": s.inserted, "duplicates": s.duplicates, "corpus": DEMO_CORPUS})

    say(f"2. selecting {k} examples for {len(tests)} test sentences with SCOI and BM25")
    with Selector("fr", "en", url=url, k=k, corpora=[DEMO_CORPUS]) as sel:
        for method in ("scoi", "bm25"):
            syn, word = [], []
            for i, (src, _) in enumerate(tests):
                r = sel.select(src, method=method, record=True)
                q, _, cands, _ = sel.query.coverage_inputs(r.query_terms, r.candidates)
                chosen = [next(c for c, row in zip(cands, r.candidates) if row.pair_id == p.pair_id)
                          for p in r.selected]
                syn.append(syn_set_cov(q, [c.terms for c in chosen]))
                word.append(word_set_cov(r.query_tokens, [c.tokens for c in chosen]))
                if i == 0 and method == "scoi":
                    report.example_prompt = render_prompt(src, [Example(p.src, p.tgt) for p in r.selected], "fr", "en")
                    say(f"\n   prompt for: {src}\n   (examples in reverse selection order, as published: "
                        f"the best one comes last, right before the sentence)\n")
                    say("\n".join("   | " + line for line in report.example_prompt.split("\n")))
                    say(f"\n   (selection recorded as id {r.selection_id}: "
                        f"SELECT * FROM selection_term_coverage WHERE selection_id = {r.selection_id};)\n")
            report.coverage[method] = {"syntax": float(np.mean(syn)), "word": float(np.mean(word))}
    say("   mean coverage of the selected example sets (docs/method.md §3):")
    say("   | method | SynSetCov | WordSetCov |")
    for method, cov in report.coverage.items():
        say(f"   | {method} | {cov['syntax']:.3f} | {cov['word']:.3f} |")

    if not model:
        say("\n3. no model given: pass --model (e.g. gguf:/path/to/model.gguf, hf:/dir, openai:NAME) "
            "to translate and score")
        return report
    report.scores, report.jobs = _translate_and_score(url, model, k, tests, say)
    return report


def _translate_and_score(url: str, model: str, k: int, tests: list[tuple[str, str]],
                         say: Callable[[str], None]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    from scoi.db import connect
    from scoi.jobs.eval import compare
    from scoi.jobs.create import submit
    from scoi.jobs.spec import JobSpec
    from scoi.jobs.store import get_job
    from scoi.jobs.worker import Worker, WorkerOptions

    jobs = {}
    with connect(url) as conn:
        for method in ("scoi", "bm25"):
            spec = JobSpec(src="fr", tgt="en", model=model, method=method, k=k, corpora=[DEMO_CORPUS])
            jobs[method] = submit(conn, spec, [s for s, _ in tests], references=[t for _, t in tests])
    say(f"\n3. translating {len(tests)} sentences x 2 methods with {model} (jobs {list(jobs.values())})")
    for job_id in jobs.values():
        with Worker(url, WorkerOptions(burst=True, job_id=job_id)) as w:
            w.run()
    with connect(url) as conn:
        columns, table = compare(conn, [get_job(conn, j) for j in jobs.values()])
    say("   | method | " + " | ".join(columns) + " |")
    for row in table:
        say(f"   | {row['method']} | " + " | ".join(f"{row[c]:.2f}" for c in columns) + " |")
    say(f"   trace any output to its prompt and examples: SELECT * FROM job_item_trace WHERE job_id = {jobs['scoi']};")
    return table, jobs
