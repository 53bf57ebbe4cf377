"""`scoi ingest` on input that used to slip through: a lone surrogate in JSONL, deep JSON
nesting, /dev/zero and over-long lines, a pipe that cannot be read twice, TMX inline codes.
Bad input is one line and nothing written; a pipe is ingested like the file it carries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from tests.helpers.cli import cli, cli_json, last_json, scoi_env
from tests.helpers.database import scalar
from tests.helpers.ingest import stored_pairs, write_tmx, write_tsv

FR_EN = ["--src", "fr", "--tgt", "en"]
QUICK = ["--workers", "0"]


def _ingest(args, db_url):
    return cli(["ingest", *args, *FR_EN, *QUICK, "--batch-size", "5"], db_url)


def _refused(db_url, result, *expected):
    """One line on stderr, a non-zero exit, and no corpus, run or pair written."""
    assert result.exit_code != 0, result.stdout
    err = result.stderr.strip()
    assert "Traceback" not in err and err.startswith("error: ") and "\n" not in err, err
    for text in expected:
        assert text in err, f"{text!r} not in stderr: {err}"
    for table in ("pair", "sentence", "corpus", "ingest_run"):
        assert scalar(db_url, f"SELECT count(*) FROM {table}") == 0, table


def _surrogate_jsonl(path, pairs):
    """Nine good lines and, as line 10, JSON's ``\\ud800`` (half a UTF-16 pair)."""
    lines = [json.dumps({"src": fr, "tgt": en}, ensure_ascii=False) for fr, en in pairs[:9]]
    lines.insert(9, '{"src": "Bonjour \\ud800 monde", "tgt": "Hello world"}')
    path.write_text("\n".join(lines + [json.dumps({"src": pairs[9][0], "tgt": pairs[9][1]})]) + "\n")
    return path


def test_lone_surrogate_in_jsonl_is_caught_before_writing(db_url, tmp_path, pairs):
    path = _surrogate_jsonl(tmp_path / "j_surrogate.jsonl", pairs)
    # More pairs before the bad line than a batch (5): before, 5 pairs were committed.
    _refused(db_url, _ingest([str(path)], db_url), "j_surrogate.jsonl:10", "lone surrogate U+D800", "--skip-bad")


def test_lone_surrogate_is_skipped_with_skip_bad(db_url, tmp_path, pairs):
    path = _surrogate_jsonl(tmp_path / "j_surrogate.jsonl", pairs)
    out = cli_json(["ingest", str(path), *FR_EN, *QUICK, "--batch-size", "5", "--skip-bad"], db_url)
    assert (out["inserted"], out["rejected"]) == (10, 1)
    assert out["rejected_rows"][0]["line"] == 10 and "surrogate" in out["rejected_rows"][0]["reason"]
    assert scalar(db_url, "SELECT status FROM ingest_run") == "done"


def test_deep_json_nesting_is_one_line(db_url, tmp_path, pairs):
    path = tmp_path / "j_deep.jsonl"
    path.write_text(json.dumps({"src": pairs[0][0], "tgt": pairs[0][1]}) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    _refused(db_url, _ingest([str(path)], db_url), "j_deep.jsonl:2", "nested too deeply")


def test_dev_zero_is_one_line(db_url):
    _refused(db_url, _ingest(["/dev/zero", "--format", "tsv"], db_url), "/dev/zero:1", "longer than 1,048,576 bytes")


def test_an_overlong_line_in_every_format_is_one_line(db_url, tmp_path, pairs):
    long = "a " * (600 * 1024)  # 1.2 MiB, no newline
    tsv = write_tsv(tmp_path / "long.tsv", pairs[:3])
    with open(tsv, "a") as fh:
        fh.write(long + "\tx\n")
    _refused(db_url, _ingest([str(tsv)], db_url), "long.tsv:5", "longer than")
    fr, en = tmp_path / "l.fr", tmp_path / "l.en"
    fr.write_text("Un.\n" + long + "\n")
    en.write_text("One.\nTwo.\n")
    _refused(db_url, _ingest([str(fr), str(en)], db_url), "l.fr:2", "longer than")
    # TMX: libxml2's limit on one text node (10 MB) holds.
    tmx = write_tmx(tmp_path / "big.tmx", pairs[:2] + [("a" * 11_000_000, "b")])
    _refused(db_url, _ingest([str(tmx)], db_url), "big.tmx", "malformed TMX", "Text node too long")


def test_process_substitution_is_read_once(db_url, tmp_path, pairs):
    """`scoi ingest <(cat f.tsv)` as a shell runs it: every pair stored (it stored 0 pairs, exit 0)."""
    path = write_tsv(tmp_path / "fifo.tsv", pairs[:20])
    cmd = (f"exec {sys.executable} -m scoi.cli.main ingest <(cat {path}) --format tsv --src fr --tgt en "
           "--corpus fifo_c --workers 0 --json")
    proc = subprocess.run(["bash", "-c", cmd], env=scoi_env(db_url, SCOI_PARSERS=""), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    assert (out["read"], out["inserted"]) == (20, 20)
    assert sorted(stored_pairs(db_url)) == sorted(pairs[:20])


def test_a_fifo_is_read_once_and_errors_name_it(db_url, tmp_path, pairs):
    fifo = str(tmp_path / "pipe.tsv")

    def feed(data: bytes) -> None:  # the FIFO's one writer, for one reader
        def write():
            with open(fifo, "wb") as fh:
                fh.write(data)
        threading.Thread(target=write, daemon=True).start()

    os.mkfifo(fifo)
    bad = write_tsv(tmp_path / "bad.tsv", pairs[:6] + [("Sans tabulation", "x")]).read_bytes().replace(
        b"Sans tabulation\tx", b"Sans tabulation")
    feed(bad)
    _refused(db_url, _ingest([fifo], db_url), "pipe.tsv:8", "no tab")
    feed(write_tsv(tmp_path / "good.tsv", pairs[:12]).read_bytes())
    out = cli_json(["ingest", fifo, *FR_EN, *QUICK, "--batch-size", "5"], db_url)
    assert (out["read"], out["inserted"], out["corpus"]) == (12, 12, "pipe")
    assert scalar(db_url, "SELECT files[1] FROM ingest_run") == fifo  # the run names the FIFO, not a copy


def _tmx_with_codes(path):
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="fr" datatype="html"/><body>\n'
        '<tu><tuv xml:lang="fr"><seg>Il a <bpt i="1">&lt;b&gt;</bpt>vraiment<ept i="1">&lt;/b&gt;</ept> faim.</seg>'
        '</tuv><tuv xml:lang="en"><seg>He is <bpt i="1">&lt;b&gt;</bpt>really<ept i="1">&lt;/b&gt;</ept> hungry.'
        '</seg></tuv></tu>\n'
        '<tu><tuv xml:lang="fr"><seg>Le <hi type="i">chat</hi> dort<ph x="1">&lt;br/&gt;</ph>.</seg></tuv>'
        '<tuv xml:lang="en"><seg>The <hi type="i">cat</hi> sleeps<ph x="1">&lt;br/&gt;</ph>.</seg></tuv></tu>\n'
        "</body></tmx>\n", encoding="utf-8")
    return path


def test_tmx_inline_codes_are_stripped_by_default(db_url, tmp_path):
    out = cli_json(["ingest", str(_tmx_with_codes(tmp_path / "codes.tmx")), *FR_EN, *QUICK], db_url)
    assert out["inserted"] == 2
    assert sorted(stored_pairs(db_url)) == [("Il a vraiment faim.", "He is really hungry."),
                                            ("Le chat dort.", "The cat sleeps.")]
    # Nothing of the codes reached the BM25 vocabulary.
    assert scalar(db_url, "SELECT count(*) FROM vocab WHERE token IN ('b', 'br', '&lt;', '&gt;', '/')") == 0


def test_tmx_keep_codes_keeps_the_old_text(db_url, tmp_path):
    out = cli_json(["ingest", str(_tmx_with_codes(tmp_path / "codes.tmx")), *FR_EN, *QUICK, "--tmx-keep-codes"],
                   db_url)
    assert out["inserted"] == 2
    assert ("Il a <b>vraiment</b> faim.", "He is <b>really</b> hungry.") in stored_pairs(db_url)
