"""Embedding throughput, fuzzy / fuzzy-ann latency and HNSW recall on the fr→en database of the dev data
(SCOI_DEV_DATA, benchmarks/shared_data.py).

Builds (``--build``) the ~42k-pair database the selection benchmarks use (the held-out
Europarl lines left out), embeds its French sentences with ``--model`` (``scoi embed``'s
path: encode + batch-committed INSERTs + the HNSW index build), then, on 200 held-out
French Multi30k captions and the 200 held-out Europarl lines: p50/p95 of ``fuzzy`` (BM25
pool re-ranked by cosine) and ``fuzzy-ann`` (HNSW top k over the whole database), and the
HNSW index's recall@k against exact cosine search (the same statement with index scans off).

The paper's model (sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2) is used
when it loads (a local directory, or the Hugging Face cache); otherwise pass ``--model DIR``
(any sentence-transformers directory), or the benchmark builds a tiny random-weight model
and says so: its throughput and recall then describe the machinery, not a real model.

    python benchmarks/bench_embed.py --build --model /path/to/sentence-transformers-model
    SCOI_DATABASE_URL=... python benchmarks/bench_embed.py --model DIR    # an existing database
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from shared_data import MISSING, available, held_out_queries, long_queries, warm_up  # noqa: E402


def load_model(name: str | None, url: str):
    """(Embedder, note): the given or the paper's model; a tiny random one if neither loads."""
    from scoi.db import connect
    from scoi.embedding.embedder import DEFAULT_MODEL, Embedder, EmbedderError

    try:
        return Embedder(name or DEFAULT_MODEL), ""
    except EmbedderError as e:
        if name:
            sys.exit(f"error: {e}")
        print(f"note: {e}")
    from tests.tiny_model import build_tiny_sentence_transformer

    with connect(url) as conn:
        corpus = [r[0] for r in conn.execute("SELECT text FROM sentence WHERE lang = 'fr' ORDER BY id LIMIT 20000")]
    out = build_tiny_sentence_transformer(Path(tempfile.mkdtemp(prefix="scoi-bench-st-")) / "tiny-st",
                                          corpus=corpus, vocab_size=4000, hidden=64)
    return Embedder(str(out)), ("TINY RANDOM-WEIGHT MODEL (2 layers, dim 64): the real model is not on disk; "
                                "figures describe the machinery only")


def pct(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def latency(sel, queries: list[str], method: str, k: int) -> dict[str, tuple[float, float]]:
    """p50/p95 (ms) of the SQL part (pool), query embedding + analysis, and the whole select."""
    t: dict[str, list[float]] = {"pool": [], "analyze": [], "total": []}
    for q in queries:
        r = sel.select(q, k=k, method=method)
        for key in t:
            t[key].append(r.timings_ms[key])
    return {key: pct(v) for key, v in t.items()}


def recall(sel, queries: list[str], ks: tuple[int, ...], efs: tuple[int, ...]) -> dict:
    """(ef_search, k) -> mean and min recall@k of the HNSW search against exact search (the
    same statement, index scans off), and the HNSW statement's p50/p95 ms."""
    from scoi.embedding.embeddings import nearest

    row = sel.embeddings.row(sel.reader)
    vecs = [sel.embeddings.embed(sel.reader, q) for q in queries]
    exact = [nearest(sel.reader, row, v, lang="fr", tgt="en", corpora=None, n=max(ks), exact=True) for v in vecs]
    out = {}
    for ef in efs:
        for k in ks:
            hits, ms = [], []
            for v, ex in zip(vecs, exact):
                t0 = time.perf_counter()
                approx = nearest(sel.reader, row, v, lang="fr", tgt="en", corpora=None, n=k, ef_search=ef)
                ms.append((time.perf_counter() - t0) * 1000)
                # by cosine distance, not ids: sentences tied with the exact k-th are equally right
                cutoff = ex[:k][-1][1] + 1e-6 if ex else 0.0
                hits.append(sum(1 for _, d, _ in approx if d <= cutoff) / max(len(ex[:k]), 1))
            out[(ef, k)] = (float(np.mean(hits)), float(np.min(hits)), pct(ms))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="store_true", help="ingest the dev data into a fresh database first")
    ap.add_argument("--database", help="an existing database on the configured server")
    ap.add_argument("--model", help="sentence-transformers directory or name (default: the paper's, if on disk)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=4)
    args = ap.parse_args()
    if not available():
        sys.exit(MISSING)
    from bench_select import bench_url, describe

    from scoi.embedding.embeddings import embed_missing
    from scoi.selection.selector import Selector

    url = bench_url(args.database, "scoi_bench_embed" if args.build else None)
    embedder, note = load_model(args.model, url)
    t0 = time.perf_counter()
    encode_only = embedder.encode(held_out_queries(1000))  # warm-up, and encode alone on 1,000 captions
    encode_rate = len(encode_only) / (time.perf_counter() - t0)
    summary = embed_missing(url, embedder, langs=["fr"])
    sets = {"short": held_out_queries(args.queries), "long": long_queries(args.queries)}
    results = {}
    for method in ("fuzzy", "fuzzy-ann"):
        with Selector("fr", "en", url=url, k=args.k, pool=100, method=method, embedder=embedder.name) as sel:
            warm_up(lambda q: sel.select(q))
            results[method] = {name: latency(sel, qs, method, args.k) for name, qs in sets.items()}
            if method == "fuzzy-ann":
                from scoi.embedding.embeddings import ann_plan

                conn = sel.reader
                caption = describe(conn)
                plan = ann_plan(conn, sel.embeddings.row(sel.reader), sel.embeddings.embed(sel.reader, sets["short"][0]), lang="fr", tgt="en",
                                n=args.k)
                uses_index = sel.embeddings.row(sel.reader).index_name in plan
                rec = {}
                for name, qs in sets.items():
                    for (ef, k), value in recall(sel, qs, (args.k, 10), (40, 100)).items():
                        rec[(name, ef, k)] = value
    print(f"{caption}; model {embedder.name} (dim {embedder.dim}){'; ' + note if note else ''}")
    print()
    print(f"embedding: {summary.embedded:,} French sentences in {summary.seconds:.1f}s = "
          f"{summary.sentences_per_second:.0f} sentences/s (encode + INSERT batches of 256 + HNSW build "
          f"{summary.index_seconds:.1f}s); encode alone (1,000 captions, batch 64): {encode_rate:.0f} sentences/s")
    print()
    print(f"| method, k={args.k} | part | long p50 ms | long p95 ms | short p50 ms | short p95 ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for method, by_set in results.items():
        for key, label in (("pool", "SQL (pool or ANN + fetch)"), ("analyze", "query embedding (+ Moses)"),
                           ("total", "whole selection")):
            cells = [f"{v:.1f}" for name in ("long", "short") for v in by_set[name][key]]
            print(f"| {method} | {label} | {' | '.join(cells)} |")
    print()
    print(f"fuzzy-ann's statement reads the HNSW index: {'yes' if uses_index else 'NO'}")
    print("| HNSW (m=16, ef_construction=64) | recall@k mean (min), long | short | ANN SQL p50/p95 ms, long | short |")
    print("| --- | --- | --- | --- | --- |")
    for ef in (40, 100):
        for k in (args.k, 10):
            cells = []
            for name in ("long", "short"):
                mean, low, _ = rec[(name, ef, k)]
                cells.append(f"{mean:.3f} ({low:.2f})")
            cells += [f"{rec[(name, ef, k)][2][0]:.1f} / {rec[(name, ef, k)][2][1]:.1f}" for name in ("long", "short")]
            print(f"| ef_search={ef}, k={k} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
