"""scoi.moses reproduces sacremoses 0.2.0 (normaliser + tokeniser, the options scoi uses)."""

from __future__ import annotations

import gzip
import re
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi import moses, moses_data

LANGS = ("fr", "en", "de")
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
ALL_CHARS = "".join(map(chr, range(0x110000)))


@lru_cache(maxsize=None)
def ours(lang):
    return moses.PunctNormalizer(lang), moses.MosesTokenizer(lang)


@lru_cache(maxsize=None)
def theirs(lang):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)


def run(pair, text):
    norm, tok = pair
    normalized = norm.normalize(text)
    return normalized, tok.tokenize(normalized, escape=False)


def test_generated_from_the_installed_sacremoses():
    import importlib.metadata

    assert moses_data.SACREMOSES_VERSION == importlib.metadata.version("sacremoses") == "0.2.0"


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
    for name, pattern in expected.items():
        assert re.findall("[" + moses_data.CLASSES[name] + "]", ALL_CHARS) == re.findall(pattern, ALL_CHARS), name
    sets = {"alpha_set": set(alpha), "lower_set": set(T.IsLower)}
    for name, chars in sets.items():
        assert set(re.findall("[" + moses_data.CLASSES[name] + "]", ALL_CHARS)) == chars, name
    for lang in ("zh", "ja", "ko", "cjk"):  # MosesTokenizer.__init__ widens IsAlnum/IsAlpha for these
        tok = T(lang=lang)
        assert (re.findall("(" + "[" + moses_data.CLASSES[f"pad_not_alnum:{lang}"] + "])", ALL_CHARS)
                == tok.PAD_NOT_ISALNUM[0].findall(ALL_CHARS)), lang
        assert set(re.findall("[" + moses_data.CLASSES[f"alpha_set:{lang}"] + "]", ALL_CHARS)) == set(tok.IsAlpha)
    assert {k.split(":")[0] for k in moses_data.CLASSES} == {*expected, *sets}


def test_prefixes_and_substitutions_equal_sacremoses():
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    for lang in ("fr", "en", "de", "es", "it", "cs", "cz", "ru", "nl", "pt", "zh", "xx", "french"):
        assert moses.normalizer_substitutions(lang) == MosesPunctNormalizer(lang=lang).substitutions, lang
        t, o = MosesTokenizer(lang=lang), moses.MosesTokenizer(lang)
        assert o.NONBREAKING_PREFIXES == t.NONBREAKING_PREFIXES, lang
        assert o.NUMERIC_ONLY_PREFIXES == t.NUMERIC_ONLY_PREFIXES, lang


PIECES = ["«", "»", "\u00a0", "’", "‘", "“", "”", "„", '"', "'", "`", "``", "''", ",", ".", "..", "...", "…",
          " ", "  ", "\t", "–", "—", "-", "--", "/", "%", "$", "€", "£", "©", "°", "§", "1", "12", "2,5", "5,300",
          "l'", "L'", "n't", "'s", "'ll", "M.", "Mr.", "No.", "No", "art.", "p.", "etc.", "U.S.", "a.b.", "z.B.",
          "(", ")", "[", "]", "{", "}", "<", ">", "?", "!", ";", ":", "@", "#", "&", "|", "a", "É", "é", "x", "le",
          "Le", "word", "e\u0301", "\u0301", "\u094d", "٣", "²", "½", "Ⅻ", "ß", "ǅ", "ª", "中", "ー", "\u200b",
          "\x00", "\x1f", "\u2028", "\u3000", "DOTMULTI", "THISISPROTECTED000", "cannot", "gonna"]

TEXT = (st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
        | st.lists(st.sampled_from(PIECES) | st.text(alphabet="aZé.1'’ -,", min_size=1, max_size=6),
                   max_size=20).map("".join)
        | st.lists(st.sampled_from(PIECES), max_size=12).map(" ".join))


@settings(max_examples=600, deadline=None)
@given(text=TEXT)
def test_equals_sacremoses_on_arbitrary_text(text):
    for lang in LANGS:
        assert run(ours(lang), text) == run(theirs(lang), text), lang


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_tokenizer_alone_equals_sacremoses(text):
    """Without the normaliser first (raw quotes, NBSP, control characters reach the tokeniser)."""
    for lang in (*LANGS, "it", "ru", "zh"):
        assert moses.MosesTokenizer(lang).tokenize(text) == theirs_tok(lang).tokenize(text, escape=False), lang


@lru_cache(maxsize=None)
def theirs_tok(lang):
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)


def shared_lines(lang):
    for path in sorted(SHARED.glob(f"*/*.{lang}")) + sorted(SHARED.glob(f"*/*.{lang}.gz")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            yield from (line.rstrip("\n") for line in f)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_equals_sacremoses_on_shared_data(lang):
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent")
    n = 0
    for line in shared_lines(lang):
        assert run(ours(lang), line) == run(theirs(lang), line), line
        n += 1
    assert n > 10_000
