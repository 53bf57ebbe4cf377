"""R-BM25 ``ctq`` reads sentences as CTQ Scorer's released code does: Indic NLP's trivial
tokenizer, then without the tokens ``.``, ``,`` and ``?``. Checked against the library
itself on every ASCII character, digit patterns and random text."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st
from indicnlp.tokenize.indic_tokenize import trivial_tokenize as indic_trivial_tokenize

from scoi.core.rbm25 import RBM25_VARIANTS, ctq_tokens, trivial_tokenize
from tests.helpers.hypothesis import examples

DIGIT_PATTERNS = ["1.5", "2,5", "10:30", "1/2/2020", "3.14.15", "1.5 km", "It costs 1.5 dollars", "a 2,5 b 3,5",
                  "1 , 5", "x 1 . 5 . 7 y", "1.5.", "(1.5)", "1.5,2.5", "12 345,67", "v1.2", "1..5", "1.a"]


def test_every_ascii_character_and_digit_pattern():
    texts = list(DIGIT_PATTERNS)
    for c in string.printable:
        texts += [c, f"a{c}b", f"1{c}5", f"x 1{c}5 y", f"{c}{c}word{c}", f"word {c} 2"]
    for t in texts:
        assert trivial_tokenize(t) == indic_trivial_tokenize(t, "en"), t
        assert trivial_tokenize(t) == indic_trivial_tokenize(t, "fr"), t


@settings(max_examples=examples(2000))
@given(st.text(alphabet=string.printable + "0123456789.,:/ \u0964éß€", max_size=40))
def test_random_text(text):
    assert trivial_tokenize(text) == indic_trivial_tokenize(text, "en")


def test_ctq_tokens_as_published():
    assert ctq_tokens("It costs 1.5 dollars, or 2,5 euros? Yes: l'homme (au) \"chapeau\".") == [
        "It", "costs", "1.5", "dollars", "or", "2,5", "euros", "Yes", ":", "l", "'", "homme", "(", "au", ")",
        '"', "chapeau", '"']
    assert ctq_tokens("1.5 km") == ["1", "5", "km"]  # as released: a number run at the very start stays split


def test_variants():
    assert RBM25_VARIANTS == ("moses", "ctq", "agrawal")
