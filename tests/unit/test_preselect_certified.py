"""Certified BM25 preselection (migration 0008, docs/preselection.md "Certified top n"):
the token bounds the ingest writer computes for a batch, checked against their
definitions. The preselection itself: tests/integration/test_preselect_certified.py."""

from __future__ import annotations

from collections import Counter

import pytest


@pytest.mark.parametrize("lists", [[[1, 2, 3]], [[3, 2], [5, 5, 5, 1]]])
def test_token_bounds_parameters(lists):
    """The writer's batch extremes: min dl over any tf, tf = 2 and tf >= 3, max tf, tf >= 2 count."""
    from ingest.writer import token_bounds

    by_length = [(len(x), sorted(set(x))) for x in lists]
    repeated = [(t, c, len(x)) for x in lists for t, c in Counter(x).items() if c > 1]
    tids = sorted({t for x in lists for t in x})
    got = token_bounds(tids, by_length, repeated)
    for i, t in enumerate(tids):
        holding = [(Counter(x)[t], len(x)) for x in lists if t in x]
        assert int(got["min_dl"][1:-1].split(",")[i]) == min(dl for _, dl in holding)
        assert int(got["max_tf"][1:-1].split(",")[i]) == max(tf for tf, _ in holding)
        assert int(got["n_rep"][1:-1].split(",")[i]) == sum(tf >= 2 for tf, _ in holding)
        for key, keep in (("min_dl2", lambda tf: tf == 2), ("min_dl3", lambda tf: tf >= 3)):
            dls = [dl for tf, dl in holding if keep(tf)]
            assert got[key][1:-1].split(",")[i] == (str(min(dls)) if dls else "NULL")
