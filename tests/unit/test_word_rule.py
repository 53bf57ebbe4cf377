"""One rule for "a word" (a token with a letter or a digit) and one for the term similarity
c = 1 / (1 + d): the Python definitions in scoi.core.coverage, the page's script that spells
the word rule again in JavaScript, and the code-point ranges migration 0040's SQL
``is_word(text)`` embeds must agree on every code point (the SQL side under PostgreSQL:
tests/integration/test_word_rule_sql.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from scoi.core.coverage import distance_similarity, is_word, term_similarity
from scoi.core.dpp import dpp_kernel
from scoi.core.word_ranges import UNICODE_VERSION, word_class_regex, word_ranges
from scoi.service.explain import term_similarity as term_dict_similarity
from tests.helpers.migrations import migration_constant

ROOT = Path(__file__).resolve().parents[2]
#: The page's word test: Unicode letters (L) and numbers (N), as a JavaScript regex.
JS_WORD = r"/[\p{L}\p{N}]/u"


def letter_or_number(ch: str) -> bool:
    """What JS_WORD matches: a code point of a Unicode L* or N* category."""
    return unicodedata.category(ch)[0] in "LN"


def test_a_word_is_a_token_with_a_letter_or_digit_on_every_code_point() -> None:
    differ = [hex(cp) for cp in range(sys.maxunicode + 1)
              if is_word(chr(cp)) != letter_or_number(chr(cp))]
    assert differ == []


def test_punctuation_and_symbols_are_not_words_and_mixed_tokens_are() -> None:
    assert [is_word(t) for t in (",", "«", "--", "€", "", "l'", "3,5", "日本", "٣")] == \
        [False, False, False, False, False, True, True, True, True]


def test_the_page_tests_words_with_the_same_rule() -> None:
    script = (ROOT / "scoi/service/static/app.js").read_text(encoding="utf-8")
    tests = re.findall(r"/\[[^/\]]*\\p\{[^/]*/u", script)  # every Unicode-property regex of the page
    assert tests and set(tests) == {JS_WORD}, tests


def test_the_word_class_regex_matches_exactly_the_code_points_is_word_keeps() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    ranges = word_ranges()
    assert all(a <= b < c - 1 for (a, b), (c, _) in zip(ranges, ranges[1:]))  # maximal, ascending
    word_class = word_class_regex(ranges)
    matched = {ord(ch) for ch in re.findall(word_class, every)}
    assert sorted(hex(cp) for cp in matched ^ {ord(ch) for ch in every if is_word(ch)})[:20] == []
    assert word_class.isascii() and "'" not in word_class  # safe inside a SQL literal


def test_the_sql_word_class_of_migration_0040_is_the_rule_of_this_python() -> None:
    """The view's literal is fixed (a migration must not change with Python's Unicode); it
    must still be what the Python rule gives, or the gaps and the page disagree."""
    version = migration_constant("0040_word_rule.py", "WORD_UNICODE_VERSION")
    assert version == UNICODE_VERSION, (
        f"this Python's unicodedata is Unicode {UNICODE_VERSION}, the gaps view's word class is {version}: "
        "they differ on the code points assigned or recategorised since; add a migration with the new "
        "scoi.core.word_ranges.word_class_regex() (docs/schema.md, Coverage gaps)")
    assert migration_constant("0040_word_rule.py", "WORD_CLASS") == word_class_regex()


def test_the_term_similarity_is_one_over_one_plus_the_l1_distance_everywhere() -> None:
    a = np.array([[2, 1, 0], [0, 0, 0]])
    b = np.array([[2, 1, 0], [1, 0, 3], [0, 0, 0]])
    l1 = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    assert np.array_equal(term_similarity(a, b), 1.0 / (1.0 + l1))
    assert distance_similarity(0) == 1.0 and distance_similarity(3) == 0.25
    as_dicts = [[term_dict_similarity(dict(enumerate(s)), dict(enumerate(t))) for t in b] for s in a]
    assert np.array_equal(np.array(as_dicts), term_similarity(a, b))
    kernel = dpp_kernel(np.array([0.0, 1.0, np.inf]), np.eye(3))
    assert np.allclose(np.diag(kernel), np.exp(np.array([1.0, 0.5, 0.0]) / (2 * 0.5)) ** 2)


def test_the_page_regex_run_by_node_agrees_with_python_on_every_code_point(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the textual check above still ties the page's regex")
    script = tmp_path / "words.js"
    script.write_text("const w = " + JS_WORD + ", unassigned = /\\p{Cn}/u, out = [[], []];\n"
                      "for (let cp = 0; cp <= 0x10FFFF; cp++) {\n"
                      "  if (cp >= 0xD800 && cp <= 0xDFFF) continue;\n"
                      "  const ch = String.fromCodePoint(cp);\n"
                      "  if (w.test(ch)) out[0].push(cp);\n"
                      "  if (unassigned.test(ch)) out[1].push(cp);\n"
                      "}\nprocess.stdout.write(out.map((a) => a.join(',')).join(';'));\n")
    run = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=120, check=True)
    words, unassigned = ({int(cp) for cp in part.split(",") if cp} for part in run.stdout.split(";"))
    # Node and Python may ship different Unicode versions: compare the code points both assign.
    both = [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF and cp not in unassigned
            and unicodedata.category(chr(cp)) != "Cn"]
    assert len(both) > 250_000
    assert [hex(cp) for cp in both if is_word(chr(cp)) != (cp in words)] == []
