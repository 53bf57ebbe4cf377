"""The ingest layer: parallel corpus files -> parsed sentences -> PostgreSQL (uses scoi, never the reverse).

readers    stream (line, src, tgt) records from TSV, Moses pairs, TMX, JSONL (.gz too)
workers    parse processes forked from a fork server (preload) and the batch runner feeding them
writer     one transaction per batch: COPY straight into the tables under the ingest lock
runs       corpus, parser and ingest_run rows (run counts, rejected rows), the corpus listing
pipeline   ties them together (validation pass, parallel parse, progress, summary)
reanalyze  moves stored sentences to the current analysis scheme (same workers and runner)

Tokens, trees and terms come from scoi.analysis; SQL from scoi/db/sql/ingest.sql (read by
writer only), ingest_runs.sql (runs only) and reanalyze.sql (reanalyze only).
"""
