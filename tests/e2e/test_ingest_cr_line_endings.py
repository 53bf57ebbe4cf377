"""A Moses file saved with CR-only line endings (classic Mac) reads as one long line: the
CR inside it is named with file:line and what to do, before anything is written, whether
or not the other file has as many lines."""

from __future__ import annotations

from tests.e2e.test_ingest_cli import FR_EN, QUICK, _check_refused
from tests.helpers.cli import cli


def test_moses_file_with_cr_only_line_endings_is_refused_with_a_hint_at_them(db_url, tmp_path, pairs):
    fr, en = tmp_path / "cr_only.fr", tmp_path / "crlf10.en"
    fr.write_bytes("".join(p[0] + "\r" for p in pairs[:10]).encode("utf-8"))
    en.write_bytes("".join(p[1] + "\r\n" for p in pairs[:10]).encode("utf-8"))  # CRLF is read fine
    result = cli(["ingest", str(fr), str(en), *FR_EN, *QUICK], db_url)
    _check_refused(db_url, result.exit_code, result.stdout, result.stderr,
                   ["cr_only.fr:1", "carriage return", "CR-only line endings", "convert them to \\n"])


def test_two_cr_only_moses_files_are_refused_not_joined_into_one_pair(db_url, tmp_path, pairs):
    fr, en = tmp_path / "cr3.fr", tmp_path / "cr3.en"
    fr.write_bytes("".join(p[0] + "\r" for p in pairs[:3]).encode("utf-8"))
    en.write_bytes("".join(p[1] + "\r" for p in pairs[:3]).encode("utf-8"))
    result = cli(["ingest", str(fr), str(en), *FR_EN, *QUICK], db_url)
    _check_refused(db_url, result.exit_code, result.stdout, result.stderr,
                   ["cr3.fr:1", "CR-only line endings", "convert them to \\n"])


def test_moses_files_of_different_lengths_without_cr_get_no_line_ending_hint(db_url, tmp_path, pairs):
    fr, en = tmp_path / "short.fr", tmp_path / "long.en"
    fr.write_text("".join(p[0] + "\n" for p in pairs[:3]), encoding="utf-8")
    en.write_text("".join(p[1] + "\n" for p in pairs[:4]), encoding="utf-8")
    result = cli(["ingest", str(fr), str(en), *FR_EN, *QUICK], db_url)
    _check_refused(db_url, result.exit_code, result.stdout, result.stderr, ["short.fr:4", "same number of lines"])
    assert "CR-only" not in result.stderr
