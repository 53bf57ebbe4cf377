"""scoi.text.moses's character classes against the installed sacremoses 0.2.0 on every code point:
the shipped classes match the same code points as sacremoses' on all 1.1M of them (a regex
over one string of every code point, not a tokenisation per character), and the tokeniser
agrees at and next to every end of a class's ranges. Slow (~40 s: a sweep of the whole of
Unicode per class), so not in the unit tier; quick parity on arbitrary text:
tests/unit/test_moses.py. Real corpora: tests/integration/test_moses_shared_data.py."""

from __future__ import annotations

import importlib
import re

import pytest

from scoi.text import moses, moses_data
from tests.helpers.moses import theirs_tok

# Python's regex parser (re._parser from 3.11, sre_parse before): read a class's members.
_sre_parse = getattr(re, "_parser", None) or importlib.import_module("sre_parse")
_sre = getattr(re, "_constants", None) or importlib.import_module("sre_constants")
_CATEGORIES = {_sre.CATEGORY_SPACE: r"\s", _sre.CATEGORY_NOT_SPACE: r"\S", _sre.CATEGORY_DIGIT: r"\d",
               _sre.CATEGORY_NOT_DIGIT: r"\D", _sre.CATEGORY_WORD: r"\w", _sre.CATEGORY_NOT_WORD: r"\W"}

ALL_CHARS = "".join(map(chr, range(0x110000)))


def class_members(pattern: str) -> set[int]:
    """The code points a one-character class (alone, or in one group) matches, read off
    Python's own parse of ``pattern``: the literals and ranges of the class, its categories
    (``\\s``) as the engine matches them, complemented if negated. Equal to running the
    compiled pattern over every code point (checked below on sacremoses' own patterns),
    without the engine's cost on a class with tens of thousands of non-BMP literals (a
    linear scan per code point: ~70 µs each, ~80 s for the 1.1M code points)."""
    ((op, av),) = _sre_parse.parse(pattern)
    if op is _sre.SUBPATTERN:
        ((op, av),) = av[-1]
    items = [(op, av)] if op is _sre.LITERAL else av
    assert op in (_sre.IN, _sre.LITERAL), op
    members: set[int] = set()
    negate = False
    for kind, arg in items:
        if kind is _sre.NEGATE:
            negate = True
        elif kind is _sre.LITERAL:
            members.add(arg)
        elif kind is _sre.RANGE:
            members.update(range(arg[0], arg[1] + 1))
        elif kind is _sre.CATEGORY:
            members.update(map(ord, re.findall(_CATEGORIES[arg], ALL_CHARS)))
        else:
            raise AssertionError(f"unexpected {kind} in a sacremoses class")
    return set(range(len(ALL_CHARS))) - members if negate else members


def ours_members(name: str) -> set[int]:
    return set(map(ord, re.findall("[" + moses_data.CLASSES[name] + "]", ALL_CHARS)))


def edges(name: str) -> set[int]:
    """The code points at and next to each end of the ranges of one of our classes:
    where a class that is off by one would show."""
    ((op, av),) = _sre_parse.parse("[" + moses_data.CLASSES[name] + "]")
    out = set()
    for kind, arg in av:
        lo, hi = (arg, arg) if kind is _sre.LITERAL else arg if kind is _sre.RANGE else (None, None)
        if lo is not None:
            out |= {lo - 1, lo, hi, hi + 1}
    return {c for c in out if 0 <= c < len(ALL_CHARS)}


def test_classes_equal_sacremoses_on_all_code_points():
    """Each shipped class matches exactly the code points sacremoses' class matches (or holds)."""
    from sacremoses import MosesTokenizer as T

    alnum, alpha, isn = T.IsAlnum, T.IsAlpha, T.IsN
    expected = {
        "pad_not_alnum": r"[^{}\s\.'\`\,\-]".format(alnum),
        "not_n": "[^{}]".format(isn),
        "n": "[{}]".format(isn),
        "alpha": "[{}]".format(alpha),
        "not_alpha": "[^{}]".format(alpha),
        "not_alpha_n": "[^{}{}]".format(alpha, isn),
    }
    # The class texts really are the ones sacremoses' patterns use.
    assert T.PAD_NOT_ISALNUM[0].pattern == "(" + expected["pad_not_alnum"] + ")"
    assert T.COMMA_SEPARATE_1[0].pattern == "(" + expected["not_n"] + ")[,]"
    assert T.EN_SPECIFIC_2[0].pattern == "(" + expected["not_alpha_n"] + ")[']([" + alpha + "])"
    # These classes hold few non-BMP characters: the engine itself runs over every code point.
    for name, pattern in expected.items():
        theirs_found = re.findall(pattern, ALL_CHARS)
        assert re.findall("[" + moses_data.CLASSES[name] + "]", ALL_CHARS) == theirs_found, name
        # ... and agrees with reading the class off its parse, the way the CJK classes are read below
        assert class_members(pattern) == set(map(ord, theirs_found)), name
    assert class_members(T.PAD_NOT_ISALNUM[0].pattern) == set(map(ord, T.PAD_NOT_ISALNUM[0].findall(ALL_CHARS)))
    sets = {"alpha_set": set(alpha), "lower_set": set(T.IsLower)}
    for name, chars in sets.items():
        assert set(re.findall("[" + moses_data.CLASSES[name] + "]", ALL_CHARS)) == chars, name
    assert {k.split(":")[0] for k in moses_data.CLASSES} == {*expected, *sets}


@pytest.mark.parametrize("lang", ["zh", "ja", "ko", "cjk"])
def test_cjk_classes_equal_sacremoses_on_all_code_points(lang):
    """MosesTokenizer.__init__ widens IsAlnum/IsAlpha for these languages (Han, Hangul, kana:
    ~100k characters, most beyond the BMP); the shipped classes match the same code points."""
    tok = theirs_tok(lang)
    pattern = tok.PAD_NOT_ISALNUM[0]
    theirs_pad = class_members(pattern.pattern)
    assert ours_members(f"pad_not_alnum:{lang}") == theirs_pad
    # The engine's own verdict where an off-by-one would show: at and next to every range end.
    near = "".join(map(chr, sorted(edges(f"pad_not_alnum:{lang}") | edges("pad_not_alnum"))))
    assert set(map(ord, pattern.findall(near))) == {ord(c) for c in near if ord(c) in theirs_pad}
    assert ours_members(f"alpha_set:{lang}") == set(map(ord, tok.IsAlpha))


CONTEXTS = ("a{c}b", "{c}", "1{c}2", "x{c}.", "{c}'s", "l'{c}", "{c},", ",{c}", "{c}-{c}", "A.{c}.", "No. {c}")
CJK_CONTEXTS = ("a{c}b", "A.{c}.")  # the steps the widened classes change: padding, prefixes


@pytest.mark.parametrize("lang", ["fr", "en", "zh", "ja", "ko", "cjk"])
def test_tokenizer_equals_sacremoses_at_every_class_edge(lang):
    """End to end, character by character: each code point at or next to an end of a range
    of a shipped class, in contexts that reach every class-based step of the tokeniser
    (padding, commas, apostrophes the French and the English way, non-breaking prefixes),
    tokenises as with sacremoses. For the CJK languages, the ends of their widened classes
    (sacremoses is slow on those: ~70 µs per character and class)."""
    if lang in ("fr", "en"):
        points, contexts = set().union(*(edges(n) for n in moses_data.CLASSES if ":" not in n)), CONTEXTS
    else:
        points = (edges(f"pad_not_alnum:{lang}") ^ edges("pad_not_alnum")
                  | edges(f"alpha_set:{lang}") ^ edges("alpha_set"))
        contexts = CJK_CONTEXTS
    assert points
    ours_tok, theirs_tok_ = moses.MosesTokenizer(lang), theirs_tok(lang)
    for c in map(chr, sorted(points)):
        text = " ".join(ctx.format(c=c) for ctx in contexts)
        assert ours_tok.tokenize(text) == theirs_tok_.tokenize(text, escape=False), hex(ord(c))
