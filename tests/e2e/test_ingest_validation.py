"""Rows the database would refuse are caught by validation,
unreadable files are one-line errors, header detection, empty files, dead runs, output."""

from __future__ import annotations

import gzip

import pytest

from tests.helpers.cli import cli, cli_json
from tests.helpers.database import scalar
from tests.helpers.ingest import write_tsv

FR_EN = ["--src", "fr", "--tgt", "en"]
QUICK = ["--workers", "0"]


def _refused(db_url, result, *expected):
    assert result.exit_code != 0, result.stdout
    err = " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr and err.startswith("error: "), result.stderr
    for text in expected:
        assert text in err, f"{text!r} not in stderr: {result.stderr}"
    for table in ("pair", "sentence", "corpus", "ingest_run"):
        assert scalar(db_url, f"SELECT count(*) FROM {table}") == 0, table


def _ingest(args, db_url):
    return cli(["ingest", *args, *FR_EN, *QUICK, "--batch-size", "5"], db_url)


# ------------------------------------------------------------ 1. rows the writer refuses
def _huge_line(n_bytes: int = 1_000_000) -> str:
    words, size = [], 0
    while size < n_bytes:
        words.append(f"mot{len(words)}x")
        size += len(words[-1]) + 1
    return " ".join(words)


def _oversized_cases(pairs):
    return {
        "1 MB of distinct words": (_huge_line(), "source side is", "at most 10,000 characters"),
        "a 3,000-character word": ("Voici " + "a" * 3000 + " fin.", "word of 3,000 characters", "at most 300"),
        "40,000 one-letter tokens": (" ".join(["a"] * 40_000), "source side is 79,999 characters", "10,000"),
    }


@pytest.mark.parametrize("case", ["1 MB of distinct words", "a 3,000-character word", "40,000 one-letter tokens"])
def test_rows_the_database_would_refuse_stop_before_writing(db_url, tmp_path, pairs, case):
    text, *expected = _oversized_cases(pairs)[case]
    path = write_tsv(tmp_path / "big.tsv", pairs[:3] + [(text, "A long line.")] + pairs[3:6])
    _refused(db_url, _ingest([str(path)], db_url), "big.tsv:5", *expected)


def test_skip_bad_skips_the_huge_line_and_ingests_the_rest(db_url, tmp_path, pairs):
    path = write_tsv(tmp_path / "big.tsv", pairs[:3] + [(_huge_line(), "A long line.")] + pairs[3:6])
    out = cli_json(["ingest", str(path), *FR_EN, *QUICK, "--skip-bad"], db_url)
    assert (out["inserted"], out["rejected"]) == (6, 1)
    assert out["rejected_rows"][0]["line"] == 5
    assert scalar(db_url, "SELECT status FROM ingest_run") == "done"


# ------------------------------------------------------------ 2. unreadable files
def test_unreadable_files_are_one_line_errors(db_url, tmp_path, pairs):
    (tmp_path / "adir.tsv").mkdir()
    _refused(db_url, _ingest([str(tmp_path / "adir.tsv")], db_url), "adir.tsv", "is a directory")

    notgz = write_tsv(tmp_path / "plain.tsv", pairs[:5])
    fake = tmp_path / "fake.tsv.gz"
    fake.write_bytes(notgz.read_bytes())
    _refused(db_url, _ingest([str(fake)], db_url), "fake.tsv.gz", "not a gzip file")

    data = gzip.compress(notgz.read_bytes() * 50)
    cut = tmp_path / "cut.tsv.gz"
    cut.write_bytes(data[: len(data) // 2])
    _refused(db_url, _ingest([str(cut)], db_url), "cut.tsv.gz", "truncated gzip")


# ------------------------------------------------------------ 3. headers
def test_language_name_header_is_skipped(db_url, tmp_path, pairs):
    path = tmp_path / "named.tsv"
    path.write_text("French\tEnglish\n" + "".join(f"{a}\t{b}\n" for a, b in pairs[:4]), encoding="utf-8")
    out = cli_json(["ingest", str(path), *FR_EN, *QUICK], db_url)
    assert out["inserted"] == 4
    assert scalar(db_url, "SELECT count(*) FROM sentence WHERE text IN ('French', 'English')") == 0


def test_header_flags_force_it(db_url, tmp_path, pairs):
    path = tmp_path / "h.tsv"
    path.write_text("Titre\tTitle\n" + "".join(f"{a}\t{b}\n" for a, b in pairs[:3]), encoding="utf-8")
    assert cli_json(["ingest", str(path), *FR_EN, *QUICK, "--header", "--corpus", "a"], db_url)["inserted"] == 3
    path2 = tmp_path / "h2.tsv"
    path2.write_text("src\ttgt\n" + "".join(f"{a}\t{b}\n" for a, b in pairs[3:6]), encoding="utf-8")
    assert cli_json(["ingest", str(path2), *FR_EN, *QUICK, "--no-header", "--corpus", "b"], db_url)["inserted"] == 4


# ------------------------------------------------------------ 4. empty files
def test_empty_file_is_an_error(db_url, tmp_path):
    path = tmp_path / "empty.tsv"
    path.write_text("", encoding="utf-8")
    _refused(db_url, _ingest([str(path)], db_url), "empty.tsv", "nothing to ingest", "empty file")
    path.write_text("fr\ten\n\n", encoding="utf-8")
    _refused(db_url, _ingest([str(path)], db_url), "empty.tsv", "nothing to ingest")


# ------------------------------------------------------------ 6. output
def test_summary_has_a_nonzero_rate_and_a_rerun_no_pipeline_note(db_url, tmp_path, pairs):
    path = write_tsv(tmp_path / "small.tsv", pairs[:3])
    result = cli(["ingest", str(path), *FR_EN, *QUICK], db_url)
    assert result.exit_code == 0, result.stderr
    assert " 0 pairs/s" not in result.stdout and "pairs/s" in result.stdout
    again = cli(["ingest", str(path), *FR_EN, *QUICK], db_url)  # nothing parsed: no note
    assert again.exit_code == 0 and "note:" not in again.stdout, again.stdout
