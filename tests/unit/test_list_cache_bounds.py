"""The list cache's bookkeeping (scoi/selection/listcache.py), without a database: the bound
on postings, least recently used eviction, the tf factors kept per corpus statistics, and
entries read-only with absolute sentence ids."""

from __future__ import annotations

import threading

import numpy as np

from scoi.selection.blockscore import tf_factors
from scoi.selection.listcache import Deferred, ListCache, make_entry

SERVER = ("host", 5432, "db", 1, "start")


def entry(token: str, n: int, version: int = 1, first: int = 0):
    ids = np.arange(first, first + n, dtype=np.int64)
    packed = np.full(n, 1 << 8 | 7, dtype=np.intp)
    return make_entry("fr", token, hash(token) % 10**6, version, n, [ids], [packed])


def test_the_least_recently_used_lists_go_first_and_the_bound_holds() -> None:
    cache = ListCache(100)
    for tok in ("a", "b", "c"):
        assert cache.put(SERVER, entry(tok, 30))
    cache.held(SERVER, "fr", ["a"])  # "a" used: "b" is now the oldest
    assert cache.put(SERVER, entry("d", 30))
    assert sorted(t for _, _, t in cache.lists) == ["a", "c", "d"] and cache.postings == 90
    assert cache.put(SERVER, entry("a", 40, version=2))  # a new version replaces the old one
    assert cache.postings <= 100 and cache.lists[(SERVER, "fr", "a")].version == 2
    assert not cache.put(SERVER, entry("huge", 101)) and (SERVER, "fr", "huge") not in cache.lists
    assert cache.postings == sum(len(e.ids) for e in cache.lists.values()) <= 100


def test_lists_of_other_servers_are_not_offered() -> None:
    cache = ListCache(100)
    cache.put(SERVER, entry("a", 10))
    assert cache.held(("other", 5432, "db", 1, "start"), "fr", ["a"]) == {}
    assert cache.held(SERVER, "de", ["a"]) == {}
    assert list(cache.held(SERVER, "fr", ["a", "b"]).values())[0].token == "a"


def test_tf_factors_are_recomputed_when_the_statistics_change() -> None:
    e = entry("a", 5)
    one, _ = e.factors(0.375, 0.01, tf_factors(0.375, 0.01))
    assert one is e.factors(0.375, 0.01, tf_factors(0.375, 0.01))[0]  # kept
    two, largest = e.factors(0.375, 0.02, tf_factors(0.375, 0.02))
    assert two is not one and np.array_equal(two, tf_factors(0.375, 0.02)[e.packed.astype(np.intp)])
    assert not two.flags.writeable and largest == two.max()


def test_entries_are_read_only_and_hold_absolute_ids() -> None:
    e = make_entry("fr", "a", 7, 3, 5, [np.arange(2**31 - 2, 2**31 + 1), np.arange(2**32, 2**32 + 2)],
                   [np.full(3, 0x107), np.full(2, 0x205)])
    assert e.ids.dtype == np.intp and e.ids.tolist() == [2**31 - 2, 2**31 - 1, 2**31, 2**32, 2**32 + 1]
    assert e.packed.dtype == np.uint16 and e.packed.tolist() == [0x107] * 3 + [0x205] * 2
    assert not e.ids.flags.writeable and not e.packed.flags.writeable


def test_concurrent_puts_keep_the_count_right() -> None:
    cache = ListCache(1_000)

    def run(k: int) -> None:
        for i in range(200):
            cache.put(SERVER, entry(f"t{(k * 7 + i) % 37}", 10 + i % 50))
            cache.held(SERVER, "fr", [f"t{i % 37}"])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.postings == sum(len(e.ids) for e in cache.lists.values()) <= 1_000


def sums_of(seed: int, n_ids: int) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, float]], np.ndarray]:
    """Sums of rare lists (300 sentences up to 8), two common lists (ids, tf factors,
    weight) adding little, and every sentence's whole sum (rare first, then the common
    lists in order: the order the engine adds them in)."""
    rng = np.random.default_rng(seed)
    rare = np.zeros(n_ids)
    rare[rng.choice(n_ids, 300, replace=False)] = rng.random(300) * 8
    common = [(np.sort(rng.choice(n_ids, size, replace=False)), rng.random(size) * 0.9, w)
              for size, w in ((15_000, 0.2), (19_000, 0.05))]
    whole = rare.copy()
    for ids, f, w in common:
        np.add.at(whole, ids, f * w)
    return rare, common, whole


def test_deferred_lists_resolved_then_completed_add_the_same_floats() -> None:
    """The commonest lists added to the sentences near the best first, then everywhere
    else, give every sentence the same sum, bit for bit, as adding them at once; and no
    sentence left out of the first step can beat the bound returned."""
    n_ids, k = 20_000, 40
    rare, common, whole = sums_of(7, n_ids)
    d = Deferred()
    for ids, f, w in common:
        d.add(ids, f, float(f.max()), w)
    buf = rare.copy()
    t = d.resolve(buf, 0, 0, k)
    assert t is not None and d.done is not None and len(d.done) < n_ids // 32
    assert np.array_equal(buf[d.done], whole[d.done])
    best = np.argsort(-whole, kind="stable")[:k]
    assert set(best) <= set(d.done.tolist()) and (np.delete(whole, d.done) < t).all()
    d.complete(buf, 0)
    assert buf.tobytes() == whole.tobytes()


def test_a_floor_from_other_ranges_resolves_fewer_sentences_and_still_bounds_the_rest() -> None:
    """Read by range, T may be a score k sentences of earlier ranges reach (``floor``),
    higher than this range's own k-th best: only the sentences that can still reach it
    get the waiting lists (fewer than k of them, maybe none), every other one scores
    below the T returned, and completing adds the same floats as adding everything."""
    n_ids, k = 20_000, 40
    rare, common, whole = sums_of(11, n_ids)
    own_kth = float(np.sort(rare)[::-1][k - 1])
    for floor in (0.0, own_kth + 1.0, 7.9, 50.0):
        d = Deferred()
        for ids, f, w in common:
            d.add(ids, f, float(f.max()), w)
        buf = rare.copy()
        t = d.resolve(buf, 0, 0, k, floor)
        assert t is not None and t >= floor and d.done is not None
        assert np.array_equal(buf[d.done], whole[d.done]) and (np.delete(whole, d.done) < t).all()
        assert (len(d.done) < k) == (floor > 7.0)  # above the range's best less than k can reach it
        d.complete(buf, 0)
        assert buf.tobytes() == whole.tobytes()
