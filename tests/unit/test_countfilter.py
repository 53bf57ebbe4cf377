"""The fuzzy lookup's count filter (scoi.core.countfilter, docs/method.md §8), pure: on
random sentences, every sentence whose match % against the query reaches the minimum is
kept (the proof's claim), whatever lists are skipped; the BM25 rescoring adds what the
block preselection adds."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.core.countfilter import bm25_rescore, count_filter, narrow, plan
from scoi.core.match import unrounded
from tests import reference as ref
from tests.helpers.hypothesis import examples

VOCAB = ["de", "la", ",", "le", "w1", "w2", "w3", "w4", "w5", "w6"]
sentence = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=12)


def posting_lists(docs: list[list[str]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per token, (sentence ids ascending, tf << 8 | dl): the index the lookup reads."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for sid, toks in enumerate(docs):
        for tok, tf in sorted(Counter(toks).items()):
            out.setdefault(tok, ([], []))
            out[tok][0].append(sid)
            out[tok][1].append(tf << 8 | len(toks))
    return {t: (np.array(s, np.int64), np.array(p, np.uint16)) for t, (s, p) in out.items()}


@settings(max_examples=examples(300), deadline=None)
@given(docs=st.lists(sentence, min_size=1, max_size=40), query=st.lists(st.sampled_from(VOCAB + ["inconnu"]),
                                                                         min_size=1, max_size=14),
       min_match=st.sampled_from([50.0, 60.0, 70.0, 71.43, 75.0, 90.0, 100.0]), share=st.floats(0.01, 1.0))
def test_every_sentence_reaching_the_minimum_is_kept(docs, query, min_match, share):
    cplan = plan(len(query), unrounded(min_match), share)
    lists = posting_lists(docs)
    counts = Counter(query)
    known = sorted((t for t in counts if t in lists), key=lambda t: (-len(lists[t][0]), t))
    skipped, read, unread = 0, [], []
    for t in known:  # the most frequent first, as lookup_lists leaves them unread
        if skipped + counts[t] <= cplan.skip:
            skipped += counts[t]
            unread.append(t)
        else:
            read.append((*lists[t], counts[t]))
    counted = count_filter(read, cplan, skipped)
    reaching = {sid for sid, toks in enumerate(docs) if ref.match_percent(query, toks) >= min_match}
    assert reaching <= set(counted.cand.tolist())
    assert skipped < cplan.shared or not reaching  # a qualifying sentence is in some list read
    for t in reversed(unread):  # the unread lists read after all, the rarest first: fewer kept, none lost
        skipped -= counts[t]
        narrower = narrow(counted, (*lists[t], counts[t]), cplan, skipped)
        assert reaching <= set(narrower.cand.tolist()) <= set(counted.cand.tolist())
        counted = narrower
    exact = {sid for sid, toks in enumerate(docs)
             if cplan.dl_min <= len(toks) <= cplan.dl_max
             and sum((Counter(toks) & counts).values()) >= cplan.need(0)[len(toks)]}
    assert set(counted.cand.tolist()) == exact  # every list read: exactly the count condition


def test_window_and_skip_follow_the_proof():
    p = plan(10, unrounded(70))
    assert (p.shared, p.dl_min, p.dl_max) == (7, 7, 14)  # 7 of 10 tokens in common; 7 to 14 tokens long
    assert p.skip == 7 - 2  # the lists read must still require ceil(0.2 * 7) = 2 tokens
    exact = plan(8, unrounded(100))
    assert (exact.shared, exact.dl_min, exact.dl_max) == (8, 8, 8)
    assert list(p.need(4)[[6, 7, 10, 11, 14, 15]]) == [1 << 30, 3, 3, 4, 6, 1 << 30]


def test_bm25_rescore_adds_the_preselections_products_in_its_order():
    factor = np.arange(1 << 16, dtype=np.float64) / 1e5
    terms = [("w1", 2.0), ("de", 0.5)]  # (token, idf x count), in (df, id) order
    got = bm25_rescore(terms, [["W1", "de", "de", "x"], ["y"]], factor)
    assert got.tolist() == [float(np.round(0.0 + factor[1 << 8 | 4] * 2.0 + factor[2 << 8 | 4] * 0.5, 9)), 0.0]
