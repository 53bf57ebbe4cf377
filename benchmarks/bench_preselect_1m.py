"""Preselection at 1M pairs: overlap@100 with exact BM25, latency and certified rate, for
short queries (Multi30k test captions) and long ones (held-out Europarl sentences,
recombined like the database's sentences: first half of one, second half of the next).

The 1M-pair database is built by RECOMBINING real sentences of the development corpora: each
synthetic French sentence is the first half of one real eligible sentence's Moses tokens
followed by the second half of another's, paired with the first one's English side.
Only what preselection reads is synthesised (sentence, pair, bm25_doc, posting, the
posting blocks, vocab.df and the token bounds of migration 0008, bm25_stats) — the synthetic rows reuse
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
from bench_select import describe, exact_bm25_top, index_size, load_average, pct  # noqa: E402
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
INSERT INTO bm25_doc (sentence_id, dl, token_ids, tfs, sig)
SELECT nf.id, nf.n_tokens, array_agg(v.id ORDER BY v.id), array_agg(t.tf ORDER BY v.id),
       bit_or(bm25_token_bit(v.id))
FROM new_fr nf
CROSS JOIN LATERAL (SELECT lower(tok) AS tok, count(*)::smallint AS tf FROM unnest(nf.tokens) tok GROUP BY 1) t
JOIN vocab v ON v.lang = 'fr' AND v.token = t.tok
GROUP BY nf.id, nf.n_tokens;
INSERT INTO posting (token_id, sentence_id, tf, dl, sig)
SELECT u.token_id, d.sentence_id, u.tf, d.dl, d.sig
FROM new_fr nf JOIN bm25_doc d ON d.sentence_id = nf.id
CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(token_id, tf);
UPDATE vocab v SET df = c.n, df_rep = c.n_rep, max_tf = c.max_tf, min_dl = c.min_dl, min_dl2 = c.min_dl2,
                   min_dl3 = c.min_dl3
FROM (SELECT token_id, count(*) n, count(*) FILTER (WHERE tf >= 2) n_rep, max(tf) max_tf, min(dl) min_dl,
             min(dl) FILTER (WHERE tf = 2) min_dl2,
             min(dl) FILTER (WHERE tf >= 3) min_dl3
      FROM posting GROUP BY token_id) c
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
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true", help="also print one JSON object per query set")
    ap.add_argument("--no-overlap", action="store_true",
                    help="skip the comparison with bm25s (its in-memory index of every sentence is the slow part at 4M)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Bm25Params field, e.g. --set read_all=0 (repeatable)")
    args = ap.parse_args()
    import psycopg

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
            conn.execute(load("bm25")["rebuild_blocks"])  # the posting blocks, from the postings written above
            conn.commit()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
        print(f"built {name} by recombination in {time.perf_counter() - t0:.0f}s")
    if args.build_only:
        return
    get_engine(url)  # migrates a database built by an older scoi
    fields = {f.name: f.type for f in dataclasses.fields(Bm25Params)}
    overrides = {k: (v == "True" if fields[k] in (bool, "bool") else v if fields[k] in (str, "str")
                     else float(v) if "." in v else int(v))
                 for k, v in (kv.split("=", 1) for kv in args.set)}
    params = Bm25Params(**overrides)
    sel = Selector("fr", "en", url=url, k=4, pool=100, bm25=params)
    warm_up(lambda q: sel.preselect(sel.query.analyze(q)[0]))
    sets = {"long": recombined([sel.query.analyze(q)[0] for q in long_queries(args.queries + 1)])[:args.queries],
            "short": [sel.query.analyze(q)[0] for q in held_out_queries(args.queries)]}
    rows, reads = [], []
    for name, toks in sets.items():
        times, got, certified, stats = [], [], [], []
        for t in toks:
            st = Stats()
            t0 = time.perf_counter()
            found = sel.preselect(t, stats=st)
            got.append([p for p, _ in found])
            times.append(1000 * (time.perf_counter() - t0))
            certified.append(bool(found))  # the block preselection is exact BM25's top n
            stats.append(st)
        exact = [[] for _ in toks] if args.no_overlap else exact_bm25_top(sel.reader, toks, 100)
        overlap = [len(set(g) & set(e)) / len(e) for g, e in zip(got, exact) if e] or [float("nan")]
        rows.append((name, *pct(times), float(np.mean(overlap)), min(overlap), float(np.mean(certified))))
        reads.append((name, *(pct([getattr(s, k) for s in stats]) for k in ("postings", "blocks", "blocks_total", "bytes"))))
    pairs = sel.reader.execute("SELECT count(*) FROM pair").fetchone()[0]
    print(f"{describe(sel.reader)} (recombined sentences, see docstring); {args.queries} queries per set "
          f"(after 200 other short held-out queries as warm-up); {params}; load average {load_average()}")
    print()
    print("| queries | preselection p50 ms | p95 ms | overlap@100 mean (min) | certified exact |")
    print("| --- | --- | --- | --- | --- |")
    for name, p50, p95, mean, low, cert in rows:
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {mean:.3f} ({low:.2f}) | {cert:.2f} |")
    print()
    print("| queries | postings read p50 (p95) | blocks read p50 (p95) | blocks of the query's tokens p50 | kB read p50 (p95) |")
    print("| --- | --- | --- | --- | --- |")
    for name, post, blk, total, nbytes in reads:
        print(f"| {name} | {post[0]:,.0f} ({post[1]:,.0f}) | {blk[0]:,.0f} ({blk[1]:,.0f}) | {total[0]:,.0f} | "
              f"{nbytes[0] / 1000:,.0f} ({nbytes[1] / 1000:,.0f}) |")
    print()
    print(index_size(sel.reader, pairs))
    if args.json:
        for name, p50, p95, mean, low, cert in rows:
            print(json.dumps({"name": name, "pairs": pairs, "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                              "overlap_mean": None if mean != mean else round(mean, 4),  # NaN: --no-overlap
                              "overlap_min": None if low != low else round(low, 4), "certified": round(cert, 4)}))


def recombined(token_lists: list[list[str]]) -> list[list[str]]:
    """Queries made the way the 1M sentences are: the first half of one query's Moses
    tokens followed by the second half of the next one's."""
    return [a[:len(a) // 2] + b[len(b) // 2:] for a, b in zip(token_lists, token_lists[1:])]


if __name__ == "__main__":
    main()
