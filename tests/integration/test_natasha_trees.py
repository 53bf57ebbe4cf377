"""natasha's trees as scoi builds them (scoi.analysis.NatashaTrees runs slovnet's model step
by step to keep its arc scores): identical to natasha's own parse wherever that parse is a
tree, the best tree of the scores where it is not (lines 17 and 29 of the development
data's ru-news-sample; that part is skipped where the data is absent)."""

from __future__ import annotations

import pytest

from benchmarks.shared_data import DATA
from scoi.analysis import analyzer, load_trees
from scoi.core.trees import is_tree
from scoi.parsers import NATASHA
from tests.integration.test_parsers import RU_EN

NEWS = DATA / "ru-news-sample" / "news.ru"


def tokenised(texts: list[str]) -> list[list[str]]:
    """razdel's tokens of each sentence of ``texts``, as NatashaTrees splits them."""
    from natasha import Doc

    trees = load_trees(NATASHA)
    out = []
    for text in texts:
        doc = Doc(text)
        doc.segment(trees.segmenter)
        out += [[t.text for t in s.tokens] for s in doc.sents]
    return out


def natashas_own(sents: list[list[str]]) -> list[tuple[list[int], list[str]]]:
    """natasha's parse of each sentence: heads 1-based (0: the root), relations."""
    return [([int(t.head_id) for t in m.tokens], [t.rel for t in m.tokens])
            for m in load_trees(NATASHA).syntax.map(sents)]


def test_natasha_trees_equal_natashas_own_parse_when_it_is_a_tree():
    sents = tokenised([ru for ru, _ in RU_EN] + ["Мама мыла раму. Кот спит на окне, а собака во дворе."])
    ours = list(load_trees(NATASHA).sentences(sents))
    assert [(heads, rels) for heads, rels, _ in ours] == natashas_own(sents)
    assert not any(decoded for _, _, decoded in ours)


def test_natasha_parses_with_cycles_become_the_best_tree_of_their_scores():
    if not NEWS.is_file():
        pytest.skip(f"{NEWS} is absent")
    lines = NEWS.read_text(encoding="utf-8").splitlines()
    sents = tokenised(lines)
    assert len(sents) == len(lines) == 30  # one sentence a line
    ours = list(load_trees(NATASHA).sentences(sents))
    theirs = natashas_own(sents)
    decoded = [i + 1 for i, (_, _, d) in enumerate(ours) if d]
    assert decoded == [17, 29]
    for i, ((heads, rels, d), (own_heads, own_rels)) in enumerate(zip(ours, theirs)):
        as_tree = [j if h == 0 else h - 1 for j, h in enumerate(heads)]
        assert is_tree(as_tree)
        if d:
            assert not is_tree([j if h == 0 else h - 1 for j, h in enumerate(own_heads)])
            assert sum(a != b for a, b in zip(heads, own_heads)) == 1  # one arc moved here
        else:
            assert (heads, rels) == (own_heads, own_rels)
    analyses = analyzer("ru", NATASHA).analyze(lines)
    assert [i + 1 for i, a in enumerate(analyses) if a.repaired] == [17, 29]
    assert all(sum(a.terms.values()) == a.tree_tokens + 1 for a in analyses)
