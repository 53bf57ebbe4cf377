"""Names people give things and the text printed back from the database (scoi.core.names),
and the bounds of numbers (scoi.core.limits). Numbers in test names are those of the
reliability run of 2026-11-24."""

from __future__ import annotations

import os

import pytest

from scoi.core.limits import LIMITS, check_range
from scoi.core.names import BadName, check_language_code, check_name, printable
from scoi.parsers import ParserNotAvailable, choose_parser


@pytest.mark.parametrize("name", ["esc\x1b[2J\x1b[31mred", "x\x1b[2Jy\nz", "tab\there", "cr\r", "nul\x00",
                                  "del\x7f", "c1\x85", "line\u2028sep", "para\u2029", "bidi\u202eevil"])
def test_names_with_control_characters_are_refused(name):
    with pytest.raises(BadName, match="corpus name '.*' holds the control character") as info:
        check_name("corpus", name)
    message = str(info.value)
    assert printable(message) == message  # the message itself shows the name escaped


def test_undecodable_bytes_in_a_name_are_refused():
    name = os.fsdecode(b"c\xff\xfe")  # what Python makes of such argv bytes: lone surrogates
    with pytest.raises(BadName, match=r"corpus name 'c\\udcff\\udcfe' holds an undecodable byte"):
        check_name("corpus", name)


def test_ordinary_names_pass():
    for name in ("europarl-v7.fr-en", "news [fr] #2", "Übersetzung/日本語", "a" * 1000, "x/scoi-k4-reverse-xglm-s0"):
        assert check_name("job", name) == name
    for bad, message in (("", "is empty"), ("   ", "is empty"), ("a" * 1001, "at most 1000")):
        with pytest.raises(BadName, match=message):
            check_name("job", bad)


def test_printable_escapes_what_a_terminal_would_obey():
    assert printable("esc\x1b[2J\x1b[31mred") == "esc\\x1b[2J\\x1b[31mred"
    assert printable("x\ny\tz\r") == "x\\ny\\tz\\r"
    assert printable("a\u2028b\u202e\udcff") == "a\\u2028b\\u202e\\udcff"
    assert printable("[bold]ok[/bold] é 日本") == "[bold]ok[/bold] é 日本"  # only control characters change


@pytest.mark.parametrize("code", ["fr$(id)", "fr;rm", "f", "fr\x1b[31m", "", "french1", "fr-", "../en"])
def test_bad_language_codes_are_refused_and_never_pasted_into_a_hint(code):
    with pytest.raises(BadName, match="is not a language code") as info:
        check_language_code(code, "--src")
    assert "\x1b" not in str(info.value)
    with pytest.raises(ParserNotAvailable) as parser:
        choose_parser(code)
    assert "spacy download" not in str(parser.value) and "is not a language code" in str(parser.value)


def test_language_codes_pass():
    for code in ("fr", "en", "fra", "pt-BR", "pt_BR", "zh-Hant", "sr-Latn-RS", "FR"):
        assert check_language_code(code) == code


@pytest.mark.parametrize("name,value", [("k", 99999999999999999999), ("k", -1), ("k", 257),
                                        ("max_attempts", 99999999999), ("max_attempts", 0), ("pool", 0),
                                        ("seed", 2**31), ("k", True), ("k", "4")])
def test_numbers_out_of_range_are_one_line(name, value):
    low, high = LIMITS[name]
    with pytest.raises(ValueError, match=rf"must be an integer from {low} to {high}, not"):
        check_range(name, value)
    assert check_range(name, high) == high and check_range(name, low) == low
