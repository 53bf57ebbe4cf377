"""Which example covers which part of a sentence: the coverage page's data.

For a selection it tells, for each word (Moses token) of the sentence, the first pick
whose source contains it, and for each tree term (the labels on the path from the root
to a token), the pick with the most similar term, c(s, t) = 1 / (1 + |s - t|_1), as the
syntactic coverage measures it; the words and terms that no pick covers and whether the
BM25 pool holds them at all; and the sentence's dependency tree drawn as SVG by displaCy
(offline), its words and arcs in an order the page can colour.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scoi.core.coverage import distance_similarity, is_word
from scoi.core.criteria import value_of
from scoi.core.polynomial import ROOT, parse_key, term_key

if TYPE_CHECKING:
    from scoi.selection.selector import SelectionResult, Selector
    from scoi.selection.types import Candidate


def term_similarity(a: dict[str, int], b: dict[str, int]) -> float:
    """c(s, t) of two terms given as label -> exponent (scoi.core.coverage.distance_similarity
    of their L1 distance)."""
    return float(distance_similarity(sum(abs(a.get(k, 0) - b.get(k, 0)) for k in a.keys() | b.keys())))


def explain(sel: Selector, result: SelectionResult, *, tree: bool = True) -> dict[str, Any]:
    """The page's coverage view of ``result`` (``sel`` must be the selector that made it;
    the caller holds its lock)."""
    rows = {c.pair_id: c for c in result.candidates}
    missing = [p.pair_id for p in result.selected if p.pair_id not in rows]
    if missing:  # random fills are outside the pool
        rows.update({r.pair_id: r for r in sel.fetch([(i, 0.0) for i in missing])})
    picks: list[Candidate | None] = [rows.get(p.pair_id) for p in result.selected]
    pick_tokens = [set(r.tokens) if r else set() for r in picks]
    pool_tokens = set().union(*(c.tokens for c in result.candidates)) if result.candidates else set()
    words = []
    for tok in result.query_tokens:
        by = next((i for i, toks in enumerate(pick_tokens) if tok in toks), None)
        words.append({"text": tok, "word": is_word(tok), "covered_by": by, "in_pool": tok in pool_tokens})
    pick_terms = [[(k, parse_key(k)) for k in (r.term_keys if r else [])] for r in picks]
    pool_terms = {k for c in result.candidates for k in c.term_keys}
    terms: dict[str, dict[str, Any]] = {}
    for key, mult in result.query_terms.items():
        q = parse_key(key)
        best, best_sim, best_term = None, 0.0, None
        for i, pts in enumerate(pick_terms):
            for k, t in pts:
                s = term_similarity(q, t)
                if s > best_sim + 1e-12:
                    best, best_sim, best_term = i, s, k
        terms[key] = {"key": key, "mult": mult, "covered_by": best, "similarity": round(best_sim, 4),
                      "best_term": best_term, "exact": best_sim == 1.0, "in_pool": key in pool_terms}
    out: dict[str, Any] = {
        "picks": [{"position": i, "pair_id": p.pair_id, "criterion": p.criterion, "coverage": p.coverage,
                   "value": value_of(p.criterion, p.coverage),
                   "src": p.src, "tgt": p.tgt,
                   "words": sorted({w["text"] for w in words if w["word"] and w["covered_by"] == i}),
                   "terms": sorted(k for k, t in terms.items() if t["covered_by"] == i and t["exact"])}
                  for i, p in enumerate(result.selected)],
        "words": words,
        "terms": sorted(terms.values(), key=lambda t: (-t["similarity"], t["key"])),
        "uncovered_words": sorted({w["text"] for w in words if w["word"] and w["covered_by"] is None}),
        "missing_from_pool": {
            "words": sorted({w["text"] for w in words if w["word"] and not w["in_pool"]}),
            "terms": sorted(k for k, t in terms.items() if not t["in_pool"]),
        },
        "pool": [{"rank": i, "pair_id": c.pair_id, "score": c.score, "src": c.src, "tgt": c.tgt,
                  "picked": c.pair_id in {p.pair_id for p in result.selected}}
                 for i, c in enumerate(result.candidates, 1)],
    }
    if tree:
        out["tree"] = draw_tree(sel, result.query, terms, pick_tokens)
    return out


def token_terms(heads: list[int], labels: list[str]) -> list[str]:
    """Each token's tree term (the labels from the virtual root down to it), as stored keys."""
    keys = []
    for i in range(len(heads)):
        path, j, seen = Counter({ROOT: 1}), i, 0
        while True:
            path[labels[j]] += 1
            h = heads[j]
            seen += 1
            if h == j or h < 0 or seen > len(heads):
                break
            j = h
        keys.append(term_key(path))
    return keys


# The page draws words in a bold 19 px font (app.css): about 13.5 px per character at most.
WORD_PX_PER_CHAR = 13.5
MIN_WORD_DISTANCE = 100


def word_distance(words: Iterable[str]) -> int:
    """Pixels between two words' centres in the drawn tree: room for the longest word and a
    gap, so long words never overlap (displaCy spaces words evenly whatever their length)."""
    longest = max((len(w) for w in words), default=0)
    return max(MIN_WORD_DISTANCE, math.ceil(longest * WORD_PX_PER_CHAR) + 20)


def draw_tree(sel: Selector, text: str, terms: dict[str, dict[str, Any]], pick_tokens: list[set[str]]
              ) -> dict[str, Any]:
    """The dependency tree as displaCy SVG, with per token: its term, the pick covering the
    term, the pick whose source holds the word; arcs listed in drawing order (``arcs[i]``
    is the token the i-th arc points to), so the page colours them without parsing SVG."""
    from spacy import displacy

    doc = sel.analyzer.nlp(text.strip()) if text.strip() else []
    heads = [t.head.i for t in doc]
    labels = [t.dep_ or "dep" for t in doc]
    keys = token_terms(heads, labels)
    tokens, arcs, drawn = [], [], []
    for t, key in zip(doc, keys):
        term = terms.get(key, {})
        tokens.append({"text": t.text, "pos": t.pos_, "dep": t.dep_, "head": t.head.i, "term": key,
                       "term_covered_by": term.get("covered_by"), "term_similarity": term.get("similarity"),
                       "word_covered_by": next((i for i, toks in enumerate(pick_tokens) if t.text in toks), None)})
        if t.head.i != t.i:
            start, end = sorted((t.i, t.head.i))
            drawn.append({"start": start, "end": end, "label": t.dep_, "dir": "left" if t.i < t.head.i else "right"})
            arcs.append(t.i)
    svg = ""
    if tokens:
        svg = displacy.render({"words": [{"text": t["text"], "tag": t["pos"]} for t in tokens], "arcs": drawn},
                              style="dep", manual=True, jupyter=False,
                              options={"compact": True, "distance": word_distance(t["text"] for t in tokens),
                                       "offset_x": 40, "bg": "transparent",
                                       "color": "currentColor", "font": "inherit", "arrow_spacing": 14})
    return {"svg": svg, "tokens": tokens, "arcs": arcs}
