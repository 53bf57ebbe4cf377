"""scoi/core/trees.py: a parser's non-tree output made a tree, by the best tree of its arc
scores (checked against every tree of small sentences) or by the documented repair rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.analysis import Tree, made_tree
from scoi.core.polynomial import tree_terms
from scoi.core.trees import is_tree, max_spanning_tree, repair_heads
from tests.helpers.hypothesis import examples


def brute_force_best_tree_score(scores: np.ndarray) -> float:
    """The best total score over every head assignment of the n tokens that is a tree
    (0: the root, k: token k; no self-attachment): the slow reference."""
    n = scores.shape[0]
    best = -np.inf
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == d + 1 for d, h in enumerate(heads)):
            continue
        zero_based = [d if h == 0 else h - 1 for d, h in enumerate(heads)]
        if is_tree(zero_based):
            best = max(best, sum(scores[d, h] for d, h in enumerate(heads)))
    return best


def tree_score(scores: np.ndarray, heads: list[int]) -> float:
    return sum(scores[d, h] for d, h in enumerate(heads))


def as_zero_based(heads: list[int]) -> list[int]:
    """Heads in the 0 = root numbering, as the polynomial code reads them (a root is its own head)."""
    return [d if h == 0 else h - 1 for d, h in enumerate(heads)]


score_matrices = st.integers(1, 5).flatmap(
    lambda n: st.lists(st.integers(-20, 20), min_size=n * (n + 1), max_size=n * (n + 1)).map(
        lambda v: np.array(v, dtype=float).reshape(n, n + 1)))


@settings(max_examples=examples(300), deadline=None)
@given(scores=score_matrices)
def test_max_spanning_tree_scores_as_high_as_the_best_of_all_trees(scores):
    heads = max_spanning_tree(scores)
    assert len(heads) == scores.shape[0]
    assert all(h != d + 1 for d, h in enumerate(heads))
    assert is_tree(as_zero_based(heads))
    assert tree_score(scores, heads) == brute_force_best_tree_score(scores)


@settings(max_examples=examples(200), deadline=None)
@given(scores=score_matrices)
def test_max_spanning_tree_keeps_the_best_heads_when_they_already_form_a_tree(scores):
    n = scores.shape[0]
    masked = scores.copy()
    masked[np.arange(n), np.arange(1, n + 1)] = -np.inf
    best = masked.argmax(axis=1).tolist()
    unique = all((masked[d] == masked[d, best[d]]).sum() == 1 for d in range(n))
    if unique and is_tree(as_zero_based(best)):
        assert max_spanning_tree(scores) == best


def test_max_spanning_tree_breaks_a_two_token_cycle_at_its_cheapest_arc():
    # token 1 <-> token 2 are each other's best head; token 2 loses less by going to the root.
    scores = np.array([[1.0, -9.0, 10.0],
                       [5.0, 8.0, -9.0]])
    assert max_spanning_tree(scores) == [2, 0]


def test_max_spanning_tree_refuses_a_matrix_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"\(n, n \+ 1\)"):
        max_spanning_tree(np.zeros((3, 3)))


head_arrays = st.integers(0, 9).flatmap(lambda n: st.lists(st.integers(-3, n + 2), min_size=n, max_size=n))


@settings(max_examples=examples(500), deadline=None)
@given(heads=head_arrays)
def test_repair_heads_always_returns_a_tree_and_says_whether_it_changed_it(heads):
    repaired, changed = repair_heads(heads)
    assert is_tree(repaired)
    assert changed == (repaired != heads)
    assert changed == (not is_tree(heads))
    labels = ["dep"] * len(heads)
    assert sum(tree_terms(repaired, labels).values()) == len(heads) + 1


@settings(max_examples=examples(300), deadline=None)
@given(heads=head_arrays)
def test_repair_heads_leaves_a_tree_unchanged(heads):
    tree, _ = repair_heads(heads)
    assert repair_heads(tree) == (tree, False)


def test_repair_heads_attaches_a_cycle_at_its_first_token_to_the_first_root():
    # 0 -> 3 (root), cycle 1 -> 2 -> 1: token 1 goes under the root.
    assert repair_heads([3, 2, 1, 3]) == ([3, 3, 1, 3], True)
    # No root at all: the cycle's first token becomes the root.
    assert repair_heads([1, 2, 0]) == ([0, 2, 0], True)
    # Out-of-range heads go under the first root; roots written as -1 stay -1.
    assert repair_heads([-1, 7, -5]) == ([-1, 0, 0], True)
    # Several roots are a tree (joined under the virtual ROOT): unchanged.
    assert repair_heads([0, 0, 2, 2]) == ([0, 0, 2, 2], False)


def test_is_tree_finds_cycles_and_heads_out_of_range():
    assert is_tree([])
    assert is_tree([0, 0, 1])
    assert not is_tree([1, 0])
    assert not is_tree([0, 3])
    assert not is_tree([0, -2])


def test_a_parse_that_is_not_a_tree_is_made_one_and_marked_repaired():
    labels = ["nsubj", "ROOT", "obj", "punct"]
    fixed = made_tree(Tree([2, 1, 0, 1], labels))  # 0 <-> 2 cycle; 1 is the root
    assert fixed == Tree([1, 1, 0, 1], labels, True)
    assert tree_terms(fixed.heads, fixed.labels) == {"ROOT": 1, "ROOT^2": 1, "ROOT^2·nsubj": 1,
                                                    "ROOT^2·nsubj·obj": 1, "ROOT^2·punct": 1}
    good = Tree([1, 1, 1, 1], labels)
    assert made_tree(good) is good  # a tree is left as it is, not marked
    decoded = Tree([1, 1, 1, 1], labels, True)  # already made a tree by the parser (natasha's best tree)
    assert made_tree(decoded) is decoded
