"""docs/method.md §2 on hand-parsed trees: every node gives one term, the product of the labels on
its path from the virtual ROOT; n tokens give n + 1 terms, repeats kept."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.core.polynomial import ROOT, parse_key, term_key, tree_terms
from tests.helpers.hypothesis import examples


def multiset(*terms: dict[str, int]) -> Counter:
    """Expected terms written as exponent dicts -> Counter of canonical keys."""
    return Counter(term_key(t) for t in terms)


CATS_SLEEP = (  # Cats(nsubj) <- sleep(ROOT) -> .(punct)
    ["Cats", "sleep", "."], [1, 1, 1], ["nsubj", "ROOT", "punct"],
    multiset({ROOT: 1}, {ROOT: 2}, {ROOT: 2, "nsubj": 1}, {ROOT: 2, "punct": 1}),
)

# Two modifiers of one noun: the same path twice, so one term with multiplicity 2.
BIG_RED_DOGS = (
    ["Big", "red", "dogs", "bark", "."], [2, 2, 3, 3, 3], ["amod", "amod", "nsubj", "ROOT", "punct"],
    multiset({ROOT: 1}, {ROOT: 2}, {ROOT: 2, "nsubj": 1},
             {ROOT: 2, "nsubj": 1, "amod": 1}, {ROOT: 2, "nsubj": 1, "amod": 1},
             {ROOT: 2, "punct": 1}),
)

# A label twice on one path (poss of a poss): exponent 2 for a non-ROOT label.
JOHNS_FRIENDS_CAR = (
    ["John", "'s", "friend", "'s", "car", "broke", "."],
    [2, 0, 4, 2, 5, 5, 5],
    ["poss", "case", "poss", "case", "nsubj", "ROOT", "punct"],
    multiset({ROOT: 1}, {ROOT: 2},                                   # virtual root, broke
             {ROOT: 2, "nsubj": 1},                                  # car
             {ROOT: 2, "nsubj": 1, "poss": 1},                       # friend
             {ROOT: 2, "nsubj": 1, "poss": 1, "case": 1},            # 's (of friend)
             {ROOT: 2, "nsubj": 1, "poss": 2},                       # John
             {ROOT: 2, "nsubj": 1, "poss": 2, "case": 1},            # 's (of John)
             {ROOT: 2, "punct": 1}),                                 # .
)

# Two sentences in one parse: two roots, joined under the one virtual ROOT.
TWO_ROOTS = (
    ["Hello", ".", "Cats", "sleep", "."], [0, 0, 3, 3, 3], ["ROOT", "punct", "nsubj", "ROOT", "punct"],
    multiset({ROOT: 1}, {ROOT: 2}, {ROOT: 2}, {ROOT: 2, "punct": 1}, {ROOT: 2, "punct": 1},
             {ROOT: 2, "nsubj": 1}),
)

TREES = {"cats_sleep": CATS_SLEEP, "big_red_dogs": BIG_RED_DOGS, "johns_friends_car": JOHNS_FRIENDS_CAR,
         "two_roots": TWO_ROOTS}


@pytest.mark.parametrize("name", TREES)
def test_hand_parsed_trees(name):
    words, heads, labels, expected = TREES[name]
    terms = tree_terms(heads, labels)
    assert terms == expected
    assert sum(terms.values()) == len(words) + 1


def test_spec_worked_example_keys_are_readable():
    _, heads, labels, _ = CATS_SLEEP
    assert tree_terms(heads, labels) == Counter({"ROOT": 1, "ROOT^2": 1, "ROOT^2·nsubj": 1, "ROOT^2·punct": 1})
    assert parse_key("ROOT^2·nsubj·poss^2") == {"ROOT": 2, "nsubj": 1, "poss": 2}


def test_repeats_and_root_conventions():
    assert BIG_RED_DOGS[3][term_key({ROOT: 2, "nsubj": 1, "amod": 1})] == 2
    assert TWO_ROOTS[3]["ROOT^2"] == 2
    # A root may also be written with head -1 instead of its own index.
    words, heads, labels, expected = TWO_ROOTS
    assert tree_terms([-1, 0, 3, -1, 3], labels) == expected


def test_cycle_is_rejected():
    with pytest.raises(ValueError, match="cycle"):
        tree_terms([1, 0], ["nsubj", "obj"])
    with pytest.raises(ValueError):
        tree_terms([0, 0], ["ROOT"])


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
       | st.lists(st.sampled_from(["«", "»", "\u00a0", "’", "‘", "“", "”", "„", '"', "'", ",", ".", " ", "  ", "–",
                                   "—", "…", "%", "1", "2,5", "l'", "M.", "(", ")", "\t", "a", "É"]),
                  max_size=20).map("".join))
def test_precompiled_punct_normalizer_equals_sacremoses(text):
    """ingest's normaliser is sacremoses' own substitutions, compiled once: same output."""
    from sacremoses import MosesPunctNormalizer

    from scoi.analysis import PunctNormalizer

    for lang in ("fr", "en", "de"):
        assert PunctNormalizer(lang).normalize(text) == MosesPunctNormalizer(lang=lang).normalize(text)


@settings(max_examples=examples(300), deadline=None)
@given(words=st.lists(st.sampled_from(["M.", "Mr.", "No.", "art.", "p.", "etc.", "U.S.", "a.b.", "1.", "5", "12",
                                       "word.", "Word.", "é.", "É", "x", "le", "Le", ".", "..", "...", "l'", "'s",
                                       "(", ")", ",", "«", "»", "?", "n°", "Nr.", "S.", "z.B.", "a.m.", "A"])
                      | st.text(alphabet="aZé.1 ", min_size=1, max_size=6), max_size=15))
def test_moses_tokenizer_equals_sacremoses(words):
    """ingest's Moses tokeniser (cheaper non-breaking-prefix step) gives sacremoses' tokens."""
    from sacremoses import MosesTokenizer

    from scoi.analysis import moses_tokenizer

    text = " ".join(words)
    for lang in ("fr", "en", "de"):
        assert moses_tokenizer(lang).tokenize(text, escape=False) == MosesTokenizer(lang=lang).tokenize(text, escape=False)


@given(batches=st.lists(st.lists(st.dictionaries(st.sampled_from([ROOT, "nsubj", "obj", "det", "amod", "case", "x:y"]),
                                                 st.integers(1, 4), min_size=1, max_size=4), max_size=12),
                        min_size=1, max_size=5))
@settings(max_examples=examples(150), deadline=None)
def test_term_table_rows_are_the_label_space_vectors(batches: list[list[dict[str, int]]]) -> None:
    """The selector's term table, grown batch by batch (new keys and new labels scattered
    in at once), holds for every key the exponent vector LabelSpace builds for it."""
    from scoi.core.polynomial import LabelSpace, TermTable

    table = TermTable(LabelSpace(["nsubj"]))
    reference = LabelSpace(["nsubj"])
    seen: list[str] = []
    for batch in batches:
        keys = [term_key(exps) for exps in batch]
        ids = table.ids_of(keys)
        seen += keys
        matrix = table.matrix
        assert [table._keys[i] for i in ids] == keys
        expected = reference.matrix(seen, matrix.shape[1])
        assert (matrix[table.ids_of(seen)] == expected).all()
        assert table.norms.tolist() == matrix.sum(axis=1).tolist()
    assert list(table.labels.index) == list(reference.index)
