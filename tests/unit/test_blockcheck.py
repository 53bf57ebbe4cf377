"""The BM25 index check's arithmetic (scoi.core.blockcheck) on postings packed here with
the blocks' own packer: an index that holds together has no violation, and one posting
changed in the blocks or the forward rows is found, on the token it belongs to."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.core.bm25blocks import BLOCK, DIR, GROUP, decode_dir, open_from, pack
from scoi.core.blockcheck import IndexTally, array_elements, posting_hash, rows_well_formed


def array_send(values: list[int], width: int) -> bytes:
    """PostgreSQL's binary array format of a one-dimensional array without NULLs."""
    oid = 23 if width == 4 else 21
    if not values:
        return struct.pack(">iii", 0, 0, oid)
    fmt = ">ii" if width == 4 else ">ih"
    return struct.pack(">iiiii", 1, 0, oid, len(values), 1) + b"".join(struct.pack(fmt, width, v) for v in values)


@given(st.lists(st.lists(st.integers(-2**15, 2**15 - 1), max_size=6), max_size=8), st.sampled_from([2, 4]))
def test_array_elements_reads_concatenated_array_send_bytes(arrays, width):
    blob = b"".join(array_send(a, width) for a in arrays)
    got = array_elements(blob, np.array([len(a) for a in arrays], dtype=np.int64), width)
    assert got.tolist() == [v for a in arrays for v in a]


def test_array_elements_refuses_bytes_of_other_sizes():
    with pytest.raises(ValueError):
        array_elements(array_send([1, 2], 4), np.array([3]), 4)


def index(docs: dict[int, dict[int, int]]) -> tuple[list[tuple], list[tuple]]:
    """(block rows per token as the check's statement returns them, forward rows) of
    sentences {id: {token id: tf}}; dl = the sum of the tfs."""
    post = sorted((t, sid, tf, sum(toks.values())) for sid, toks in docs.items() for t, tf in toks.items())
    tids, sids, tfs, dls = (np.array([p[i] for p in post], dtype=np.int64) for i in range(4))
    rows, per_token = pack(tids, sids, tfs, dls, {})
    blocks = []
    for tid, (_, _, meta) in per_token.items():
        mine = [r for r in rows if r[0] == tid]
        blocks.append((tid, meta, [r[1] for r in mine], [len(r[3]) for r in mine],
                       b"".join(r[2] for r in mine), b"".join(r[3] for r in mine)))
    forward = [(sid, sum(toks.values()), sorted(toks), [toks[t] for t in sorted(toks)]) for sid, toks in sorted(docs.items())]
    return blocks, forward


def tally(blocks: list[tuple], forward: list[tuple], vocab: dict[int, tuple[str, int]], langs: dict[int, str]) -> dict:
    t = IndexTally(np.array(list(vocab)), [v[0] for v in vocab.values()], np.array([v[1] for v in vocab.values()]))
    t.add_blocks(blocks)
    flat_t = np.array([x for f in forward for x in f[2]], dtype=np.int64)
    flat_tf = np.array([x for f in forward for x in f[3]], dtype=np.int64)
    t.add_docs(np.array([f[0] for f in forward]), np.array([f[1] for f in forward]),
               np.array([len(f[2]) for f in forward]), flat_t, flat_tf, [langs.get(f[0]) for f in forward])
    return {k: v for k, v in t.violations().items() if v}


DOCS = st.dictionaries(st.integers(1, 5000), st.dictionaries(st.integers(1, 12), st.integers(1, 4), min_size=1, max_size=6),
                       min_size=1, max_size=400)


def vocab_of(docs: dict[int, dict[int, int]]) -> dict[int, tuple[str, int]]:
    df: dict[int, int] = {}
    for toks in docs.values():
        for t in toks:
            df[t] = df.get(t, 0) + 1
    return {t: ("fr", n) for t, n in df.items()}


@settings(max_examples=40, deadline=None)
@given(DOCS, st.data())
def test_an_index_that_holds_together_passes_and_one_changed_posting_is_found(docs, data):
    blocks, forward = index(docs)
    vocab = vocab_of(docs)
    langs = dict.fromkeys(docs, "fr")
    assert tally(blocks, forward, vocab, langs) == {}
    # one forward row's tf changed (and its dl, so that the row itself still adds up)
    sid = data.draw(st.sampled_from(sorted(docs)))
    row = next(f for f in forward if f[0] == sid)
    changed = [(s, dl + 1, t, [tf + (i == 0) for i, tf in enumerate(tfs)]) if s == sid else (s, dl, t, tfs)
               for s, dl, t, tfs in forward]
    assert tally(blocks, changed, vocab, langs) == {"bm25_doc_postings": len(row[2])}
    # a vocab df off by one, a token of another language
    tid = row[2][0]
    assert tally(blocks, forward, {**vocab, tid: ("fr", vocab[tid][1] + 1)}, langs) == {"vocab_df": 1}
    assert tally(blocks, forward, {**vocab, tid: ("en", vocab[tid][1])}, langs) == {
        "bm25_doc_lang": sum(tid in toks for toks in docs.values())}


def test_blocks_malformed_or_out_of_step_with_their_directory_are_counted():
    docs = {sid: {1: 1, 2: 1 + sid % 3} for sid in range(1, 2 * GROUP * BLOCK + 300)}
    blocks, forward = index(docs)
    vocab, langs = vocab_of(docs), dict.fromkeys(docs, "fr")
    assert tally(blocks, forward, vocab, langs) == {}
    tid, meta, nos, lens, ids, tfdl = blocks[0]
    assert nos[:2] == [0, GROUP] and lens[0] == 2 * GROUP * BLOCK  # full groups are one row
    assert open_from(len(decode_dir(meta)), decode_dir(meta).n[-1]) == nos[2]
    cases = {
        "a row numbered out of step": (nos[:1] + [nos[1] + 1] + nos[2:], lens, ids, tfdl, meta),
        "ids not 4 bytes a posting": (nos, lens, ids[:-4], tfdl, meta),
        "a posting missing from a middle block": (nos, lens[:2] + [lens[2] - 2] + lens[3:], ids[:4 * 2 * GROUP * BLOCK]
                                                  + ids[4 * 2 * GROUP * BLOCK + 4:], tfdl[:2 * 2 * GROUP * BLOCK]
                                                  + tfdl[2 * 2 * GROUP * BLOCK + 2:], meta),
        "a directory record short": (nos, lens, ids, tfdl, meta[:-DIR.itemsize]),
    }
    for name, (n2, l2, i2, t2, m2) in cases.items():
        bad = tally([(tid, m2, n2, l2, i2, t2)] + blocks[1:], forward, vocab, langs)
        assert bad.get("bm25_blocks") == 1, (name, bad)
    # ids out of order inside a block: the second posting's offset made the largest
    swapped = ids[:4] + struct.pack(">I", 2**31) + ids[8:]
    bad = tally([(tid, meta, nos, lens, swapped, tfdl)] + blocks[1:], forward, vocab, langs)
    assert bad.get("bm25_blocks") == 1 and bad.get("bm25_doc_postings") == 1, bad
    # a directory record's largest tf off: the postings hold, the record does not
    rec = np.frombuffer(meta, dtype=DIR).copy()
    rec["max_tf"][0] += 1
    assert tally([(tid, rec.tobytes(), nos, lens, ids, tfdl)] + blocks[1:], forward, vocab, langs) == {
        "bm25_dir_records": 1}


def test_rows_well_formed_wants_a_last_block_of_at_least_one_posting():
    docs = {sid: {7: 1} for sid in range(1, 10)}
    (tid, meta, nos, lens, ids, tfdl), = index(docs)[0]
    assert rows_well_formed(meta, nos, lens, len(ids), len(tfdl))
    assert not rows_well_formed(meta, nos, [0], 0, 0)
    assert not rows_well_formed(meta, [], [], len(ids), len(tfdl))


def test_posting_hash_tells_the_fields_apart():
    base = [np.array([3]), np.array([10]), np.array([1]), np.array([5])]
    h = posting_hash(*base)[0]
    for i in range(4):
        moved = [a + (j == i) for j, a in enumerate(base)]
        assert posting_hash(*moved)[0] != h


def rewrite_from_slowly(n_blocks: int, tail_n: int, new: int) -> int:
    """What a batch adding ``new`` postings to a token must rewrite, from the blocks
    themselves: the whole open group if the postings fill it (it becomes one row), else the
    first block that is not full (none: ``n_blocks``)."""
    before = [BLOCK] * (n_blocks - 1) + [tail_n]
    start = open_from(n_blocks, tail_n)
    sizes = list(before)
    for _ in range(new):
        if sizes[-1] == BLOCK:
            sizes.append(0)
        sizes[-1] += 1
    if len(sizes) >= start + GROUP and all(s == BLOCK for s in sizes[start:start + GROUP]):
        return start
    return next((i for i in range(start, n_blocks) if before[i] < BLOCK), n_blocks)


@settings(max_examples=400)
@given(st.integers(1, 40), st.integers(1, BLOCK), st.integers(0, 3 * GROUP * BLOCK))
def test_rewrite_from_is_the_partial_block_unless_the_group_fills(n_blocks, tail_n, new):
    from scoi.core.bm25blocks import rewrite_from

    assert rewrite_from(n_blocks, tail_n, new) == rewrite_from_slowly(n_blocks, tail_n, new)
