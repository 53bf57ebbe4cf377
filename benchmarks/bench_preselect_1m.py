"""Preselection at 1M pairs side by side with bm25s: latency, ratio, overlap, certified rate.

Short queries (Multi30k test captions) and long ones (held-out Europarl sentences,
recombined like the database's sentences: first half of one, second half of the next);
overlap@100 with exact BM25.

bm25s (``method="lucene"``, k1 1.5, b 0.75) indexes the same lowercased Moses tokens of the
eligible French sentences in memory, in the same process; each query is timed on scoi's
block preselection (exact top 100 pairs, pair ids mapped in the database) and on bm25s
(``get_scores`` + ``argpartition`` of the top 100 sentences, sorted), alternating which goes
first query by query, so both see the same machine load. ``--profile`` adds where scoi's
milliseconds go (server read alone, read + transfer, decode + sum, top n, pair mapping).

The 1M-pair database is built by RECOMBINING real sentences of the development corpora: each
synthetic French sentence is the first half of one real eligible sentence's Moses tokens
followed by the second half of another's, paired with the first one's English side.
Only what preselection reads is synthesised (sentence, pair, bm25_doc, the posting
blocks, vocab.df, bm25_stats) — the synthetic rows reuse
the first sentence's polynomial terms, so this database is for preselection only. It is
built server-side in SQL from a copy of the 42k database that ``bench_select.py --build``
makes (``--source``, default ``scoi_bench_select``: it leaves the long queries out).

    SCOI_DATABASE_URL=... python benchmarks/bench_preselect_1m.py [--pairs 1000000] [--rebuild]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_select import describe, french_documents, index_size, load_average, pct  # noqa: E402
from shared_data import held_out_queries, long_queries, warm_up  # noqa: E402

BUILD_SQL = """
DROP INDEX IF EXISTS sentence_tsv_idx;
CREATE TEMP TABLE src_fr AS
    SELECT row_number() OVER (ORDER BY s.id) AS rn, s.id, s.tokens, s.n_tokens, s.parser_id,
           s.term_keys, s.term_mults, p.a_id AS en_id
    FROM sentence s JOIN pair p ON p.b_id = s.id AND p.a_lang = 'en' AND p.b_lang = 'fr'
    WHERE s.lang = 'fr' AND s.eligible AND s.n_tokens >= 2;
CREATE TEMP TABLE synth AS
    WITH n AS (SELECT count(*) AS c FROM src_fr)
    SELECT g AS k,
           1 + (hashint4(g) & 2147483647) %% n.c AS ra,
           1 + (hashint4(g + 1000000007) & 2147483647) %% n.c AS rb
    FROM generate_series(1, %(n)s) g, n;
CREATE TEMP TABLE synth_sent AS
    SELECT DISTINCT ON (sha) * FROM (
        SELECT a.en_id, a.parser_id, a.term_keys, a.term_mults, tokens,
               array_to_string(tokens, ' ') AS text,
               sha256(convert_to(array_to_string(tokens, ' '), 'UTF8')) AS sha
        FROM (SELECT s.*, a.tokens[1:a.n_tokens / 2] || b.tokens[b.n_tokens / 2 + 1:] AS tokens,
                     a.en_id, a.parser_id, a.term_keys, a.term_mults
              FROM synth s JOIN src_fr a ON a.rn = s.ra JOIN src_fr b ON b.rn = s.rb) a
    ) x ORDER BY sha;
CREATE TEMP TABLE new_fr (id bigint, sha bytea, tokens text[], n_tokens int);
WITH ins AS (
    INSERT INTO sentence (lang, text, text_sha, tokens, n_tokens, parser_id, eligible, term_keys, term_mults)
    SELECT 'fr', text, sha, tokens, cardinality(tokens), parser_id, cardinality(tokens) <= 120,
           term_keys, term_mults
    FROM synth_sent
    ON CONFLICT (lang, text_sha) DO NOTHING
    RETURNING id, text_sha, tokens, n_tokens
)
INSERT INTO new_fr SELECT * FROM ins;
INSERT INTO pair (corpus_id, a_lang, b_lang, a_id, b_id, line)
SELECT (SELECT min(id) FROM corpus), 'en', 'fr', ss.en_id, nf.id, NULL
FROM new_fr nf JOIN synth_sent ss ON ss.sha = nf.sha
ON CONFLICT DO NOTHING;
INSERT INTO bm25_doc (sentence_id, dl, token_ids, tfs)
SELECT nf.id, nf.n_tokens, array_agg(v.id ORDER BY v.id), array_agg(t.tf ORDER BY v.id)
FROM new_fr nf
CROSS JOIN LATERAL (SELECT lower(tok) AS tok, count(*)::smallint AS tf FROM unnest(nf.tokens) tok GROUP BY 1) t
JOIN vocab v ON v.lang = 'fr' AND v.token = t.tok
GROUP BY nf.id, nf.n_tokens;
UPDATE vocab v SET df = c.n
FROM (SELECT u.token_id, count(*) n FROM bm25_doc d CROSS JOIN LATERAL unnest(d.token_ids) AS u(token_id)
      GROUP BY u.token_id) c
WHERE v.id = c.token_id;
UPDATE bm25_stats b SET n_docs = x.n, total_len = x.l
FROM (SELECT count(*) n, sum(n_tokens) l FROM sentence WHERE lang = 'fr' AND eligible) x WHERE b.lang = 'fr';
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1_000_000, help="target size of the fr-en database")
    ap.add_argument("--source", default="scoi_bench_select",
                    help="database holding the development corpora as bench_select.py --build ingests it")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--build-only", action="store_true", help="build the database, run no queries")
    ap.add_argument("--queries", type=int, default=100, help="queries per set")
    ap.add_argument("--profile", action="store_true",
                    help="also time scoi's steps apart (server read alone, read + transfer, decode + sum, top n)")
    ap.add_argument("--json", action="store_true", help="also print one JSON object per query set")
    ap.add_argument("--no-overlap", action="store_true",
                    help="skip bm25s (its in-memory index of every sentence is the slow part at 4M): scoi alone")
    ap.add_argument("--memory", action="store_true",
                    help="also measure each query's peak Python/numpy memory (tracemalloc, a pass of its own)")
    ap.add_argument("--no-cold", action="store_true",
                    help="do not also time the same engine without its list cache (Bm25Params(cache_postings=0))")
    ap.add_argument("--no-warm", action="store_true",
                    help="do not first read the pair table, the posting blocks and their indexes once")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Bm25Params field, e.g. --set read_all=0 (repeatable)")
    args = ap.parse_args()
    import psycopg
    from psycopg import sql

    from scoi.db.engine import create_database, get_engine, resolve_database, server_url
    from scoi.db.queries import load
    from scoi.selection.preselect import Stats
    from scoi.selection.selector import Bm25Params, Selector

    base = resolve_database().url
    name = "scoi_bench_1m" if args.pairs == 1_000_000 else f"scoi_bench_{args.pairs // 1000}k"
    url = server_url(base, name)
    with psycopg.connect(base, autocommit=True) as c:
        exists = c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        have_source = c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (args.source,)).fetchone()
    if (args.rebuild or not exists) and not have_source:  # a fresh SCOI_HOME: ingest the development corpora first
        from bench_select import bench_url

        from scoi.db.engine import dispose_engines

        print(f"building {args.source} from the development corpora (bench_select.py --build)")
        bench_url(None, args.source)
        dispose_engines()  # a template must have no open connections
    if args.rebuild or not exists:
        t0 = time.perf_counter()
        url = create_database(base, name, template=args.source)
        get_engine(url)
        with psycopg.connect(url) as conn:
            have = conn.execute("SELECT count(*) FROM pair").fetchone()[0]
            for stmt in BUILD_SQL.split(";\n"):
                if stmt.strip():
                    conn.execute(stmt, {"n": max(0, args.pairs - have)} if "%(n)s" in stmt else None)
            conn.execute(load("bm25")["rebuild_blocks"])  # the posting blocks, from the forward rows written above
            conn.commit()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
            built = f"built by recombination in {time.perf_counter() - t0:.0f} s on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
            conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), sql.Literal(built)))
        print(f"{name}: {built}")
    if args.build_only:
        return
    get_engine(url)  # migrates a database built by an older scoi
    fields = {f.name: f.type for f in dataclasses.fields(Bm25Params)}
    overrides = {k: (v == "True" if fields[k] in (bool, "bool") else v if fields[k] in (str, "str")
                     else float(v) if "." in v else int(v))
                 for k, v in (kv.split("=", 1) for kv in args.set)}
    params = Bm25Params(**overrides)
    sel = Selector("fr", "en", url=url, k=4, pool=100, bm25=params)
    # the same engine without the list cache, timed in the same loop (--no-cold: skip it)
    cold = None if args.no_cold or not params.cache_postings else Selector(
        "fr", "en", url=url, k=4, pool=100, bm25=dataclasses.replace(params, cache_postings=0))
    if not args.no_warm:
        print(warm_relations(sel.reader), flush=True)
    warm_up(lambda q: sel.preselect(sel.query.analyze(q)[0]))
    if sel.engine.cache is not None:
        sel.engine.cache.hits = sel.engine.cache.misses = 0  # the hit rate of the timed queries
    sets = {"long": recombined([sel.query.analyze(q)[0] for q in long_queries(args.queries + 1)])[:args.queries],
            "short": [sel.query.analyze(q)[0] for q in held_out_queries(args.queries)]}
    ref = None if args.no_overlap else Bm25sIndex(sel.reader)
    rows, reads, profiles, memory, colds = [], [], [], {}, {}
    for name, toks in sets.items():
        times, ref_times, got, certified, stats, cold_times = [], [], [], [], [], []
        for i, t in enumerate(toks):
            st = Stats()

            def ours() -> None:
                t0 = time.perf_counter()
                found = sel.preselect(t, stats=st)
                times.append(1000 * (time.perf_counter() - t0))
                got.append(found)
                certified.append(bool(found))  # the block preselection is exact BM25's top n

            def uncached() -> None:
                t0 = time.perf_counter()
                found = cold.preselect(t)
                cold_times.append(1000 * (time.perf_counter() - t0))
                assert found == got[-1], "the list cache changed a pool"  # the same floats, the same order

            steps = [ours] + ([lambda: ref_times.append(ref.timed(t))] if ref is not None else [])
            k = i % len(steps)  # rotate which engine goes first
            for step in steps[k:] + steps[:k]:
                step()
            if cold is not None:
                uncached()
            got[-1] = [p for p, _ in got[-1]]
            stats.append(st)
        if cold_times:
            colds[name] = pct(cold_times)
        exact = [[] for _ in toks] if ref is None else [ref.top_pairs(t, 100) for t in toks]
        overlap = [len(set(g) & set(e)) / len(e) for g, e in zip(got, exact) if e] or [float("nan")]
        theirs = pct(ref_times) if ref_times else (float("nan"), float("nan"))
        rows.append((name, *pct(times), *theirs, float(np.mean(overlap)), min(overlap), float(np.mean(certified))))
        reads.append((name, *(pct([getattr(s, k) for s in stats]) for k in ("postings", "blocks", "blocks_total", "bytes"))))
        if args.profile:
            profiles.append((name, profile(sel, toks)))
        if args.memory:
            memory[name] = peak_memory(sel, toks)
    pairs = sel.reader.execute("SELECT count(*) FROM pair").fetchone()[0]
    print(f"{describe(sel.reader)} (recombined sentences, see docstring); {args.queries} queries per set "
          f"(after 200 other short held-out queries as warm-up); {params}; load average {load_average()}")
    print()
    if ref is not None:
        print(f"bm25s {ref.version}: index of {len(ref.sids):,} sentences built in {ref.build_s:.0f}s (in memory)")
        print()
    print("| queries | scoi p50 ms | scoi p95 ms | bm25s p50 ms | bm25s p95 ms | ratio p50 | ratio p95 "
          "| overlap@100 mean (min) | certified exact |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, p50, p95, r50, r95, mean, low, cert in rows:
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {r50:.1f} | {r95:.1f} | {p50 / r50:.2f} | {p95 / r95:.2f} "
              f"| {mean:.3f} ({low:.2f}) | {cert:.2f} |")
        if name in colds:
            c50, c95 = colds[name]
            print(f"| {name}, no list cache | {c50:.1f} | {c95:.1f} | {r50:.1f} | {r95:.1f} | {c50 / r50:.2f} "
                  f"| {c95 / r95:.2f} | (the same pools) | |")
    if sel.engine.cache is not None:
        info = sel.engine.cache.info()
        print()
        print(f"list cache after the run: {info['lists']:,} lists, {info['postings']:,} postings "
              f"({info['mb']:.0f} MB; bound {info['max_postings']:,} postings, lists of >= "
              f"{params.cache_min_df:,}); share of cacheable postings summed from it in the timed queries "
              f"{info['hit_rate'] or 0:.3f}; load average at the end {load_average()}")
    if profiles:
        print()
        print("where scoi's milliseconds go, p50 (p95), the same queries run again step by step:")
        print()
        print("| queries | " + " | ".join(PROFILE_STEPS.values()) + " |")
        print("| --- | " + " | ".join("---" for _ in PROFILE_STEPS) + " |")
        for name, prof in profiles:
            print(f"| {name} | " + " | ".join(f"{a:.1f} ({b:.1f})" for a, b in (pct(prof[k]) for k in PROFILE_STEPS))
                  + " |")
    print()
    print("| queries | postings summed p50 (p95) | blocks read p50 (p95) | blocks of the query's tokens p50 "
          "| kB read p50 (p95) |")
    print("| --- | --- | --- | --- | --- |")
    for name, post, blk, total, nbytes in reads:
        print(f"| {name} | {post[0]:,.0f} ({post[1]:,.0f}) | {blk[0]:,.0f} ({blk[1]:,.0f}) | {total[0]:,.0f} | "
              f"{nbytes[0] / 1000:,.0f} ({nbytes[1] / 1000:,.0f}) |")
    if memory:
        print()
        print("| queries | peak memory per query p50 (p95, max) MB |")
        print("| --- | --- |")
        for name, peaks in memory.items():
            p50, p95 = pct(peaks)
            print(f"| {name} | {p50:.1f} ({p95:.1f}, {max(peaks):.1f}) |")
    print()
    print(index_size(sel.reader, pairs))
    size = sel.reader.execute("SELECT pg_database_size(current_database()), "
                              "shobj_description(oid, 'pg_database') FROM pg_database "
                              "WHERE datname = current_database()").fetchone()
    print(f"database {size[0] / 1e9:.2f} GB, {size[0] / max(pairs, 1):,.0f} bytes per pair; {size[1] or 'build time not recorded'}")
    if args.json:
        reads_by = {r[0]: r[1:] for r in reads}
        for name, p50, p95, r50, r95, mean, low, cert in rows:
            print(json.dumps({"name": name, "pairs": pairs, "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                              "bm25s_p50_ms": None if r50 != r50 else round(r50, 2),
                              "bm25s_p95_ms": None if r95 != r95 else round(r95, 2),
                              "uncached_p50_ms": round(colds[name][0], 2) if name in colds else None,
                              "uncached_p95_ms": round(colds[name][1], 2) if name in colds else None,
                              "overlap_mean": None if mean != mean else round(mean, 4),  # NaN: --no-overlap
                              "overlap_min": None if low != low else round(low, 4), "certified": round(cert, 4),
                              "postings_p50": reads_by[name][0][0], "bytes_p50": reads_by[name][3][0],
                              "bytes_p95": reads_by[name][3][1],
                              "peak_mb_p50": pct(memory[name])[0] if name in memory else None,
                              "peak_mb_p95": pct(memory[name])[1] if name in memory else None,
                              "peak_mb_max": max(memory[name]) if name in memory else None,
                              "db_bytes_per_pair": round(size[0] / max(pairs, 1)), "built": size[1],
                              "cache_mb": round(sel.engine.cache.info()["mb"]) if sel.engine.cache else 0}))


PROFILE_STEPS = {
    "server": "server read alone ms",
    "transfer": "read + transfer ms",
    "whole": "whole preselection ms",
    "wait": "of it waiting for rows ms",
    "decode": "decode ms",
    "sum": "sum ms",
    "head": "top 2n sentences ms",
    "top": "pair mapping round trip ms",
}


def profile(sel, token_lists: list[list[str]]) -> dict[str, list[float]]:
    """Per query, scoi's steps timed apart: the streaming statement run on the server with
    its rows counted there (no transfer), the same statement streamed to the client and
    kept undecoded (read + transfer), then the whole preselection with its own step
    timings (Stats.ms: waiting for rows, decoding, summing, the top 2n, pair mapping)."""
    from scoi.db.queries import load
    from scoi.selection.blockread import CHUNK, NO_CACHE, Stats
    from scoi.core.bm25blocks import DIR

    stream_sql = load("select")["blocks_stream"].strip().rstrip(";")
    out: dict[str, list[float]] = {k: [] for k in PROFILE_STEPS}
    cur = sel.reader.cursor(binary=True)
    for toks in token_lists:
        params = {"lang": sel.src, "tokens": [t.lower() for t in toks], "read_all": 2**62, "chunk": CHUNK,
                  "rec": DIR.itemsize, **NO_CACHE}  # the uncached read
        t0 = time.perf_counter()
        cur.execute(f"SELECT count(*), sum(length(x.ids) + length(x.tfdl)) FROM ({stream_sql}) "
                    "AS x(rank, n_tokens, c, n_chunks, df, cnt, meta, n_docs, total_len, lo, hi, total, ids, tfdl, "
                    "id, version, hit, token)",
                    params).fetchall()
        out["server"].append(1000 * (time.perf_counter() - t0))
        t0 = time.perf_counter()
        kept = list(cur.stream(stream_sql, params))
        out["transfer"].append(1000 * (time.perf_counter() - t0))
        del kept
        st = Stats()
        t0 = time.perf_counter()
        sel.preselect(toks, stats=st)
        out["whole"].append(1000 * (time.perf_counter() - t0))
        for k in ("wait", "decode", "sum", "head", "top"):
            out[k].append(st.ms.get(k, 0.0))
    return out


def peak_memory(sel, token_lists: list[list[str]]) -> list[float]:
    """Per query, the peak of memory allocated while it ran (MB; tracemalloc sees Python
    objects and numpy's arrays): the per-query memory the 10M target bounds. A pass of its
    own, as tracing slows every allocation."""
    import tracemalloc

    peaks = []
    tracemalloc.start()
    try:
        for toks in token_lists:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            sel.preselect(toks)
            peaks.append((tracemalloc.get_traced_memory()[1] - base) / 1e6)
    finally:
        tracemalloc.stop()
    return peaks


#: What a server that has run a while holds in memory: the tables and indexes every query
#: reads at random (a pool's pairs by sentence id; the posting blocks by token). 200 warm-up
#: queries touch a small share of them at 10M pairs, and the timed ones would measure the disk.
WARM = (
    "SET enable_seqscan = off",
    "SET max_parallel_workers_per_gather = 0",
    "SELECT count(*) FROM (SELECT a_id, b_id FROM pair ORDER BY a_id, b_id) x",
    "SELECT count(*) FROM (SELECT b_id FROM pair ORDER BY b_id) x",
    "SELECT count(*) FROM (SELECT token_id, block_no FROM bm25_block ORDER BY token_id, block_no) x",
    "RESET enable_seqscan",
    "RESET max_parallel_workers_per_gather",
    "SELECT count(*) FROM pair",
    "SELECT count(*) FROM bm25_block",
    "SELECT sum(length(md5(meta))) FROM bm25_dir",
)


def warm_relations(conn) -> str:
    """Read the pair table, the posting blocks, the directories and their indexes once (the
    OS page cache keeps them; ``--no-warm`` skips it): what it read and how long it took."""
    t0 = time.perf_counter()
    for statement in WARM:
        conn.execute(statement)
    size = conn.execute("SELECT pg_total_relation_size('pair') + pg_total_relation_size('bm25_block') "
                        "+ pg_total_relation_size('bm25_dir')").fetchone()[0]
    if conn.info.transaction_status:  # (a read transaction the statements opened)
        conn.rollback()
    return f"page cache warmed: pair, bm25_block, bm25_dir and their indexes ({size / 1e9:.1f} GB) read in " \
           f"{time.perf_counter() - t0:.0f} s"


class Bm25sIndex:
    """bm25s (lucene, k1 1.5, b 0.75) over the lowercased Moses tokens of the eligible
    French sentences, in memory: the in-memory BM25 that scoi is compared with."""

    def __init__(self, conn) -> None:
        import bm25s

        docs, self.pairs = french_documents(conn)
        self.sids = sorted(docs)
        t0 = time.perf_counter()
        self.model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        self.model.index([docs[s] for s in self.sids], show_progress=False)
        self.build_s = time.perf_counter() - t0
        self.version = bm25s.__version__
        self.first_pair = np.array([min(self.pairs[s]) for s in self.sids])

    def timed(self, toks: list[str], n: int = 100) -> float:
        """Milliseconds for bm25s's top ``n`` sentences of ``toks``: vocabulary look-up,
        ``get_scores`` and ``argpartition``, the top n sorted."""
        t0 = time.perf_counter()
        vocab = self.model.vocab_dict
        ids = [vocab[t] for t in (t.lower() for t in toks) if t in vocab]
        scores = self.model.get_scores(ids) if ids else np.zeros(len(self.sids))
        top = np.argpartition(-scores, n)[:n]
        top[np.argsort(-scores[top])]
        return 1000 * (time.perf_counter() - t0)

    def top_pairs(self, toks: list[str], n: int) -> list[int]:
        """Exact BM25 top ``n`` pair ids (score, then pair id): the overlap's reference."""
        vocab = self.model.vocab_dict
        ids = [vocab[t] for t in (t.lower() for t in toks) if t in vocab]
        scores = self.model.get_scores(ids) if ids else np.zeros(len(self.sids))
        order = np.lexsort((self.first_pair, -scores))[: n + 20]
        top: list[int] = []
        for i in order:
            top.extend(sorted(self.pairs[self.sids[i]]))
        return top[:n]


def recombined(token_lists: list[list[str]]) -> list[list[str]]:
    """Queries made the way the 1M sentences are: the first half of one query's Moses
    tokens followed by the second half of the next one's."""
    return [a[:len(a) // 2] + b[len(b) // 2:] for a, b in zip(token_lists, token_lists[1:])]


if __name__ == "__main__":
    main()
