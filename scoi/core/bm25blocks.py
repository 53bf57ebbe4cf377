"""Posting blocks of the BM25 index (migration 0016, docs/preselection.md): layout, packing
and bounds. Pure numpy, no I/O: ingest packs with it, the selector decodes and bounds.

A token's postings, in sentence id order, are cut into blocks of :data:`BLOCK`; only its
last block may be shorter. A block's postings are two byte strings:

- ``ids``: big-endian uint32 offsets of the sentence ids from the block's first id;
- ``tfdl``: big-endian uint16 ``tf << 8 | dl`` (tf and dl are at most 120 tokens).

Big-endian because that is what PostgreSQL's ``int4send``/``int2send`` write, so SQL can
build the same bytes (the migration does).

A ``bm25_block`` row (``block_no``: its first block) holds either one block, or
:data:`GROUP` full blocks whose numbers start at a multiple of :data:`GROUP`, their bytes
concatenated (migration 0022). Reading a whole list costs PostgreSQL about one tuple per
row, so the full groups make it eight times fewer tuples; a row of a group (6 KiB) still
fits a page uncompressed (``STORAGE PLAIN``). A token's blocks from :func:`open_from` on
are its *open* ones (at most ``GROUP - 1`` full blocks and a partial one, one row each):
ingest reads back and rewrites the partial one with the new postings, and the whole open
group when the new postings fill it, so a group is merged the moment it fills
(:func:`rewrite_from`). The token's **directory** (``bm25_dir.meta``)
holds one :data:`DIR` record per block: first and last id, size, and the block's (tf, dl)
extremes: the largest tf and the shortest sentence holding the token once, twice, or
three times or more (0: none). The bound of what a block's postings can add is computed
from them at query time with the current idf and avgdl (:func:`block_bounds`): adding
sentences never invalidates a stored extreme, it only adds blocks or rewrites the last.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

BLOCK = 128
GROUP = 8  # full blocks stored in one row
DIR = np.dtype([("first", ">i8"), ("last", ">i8"), ("n", ">i2"), ("max_tf", ">i2"),
                ("dl1", ">i2"), ("dl2", ">i2"), ("dl3", ">i2")])


class Directory(NamedTuple):
    """A token's directory as native int64 arrays, one entry per block (fields of :data:`DIR`)."""

    first: np.ndarray
    last: np.ndarray
    n: np.ndarray
    max_tf: np.ndarray
    dl1: np.ndarray
    dl2: np.ndarray
    dl3: np.ndarray

    def __len__(self) -> int:
        return len(self.first)

    def __getitem__(self, idx):  # the entries of some blocks, as a Directory
        return Directory(*(a[idx] for a in self))


def decode_dir(meta: bytes) -> Directory:
    """A token's directory: one entry per block, in block order."""
    rec = np.frombuffer(meta, dtype=DIR)
    return Directory(*(rec[name].astype(np.int64) for name in DIR.names))


def decode_postings(directory: Directory, ids: bytes, tfdl: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sentence ids, tf, dl) of the blocks whose ``ids``/``tfdl`` are concatenated in
    ``ids``/``tfdl``, ``directory`` being those blocks' records, in the same order."""
    offsets = np.frombuffer(ids, dtype=">u4").astype(np.int64)
    sids = offsets + np.repeat(directory.first, directory.n)
    packed = np.frombuffer(tfdl, dtype=">u2").astype(np.int64)
    return sids, packed >> 8, packed & 255


def block_bounds(directory: Directory, ka: float, kc: float) -> np.ndarray:
    """Per block, the largest tf / (tf + ka + kc dl) its postings can have: tf = 1 postings
    have dl >= dl1, tf = 2 ones dl >= dl2, tf >= 3 ones tf <= max_tf and dl >= dl3 (the
    factor grows with tf and shrinks with dl). Multiply by the token's weight."""
    out = np.zeros(len(directory))
    for dl, tf in ((directory.dl1, 1.0), (directory.dl2, 2.0), (directory.dl3, directory.max_tf)):
        np.maximum(out, np.where(dl > 0, tf / (tf + ka + kc * np.maximum(dl, 1)), 0.0), out=out)
    return out


def bound_at_dl(directory: Directory, sids: np.ndarray, dls: np.ndarray, ka: float, kc: float) -> np.ndarray:
    """Per sentence (id, length), the largest tf / (tf + ka + kc dl) the token can have in
    it: 0 if no block's id range holds it; else, over the (tf) buckets of that block that
    the sentence's own length allows (a bucket's shortest sentence is not longer than it),
    the factor at that length, with tf at most the bucket's largest and at most dl.
    Tighter than the block's bound (:func:`block_bounds`) for all but its shortest sentences."""
    out = np.zeros(len(sids))
    if not len(directory) or not len(sids):
        return out
    j = np.searchsorted(directory.last, sids, side="left")
    jj = np.minimum(j, len(directory) - 1)
    inside = (j < len(directory)) & (directory.first[jj] <= sids)
    norm = ka + kc * dls
    for col, tf in ((directory.dl1, 1.0), (directory.dl2, 2.0), (directory.dl3, None)):
        b = col[jj]
        ok = inside & (b > 0) & (b <= dls)
        if tf is None:
            t = np.minimum(directory.max_tf[jj], dls)
            np.maximum(out, np.where(ok, t / (t + norm), 0.0), out=out)
        else:
            np.maximum(out, np.where(ok, tf / (tf + norm), 0.0), out=out)
    return out


def open_from(n_blocks: int, tail_n: int) -> int:
    """The number of a token's first open block: the blocks before it are stored in full
    groups (one row per :data:`GROUP`), the ones from it on one row each."""
    return GROUP * ((n_blocks - (tail_n < BLOCK)) // GROUP)


def rewrite_from(n_blocks: int, tail_n: int, new: int) -> int:
    """The first block of a token that a batch adding ``new`` postings to it rewrites: its
    first open block (:func:`open_from`) when the batch fills the open group, which is
    then stored as one row; otherwise only its partial last block (``n_blocks`` when the
    last block is full: nothing is rewritten). Rewriting every open block on every batch
    rewrote about 50 postings for each one added at 1M pairs (a common token's open group
    holds up to 1,024); this rewrites a partial block and, once a group, its blocks."""
    start = open_from(n_blocks, tail_n)
    partial = n_blocks - 1 if tail_n < BLOCK else n_blocks
    held = (partial - start) * BLOCK + (tail_n if tail_n < BLOCK else 0)  # postings in the open blocks
    return start if held + new >= GROUP * BLOCK else partial


def pack(tids: np.ndarray, sids: np.ndarray, tfs: np.ndarray, dls: np.ndarray, base: dict[int, int]
         ) -> tuple[list[tuple[int, int, bytes, bytes]], dict[int, tuple[int, int, bytes]]]:
    """Blocks of postings sorted by (token id, sentence id): the ``bm25_block`` rows
    (token id, number of the row's first block, ids, tfdl; a full group of :data:`GROUP`
    blocks is one row) and per token (first block number written, blocks written, their
    :data:`DIR` records as bytes). A token's blocks are numbered from ``base[token]`` (0
    for a new token); a group row is written only for :data:`GROUP` full blocks from a
    multiple of :data:`GROUP`, all in this write, the other blocks one row each."""
    if not len(tids):
        return [], {}
    tids = np.asarray(tids, dtype=np.int64)
    sids = np.asarray(sids, dtype=np.int64)
    tfs = np.asarray(tfs, dtype=np.int64)
    dls = np.asarray(dls, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, tids[1:] != tids[:-1]])
    pos = np.arange(len(tids)) - np.repeat(starts, np.diff(np.r_[starts, len(tids)]))
    blk = pos // BLOCK
    bstarts = np.flatnonzero(np.r_[True, (tids[1:] != tids[:-1]) | (blk[1:] != blk[:-1])])
    bends = np.r_[bstarts[1:], len(tids)]
    first = sids[bstarts]
    rec = np.zeros(len(bstarts), dtype=DIR)
    rec["first"], rec["last"], rec["n"] = first, sids[bends - 1], bends - bstarts
    rec["max_tf"] = np.maximum.reduceat(tfs, bstarts)
    for col, mask in (("dl1", tfs == 1), ("dl2", tfs == 2), ("dl3", tfs >= 3)):
        m = np.minimum.reduceat(np.where(mask, dls, 1 << 20), bstarts)
        rec[col] = np.where(m == 1 << 20, 0, m)
    offsets = (sids - np.repeat(first, bends - bstarts)).astype(">u4").tobytes()
    tfdl = ((tfs << 8) | dls).astype(">u2").tobytes()
    recs = rec.tobytes()
    btids = tids[bstarts]
    bnos = np.array([base.get(t, 0) for t in btids.tolist()], dtype=np.int64) + blk[bstarts]
    # a full group: GROUP blocks of one token from a multiple of GROUP, the last one full
    last = np.minimum(np.arange(len(bstarts)) + GROUP - 1, len(bstarts) - 1)
    whole = ((bnos % GROUP == 0) & (btids[last] == btids) & (bnos[last] == bnos + GROUP - 1)
             & (bends[last] - bstarts[last] == BLOCK))
    rows = []
    i = 0
    while i < len(bstarts):
        j = i + GROUP if whole[i] else i + 1
        s, e = int(bstarts[i]), int(bends[j - 1])
        rows.append((int(btids[i]), int(bnos[i]), offsets[4 * s:4 * e], tfdl[2 * s:2 * e]))
        i = j
    uniq, i0, cnt = np.unique(btids, return_index=True, return_counts=True)
    size = DIR.itemsize
    per_token = {tid: (base.get(tid, 0), c, recs[size * i:size * (i + c)])
                 for tid, i, c in zip(uniq.tolist(), i0.tolist(), cnt.tolist())}
    return rows, per_token


__all__ = ["BLOCK", "GROUP", "DIR", "open_from", "rewrite_from", "Directory", "decode_dir", "decode_postings", "block_bounds", "bound_at_dl", "pack"]
