"""Turning a parser's output into a tree (docs/method.md §2, docs/languages.md), with no parser involved.

Polynomial terms need every token to reach a root by following heads. Not every parser
guarantees it: natasha's syntax model picks each token's best-scoring head on its own,
and about one Russian news sentence in ten then holds a cycle. Two pure functions make a
tree of such output:

* :func:`max_spanning_tree` decodes the best tree from a parser's arc scores
  (Chu-Liu/Edmonds), for parsers that expose them (natasha);
* :func:`repair_heads` fixes a bare head array by a fixed rule, for the others.

Several roots are not an error here: :func:`scoi.core.polynomial.tree_terms` joins them
under its one virtual ROOT, as the released SCOI code does (spaCy gives one root per
sentence of a text; natasha sometimes gives two in one sentence).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def is_tree(heads: Sequence[int]) -> bool:
    """Whether every token reaches a root (its own head, or -1) by following in-range heads."""
    return not _bad_tokens(heads) and not _cycles(heads)


def repair_heads(heads: Sequence[int]) -> tuple[list[int], bool]:
    """A tree from ``heads`` (``heads[i]``: token i's head; i itself or -1: a root), and
    whether anything changed. The rule, deterministic and documented in docs/languages.md:

    1. the first root of the sentence (smallest index) is the *anchor*;
    2. a token whose head is out of range is attached to the anchor (with no anchor, it
       becomes a root and the anchor);
    3. each cycle, in order of its smallest index, is broken at that token: it is
       attached to the anchor (with no anchor, it becomes the root and the anchor).

    A tree is returned unchanged (roots written as -1 stay -1).
    """
    out = list(heads)
    anchor = next((i for i, h in enumerate(out) if h == i or h == -1), None)
    changed = False
    for i in _bad_tokens(out):
        if anchor is None:
            anchor = i
        out[i] = anchor
        changed = True
    for cycle in _cycles(out):
        first = min(cycle)
        if anchor is None:
            anchor = first
        out[first] = anchor
        changed = True
    return out, changed


def _bad_tokens(heads: Sequence[int]) -> list[int]:
    """Tokens whose head is neither a root mark (-1) nor a token index."""
    n = len(heads)
    return [i for i, h in enumerate(heads) if not -1 <= h < n]


def _cycles(heads: Sequence[int]) -> list[list[int]]:
    """The cycles of a head array, each listed once, in order of first visit (a self-head
    is a root, not a cycle; an out-of-range head ends a walk)."""
    n = len(heads)
    state = [0] * n  # 0: unseen, 1: on the current walk, 2: done
    found: list[list[int]] = []
    for start in range(n):
        walk: list[int] = []
        j = start
        while state[j] == 0:
            state[j] = 1
            walk.append(j)
            h = heads[j]
            if h == j or not 0 <= h < n:  # a root, or a head that leads nowhere
                break
            j = h
        else:
            if state[j] == 1:  # the walk came back to itself
                found.append(walk[walk.index(j):])
        for v in walk:
            state[v] = 2
    return found


def max_spanning_tree(scores: np.ndarray) -> list[int]:
    """The highest-scoring tree of a sentence of n tokens, by Chu-Liu/Edmonds.

    ``scores`` is (n, n + 1): ``scores[d, h]`` scores token ``d + 1`` attached to head
    ``h`` (0: the root, k: token k), the layout of a biaffine parser's arc scores. Returns
    each token's head in that numbering (0: the root). Self-attachments are never chosen;
    the root may get several children, so when the best head of every token already
    makes a tree, that tree is the answer (decoding changes only parses that are not trees).
    """
    n = scores.shape[0]
    if scores.shape != (n, n + 1):
        raise ValueError(f"arc scores must be (n, n + 1), got {scores.shape}")
    full = np.full((n + 1, n + 1), -np.inf)
    full[1:, :] = np.asarray(scores, dtype=float)
    np.fill_diagonal(full, -np.inf)
    return [int(h) for h in _chu_liu_edmonds(full)[1:]]


def _chu_liu_edmonds(s: np.ndarray) -> np.ndarray:
    """Heads of the best arborescence rooted at node 0 of ``s`` (``s[d, h]``: arc h -> d;
    -inf: no such arc). Contract a cycle of best heads, solve, expand."""
    m = s.shape[0]
    heads = s.argmax(axis=1)
    heads[0] = 0
    cycle = next(iter(_cycles(heads.tolist())), None)
    if cycle is None:
        return heads
    in_cycle = np.zeros(m, dtype=bool)
    in_cycle[cycle] = True
    rest = np.flatnonzero(~in_cycle)  # node 0 first: the root is never in a cycle
    cyc = np.array(cycle)
    c = len(rest)  # the contracted cycle's node in the smaller graph
    small = np.full((c + 1, c + 1), -np.inf)
    small[:c, :c] = s[np.ix_(rest, rest)]
    # Entering the cycle at v from u replaces v's cycle arc: gain s[v, u] - s[v, heads[v]].
    enter = s[np.ix_(cyc, rest)] - s[cyc, heads[cyc]][:, None]
    small[c, :c] = enter.max(axis=0)
    best_in = enter.argmax(axis=0)
    leave = s[np.ix_(rest, cyc)]
    small[:c, c] = leave.max(axis=1)
    best_out = leave.argmax(axis=1)
    small[0, :] = -np.inf
    sub = _chu_liu_edmonds(small)
    out = heads.copy()
    for i in range(1, c):
        h = sub[i]
        out[rest[i]] = rest[h] if h != c else cyc[best_out[i]]
    entry_from = sub[c]
    out[cyc[best_in[entry_from]]] = rest[entry_from]
    return out
