"""The BM25 index checked against itself: posting blocks, their directories and the forward
rows (``scoi db check``, scoi/db/check.py). Pure numpy, no I/O: the caller streams the rows.

Since migration 0034 the postings exist twice, inverted in the blocks (by token, what
queries read) and forward in ``bm25_doc`` (by sentence, what rescoring and deletes read),
and nowhere one row each. The two are compared a token at a time without sorting either
side: per token, the number of postings and the sum (mod 2^64) of a 64-bit hash of each
posting (token, sentence, tf, dl). Equal multisets give equal sums; a posting missing,
added or changed in either changes its token's sum except with probability ~2^-64.
Memory is a few arrays the size of the vocabulary, whatever the corpus size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from scoi.core.bm25blocks import BLOCK, DIR, GROUP, decode_dir, decode_postings

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_K = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))


def posting_hash(tids: np.ndarray, sids: np.ndarray, tfs: np.ndarray, dls: np.ndarray) -> np.ndarray:
    """A 64-bit hash per posting (splitmix64's finaliser over the fields mixed in)."""
    with np.errstate(over="ignore"):
        x = (tids.astype(np.uint64) * _K[0]) ^ (sids.astype(np.uint64) * _K[1]) \
            ^ (((tfs.astype(np.uint64) << np.uint64(16)) | dls.astype(np.uint64)) * _K[2])
        x ^= x >> np.uint64(30)
        x *= _M1
        x ^= x >> np.uint64(27)
        x *= _M2
        x ^= x >> np.uint64(31)
    return x


def array_elements(blob: bytes, counts: np.ndarray, width: int) -> np.ndarray:
    """The elements of one-dimensional arrays without NULLs as PostgreSQL's ``array_send``
    writes them, concatenated (``counts``: each array's cardinality; ``width``: 4 for
    integer[], 2 for smallint[]). Each array is a header (20 bytes, 12 when empty), then
    per element its length (4 bytes) and its big-endian value. ValueError if the bytes
    are not that."""
    counts = np.asarray(counts, dtype=np.int64)
    header = np.where(counts > 0, 20, 12)
    sizes = header + counts * (4 + width)
    if int(sizes.sum()) != len(blob):
        raise ValueError("array_send bytes do not match the arrays' cardinalities")
    starts = np.cumsum(sizes) - sizes
    total = int(counts.sum())
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    pos = np.repeat(starts + header, counts) + within * (4 + width) + 4
    raw = np.frombuffer(blob, dtype=np.uint8)
    picked = raw[pos[:, None] + np.arange(width)].reshape(-1)
    return np.frombuffer(picked.tobytes(), dtype=">i4" if width == 4 else ">i2").astype(np.int64)


def rows_well_formed(meta: bytes, nos: list[int], lens: list[int], ids_len: int, tfdl_len: int) -> bool:
    """One token's block rows (numbers, ``tfdl`` byte lengths, in order) and directory
    hold together: rows numbered from 0 without gaps, a row of several blocks a full
    group of :data:`GROUP` from a multiple of it, every block but the last full, 4 bytes
    of ids and 2 of tfdl per posting, one directory record per block with its size."""
    if not nos or len(meta) % DIR.itemsize or ids_len != 2 * tfdl_len:
        return False
    expect = 0
    for i, (no, length) in enumerate(zip(nos, lens)):
        if length <= 0 or length % 2 or no != expect:
            return False
        n = length // 2
        blocks = -(-n // BLOCK)
        if blocks > 1 and (n != GROUP * BLOCK or no % GROUP):
            return False
        if i < len(nos) - 1 and n % BLOCK:
            return False
        expect += blocks
    sizes = decode_dir(meta).n
    return (len(sizes) == expect and bool((sizes[:-1] == BLOCK).all()) and 1 <= sizes[-1] <= BLOCK
            and int(sizes.sum()) * 2 == tfdl_len)


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    if n <= len(a):
        return a
    out = np.zeros(max(n, 2 * len(a)), dtype=a.dtype)
    out[:len(a)] = a
    return out


@dataclass
class IndexTally:
    """What the blocks and the forward rows say per token, and the violations met so far.
    Feed :meth:`add_blocks` and :meth:`add_docs` any number of chunks (each token's
    blocks in one chunk), then read :meth:`violations`."""

    vocab_ids: np.ndarray
    vocab_langs: list[str]
    vocab_df: np.ndarray
    blocks_n: np.ndarray = field(init=False)
    blocks_hash: np.ndarray = field(init=False)
    docs_n: np.ndarray = field(init=False)
    docs_hash: np.ndarray = field(init=False)
    in_blocks: np.ndarray = field(init=False)
    lang_of: np.ndarray = field(init=False)
    langs: dict[str, int] = field(init=False)
    bad_blocks: int = 0
    bad_records: int = 0
    bad_docs: int = 0
    doc_lang: int = 0

    def __post_init__(self) -> None:
        self.vocab_ids = np.asarray(self.vocab_ids, dtype=np.int64)
        self.vocab_df = np.asarray(self.vocab_df, dtype=np.int64)
        size = int(self.vocab_ids.max()) + 1 if len(self.vocab_ids) else 1
        self.blocks_n = np.zeros(size, dtype=np.int64)
        self.docs_n = np.zeros(size, dtype=np.int64)
        self.blocks_hash = np.zeros(size, dtype=np.uint64)
        self.docs_hash = np.zeros(size, dtype=np.uint64)
        self.in_blocks = np.zeros(size, dtype=bool)
        self.langs = {lang: i for i, lang in enumerate(sorted(set(self.vocab_langs)))}
        self.lang_of = np.full(size, -1, dtype=np.int64)
        self.lang_of[self.vocab_ids] = [self.langs[lang] for lang in self.vocab_langs]

    def _grow(self, top: int) -> None:
        """Room for token ids up to ``top`` (ids no vocab row has: counted as such)."""
        n = top + 1
        if n > len(self.blocks_n):
            self.lang_of = np.concatenate([self.lang_of, np.full(max(n, 2 * len(self.lang_of)) - len(self.lang_of), -1)])
            for name in ("blocks_n", "docs_n", "blocks_hash", "docs_hash", "in_blocks"):
                setattr(self, name, _grown(getattr(self, name), len(self.lang_of)))

    def add_blocks(self, rows: Iterable[tuple[int, bytes, list[int], list[int], bytes, bytes]]) -> None:
        """Tokens' directories and block rows: (token id, ``bm25_dir.meta``, the rows'
        block numbers and tfdl lengths in order, their ids and tfdl concatenated)."""
        good: list[tuple[int, bytes, bytes, bytes]] = []
        for tid, meta, nos, lens, ids, tfdl in rows:
            self._grow(tid)
            self.in_blocks[tid] = True
            if rows_well_formed(meta, nos or [], lens or [], len(ids or b""), len(tfdl or b"")):
                good.append((tid, meta, ids, tfdl))
            else:
                self.bad_blocks += 1
        if not good:
            return
        tids = np.array([g[0] for g in good], dtype=np.int64)
        directory = decode_dir(b"".join(g[1] for g in good))
        offsets = np.frombuffer(b"".join(g[2] for g in good), dtype=">u4").astype(np.int64)
        sids, tfs, dls = decode_postings(directory, b"".join(g[2] for g in good), b"".join(g[3] for g in good))
        per_token = np.array([len(g[3]) // 2 for g in good], dtype=np.int64)
        t_start = np.cumsum(per_token) - per_token
        blocks_per = np.array([len(g[1]) // DIR.itemsize for g in good], dtype=np.int64)
        b_start = np.cumsum(directory.n) - directory.n
        b_end = b_start + directory.n - 1
        token_of_block = np.repeat(np.arange(len(good)), blocks_per)
        # ids ascending within each token, tf and dl at least 1 (dl >= tf)
        step = np.diff(sids) > 0
        step[t_start[1:] - 1] = True  # a token's first posting follows another token's last
        bad_post = np.r_[False, ~step] | (tfs < 1) | (dls < tfs)
        token_bad = np.zeros(len(good), dtype=bool)
        np.logical_or.at(token_bad, np.repeat(np.arange(len(good)), per_token), bad_post)
        self.bad_blocks += int(token_bad.sum())
        # each directory record: its block's first offset 0, last id, largest tf, shortest
        # sentence holding the token once, twice, three times or more (0: none)
        big = 1 << 20
        rec_bad = (offsets[b_start] != 0) | (sids[b_end] != directory.last)
        rec_bad |= np.maximum.reduceat(tfs, b_start) != directory.max_tf
        for col, mask in ((directory.dl1, tfs == 1), (directory.dl2, tfs == 2), (directory.dl3, tfs >= 3)):
            m = np.minimum.reduceat(np.where(mask, dls, big), b_start)
            rec_bad |= np.where(m == big, 0, m) != col
        record_bad = np.zeros(len(good), dtype=bool)
        np.logical_or.at(record_bad, token_of_block, rec_bad)
        self.bad_records += int(record_bad.sum())
        h = posting_hash(np.repeat(tids, per_token), sids, tfs, dls)
        self.blocks_n[tids] = per_token
        self.blocks_hash[tids] = np.add.reduceat(h, t_start)

    def add_docs(self, sids: np.ndarray, dls: np.ndarray, counts: np.ndarray, tids: np.ndarray,
                 tfs: np.ndarray, langs: list[str | None]) -> None:
        """Forward rows: per row its sentence id, dl, number of tokens and its sentence's
        language (None: no sentence); ``tids``/``tfs`` all rows' arrays concatenated."""
        sids, dls, counts = (np.asarray(a, dtype=np.int64) for a in (sids, dls, counts))
        if not len(sids):
            return
        if len(tids):
            self._grow(int(tids.max()))
        row = np.repeat(np.arange(len(sids)), counts)
        # token ids distinct, ascending and positive, tf >= 1, tf summing to dl
        bad_post = (tfs < 1) | (tids < 1)
        tids = np.maximum(tids, 0)  # 0: no vocab row has it (a serial), so it counts as unknown too
        if len(tids) > 1:
            same_row = row[1:] == row[:-1]
            bad_post[1:] |= same_row & (tids[1:] <= tids[:-1])
        bad = np.zeros(len(sids), dtype=bool)
        np.logical_or.at(bad, row, bad_post)
        tf_sum = np.zeros(len(sids), dtype=np.int64)
        np.add.at(tf_sum, row, tfs)
        bad |= tf_sum != dls
        self.bad_docs += int(bad.sum())
        # a token of another language's vocabulary (tokens of no vocab row: counted apart)
        doc_lang = np.array([self.langs.get(x, -2) if x is not None else -3 for x in langs], dtype=np.int64)
        token_lang = self.lang_of[tids]
        other = (token_lang >= 0) & (doc_lang[row] != -3) & (token_lang != doc_lang[row])
        wrong = np.zeros(len(sids), dtype=bool)
        np.logical_or.at(wrong, row, other)
        self.doc_lang += int(wrong.sum())
        h = posting_hash(tids, np.repeat(sids, counts), tfs, np.repeat(dls, counts))
        np.add.at(self.docs_hash, tids, h)
        self.docs_n += np.bincount(tids, minlength=len(self.docs_n))[:len(self.docs_n)]

    def violations(self) -> dict[str, int]:
        """Per check of the pass, the tokens (or forward rows) that break it."""
        known = np.zeros(len(self.blocks_n), dtype=bool)
        known[self.vocab_ids] = True
        df = np.zeros(len(self.blocks_n), dtype=np.int64)
        df[self.vocab_ids] = self.vocab_df
        differ = (self.blocks_n != self.docs_n) | (self.blocks_hash != self.docs_hash)
        return {
            "bm25_blocks": self.bad_blocks,
            "bm25_dir_records": self.bad_records,
            "bm25_doc_postings": int(differ.sum()),
            "bm25_doc_tfs": self.bad_docs,
            "bm25_doc_lang": self.doc_lang,
            "vocab_df": int((known & (df != self.blocks_n)).sum()),
            "index_vocab": int((~known & (self.in_blocks | (self.docs_n > 0))).sum()),
        }


__all__ = ["IndexTally", "array_elements", "posting_hash", "rows_well_formed"]
