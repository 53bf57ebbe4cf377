"""``scoi corpora export -o -`` as a user pipes it: the TMX on stdout goes straight into
``scoi ingest`` of another database, which then holds the same pairs and metadata (real
subprocesses, real databases)."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg

from tests.helpers.cli import last_json, run_scoi, scoi_env
from tests.helpers.database import fresh_database


def pairs_with_meta(db_url: str) -> set[tuple[str, str, str]]:
    with psycopg.connect(db_url) as conn:
        return {(s, t, json.dumps(m, sort_keys=True)) for s, t, m in conn.execute(
            "SELECT t.src, t.tgt, p.meta FROM pair_text t JOIN pair p ON p.id = t.pair_id")}


def test_an_exported_corpus_piped_into_ingest_arrives_whole(db_url, server_url, tmp_path):
    rows = [{"src": "Il pleut.", "tgt": "It is raining.", "client": "acme", "score": 0.5},
            {"src": "Merci beaucoup.", "tgt": "Thank you very much.", "x-domain": ["a", "b"], "usagecount": 2}]
    (tmp_path / "tm.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    last_json(run_scoi(["ingest", str(tmp_path / "tm.jsonl"), "--src", "fr", "--tgt", "en", "--corpus", "tm",
                        "--workers", "0", "--json"], db_url, check=True))
    with fresh_database(server_url) as other:
        export = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "corpora", "export", "tm", "-o", "-"],
                                  env=scoi_env(db_url), stdout=subprocess.PIPE)
        ingest = subprocess.run([sys.executable, "-m", "scoi.cli.main", "ingest", "/dev/stdin", "--format", "tmx",
                                 "--src", "fr", "--tgt", "en", "--corpus", "back", "--workers", "0", "--json"],
                                env=scoi_env(other), stdin=export.stdout, capture_output=True, text=True,
                                timeout=300)
        export.stdout.close()
        assert export.wait(timeout=60) == 0
        assert last_json(ingest)["inserted"] == 2
        assert pairs_with_meta(other) == pairs_with_meta(db_url)
