"""BM25 posting blocks (migrations 0016, 0022) written and rewritten in the caller's
transaction: appending the postings of new sentences, and rewriting a token's blocks from
the first one that lost a posting when sentences are deleted.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import psycopg

from scoi.core.bm25blocks import BLOCK, DIR, GROUP, Directory, decode_dir, decode_postings, pack, rewrite_from
from scoi.db.literals import int_array
from scoi.db.queries import load

_SQL = load("blocks")


def write_blocks(cur: psycopg.Cursor, tids: np.ndarray, sids: np.ndarray, tfs: np.ndarray, dls: np.ndarray) -> None:
    """Add postings to the posting blocks (migrations 0016, 0022) in the cursor's transaction.

    Each token's partial last block is read back and rewritten with the new postings,
    more blocks follow, and the token's directory records from there on are replaced;
    when the new postings fill the token's open group (its blocks after its last full
    group), the group's blocks are read back too and stored as one row
    (:func:`scoi.core.bm25blocks.rewrite_from`). Readers keep seeing the previous row
    versions until commit (MVCC), and a crash leaves the previous blocks intact. The new
    sentence ids are larger than every stored one (drawn from the sequence under the
    ingest lock), so appending keeps each list in id order.
    """
    if not len(tids):
        return
    touched, new = np.unique(tids, return_counts=True)
    added = dict(zip(touched.tolist(), new.tolist()))
    layout = {"block": BLOCK, "group": GROUP, "rec": DIR.itemsize}
    base: dict[int, int] = {}
    rewritten: list[tuple[int, int]] = []
    for tid, n_blocks, tail_n in cur.execute(_SQL["dir_sizes"], {"ids": touched.tolist()}):
        base[tid] = rewrite_from(n_blocks, tail_n, added[tid])
        if base[tid] < n_blocks:
            rewritten.append((tid, base[tid]))
    tails: list[tuple[np.ndarray, ...]] = []
    if rewritten:
        read = {"ids": int_array([t for t, _ in rewritten]), "block_nos": int_array([b for _, b in rewritten]),
                "rec": DIR.itemsize}
        for tid, recs, ids, tfdl in cur.execute(_SQL["blocks_from"], read):
            t_sids, t_tfs, t_dls = decode_postings(decode_dir(bytes(recs)), bytes(ids), bytes(tfdl))
            tails.append((np.full(len(t_sids), tid), t_sids, t_tfs, t_dls))
    if tails:
        tids, sids, tfs, dls = (np.concatenate([t[i] for t in tails] + [a]) for i, a in enumerate((tids, sids, tfs, dls)))
    order = np.lexsort((sids, tids))
    rows, per_token = pack(tids[order], sids[order], tfs[order], dls[order], base)
    if rewritten:
        cur.execute(_SQL["delete_blocks"], {"ids": [t for t, _ in rewritten], "block_nos": [b for _, b in rewritten],
                                            **layout})
    with cur.copy(_SQL["copy_blocks"]) as cp:
        for row in rows:
            cp.write_row(row)
    ids = list(per_token)
    cur.execute(_SQL["upsert_dirs"], {
        "ids": ids, "n_blocks": [per_token[t][0] + per_token[t][1] for t in ids],
        "tail_n": [int(np.frombuffer(per_token[t][2][-DIR.itemsize:], dtype=DIR)["n"][0]) for t in ids],
        "metas": [per_token[t][2] for t in ids], **layout})


def rewrite_blocks(cur: psycopg.Cursor, tids: np.ndarray, sids: np.ndarray) -> None:
    """Rewrite the posting blocks of the tokens whose postings (``tids``, ``sids``) are
    deleted: each token's rows from the group holding its first deleted posting on are
    read back (bytes, decoded here), the deleted postings left out, packed again and
    replace the old rows; its directory keeps the records before them (``upsert_dirs``),
    or goes when the token has no posting left. Each token's df is recounted from its
    blocks: the full groups kept before the rewritten rows, and the postings rewritten."""
    first_deleted: dict[int, int] = {}
    for tid, sid in zip(tids.tolist(), sids.tolist()):
        if sid < first_deleted.get(tid, sid + 1):
            first_deleted[tid] = sid
    base: dict[int, int] = {}
    dirs: dict[int, Directory] = {}
    for tid, meta in cur.execute(_SQL["dirs"], {"ids": int_array(list(first_deleted))}):
        directory = decode_dir(bytes(meta))
        j = int(np.searchsorted(directory.last, first_deleted[tid], side="left"))
        base[tid] = GROUP * (min(j, len(directory) - 1) // GROUP)
        dirs[tid] = directory[base[tid]:]
    ids = list(base)
    where = {"ids": int_array(ids), "block_nos": int_array([base[t] for t in ids])}
    parts: list[tuple[np.ndarray, ...]] = []
    for tid, _, b_ids, b_tfdl in cur.execute(_SQL["blocks_from"], {**where, "rec": DIR.itemsize}):
        t_sids, t_tfs, t_dls = decode_postings(dirs[tid], bytes(b_ids), bytes(b_tfdl))
        parts.append((np.full(len(t_sids), tid, dtype=np.int64), t_sids, t_tfs, t_dls))
    cols = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dtype=np.int64) for i in range(4)]
    keep = ~np.isin(cols[1], sids)  # a deleted sentence loses all its postings: one test for every token
    order = np.lexsort((cols[1][keep], cols[0][keep]))
    packed, per_token = pack(*(c[keep][order] for c in cols), base)
    left = Counter(cols[0][keep].tolist())
    cur.execute(_SQL["set_df"], {"ids": int_array(ids), "df": int_array([BLOCK * base[t] + left[t] for t in ids])})
    layout = {"block": BLOCK, "group": GROUP, "rec": DIR.itemsize}
    cur.execute(_SQL["delete_blocks_from"], where)
    with cur.copy(_SQL["copy_blocks"]) as cp:
        for row in packed:
            cp.write_row(row)
    emptied = [t for t in ids if t not in per_token]
    cur.execute(_SQL["delete_dirs"], {"ids": int_array([t for t in emptied if base[t] == 0])})
    # a token whose blocks from base[t] on are all gone keeps the full groups before them
    out = {**per_token, **{t: (base[t], 0, b"") for t in emptied if base[t] > 0}}
    if out:
        tids_out = list(out)
        cur.execute(_SQL["upsert_dirs"], {
            "ids": tids_out, "n_blocks": [out[t][0] + out[t][1] for t in tids_out],
            "tail_n": [int(np.frombuffer(out[t][2][-DIR.itemsize:], dtype=DIR)["n"][0]) if out[t][2] else BLOCK
                       for t in tids_out],
            "metas": [out[t][2] for t in tids_out], **layout})
