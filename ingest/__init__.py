"""The ingest layer: parallel corpus files -> parsed sentences -> PostgreSQL.

readers   stream (line, src, tgt) records from TSV, Moses pairs, TMX, JSONL (.gz too)
analysis  Moses tokens + dependency parse + polynomial terms (runs in worker processes)
writer    one transaction per batch: COPY into staging tables, then idempotent inserts
pipeline  ties them together (validation pass, parallel parse, progress, summary)
"""
