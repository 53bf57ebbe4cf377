"""scoi.text.moses reproduces sacremoses 0.2.0 (normaliser + tokeniser, the options scoi uses):
the shipped data comes from the installed sacremoses, prefixes and substitutions are the
same, and both tokenise arbitrary text alike. The sweeps over every code point are in
tests/integration/test_moses_code_points.py; real corpora in
tests/integration/test_moses_shared_data.py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.text import moses, moses_data
from tests.helpers.hypothesis import examples
from tests.helpers.moses import ours, run, theirs, theirs_tok

LANGS = ("fr", "en", "de")


def test_generated_from_the_installed_sacremoses():
    import importlib.metadata

    assert moses_data.SACREMOSES_VERSION == importlib.metadata.version("sacremoses") == "0.2.0"


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


@settings(max_examples=examples(600), deadline=None)
@given(text=TEXT)
def test_equals_sacremoses_on_arbitrary_text(text):
    for lang in LANGS:
        assert run(ours(lang), text) == run(theirs(lang), text), lang


@settings(max_examples=examples(200), deadline=None)
@given(text=TEXT)
def test_tokenizer_alone_equals_sacremoses(text):
    """Without the normaliser first (raw quotes, NBSP, control characters reach the tokeniser)."""
    for lang in (*LANGS, "it", "ru", "zh"):
        assert moses.MosesTokenizer(lang).tokenize(text) == theirs_tok(lang).tokenize(text, escape=False), lang
