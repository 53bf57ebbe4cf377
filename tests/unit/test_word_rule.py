"""One rule for "a word" (a token with a letter or a digit) and one for the term similarity
c = 1 / (1 + d): the Python definitions in scoi.core.coverage, and the page's script that
spells the word rule again in JavaScript, must agree on every code point."""

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
from scoi.service.explain import term_similarity as term_dict_similarity

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
