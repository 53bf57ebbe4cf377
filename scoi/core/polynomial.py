"""Dependency tree -> polynomial terms (docs/method.md §2), with no parser or database involved.

A term is the multiset of labels on the path from a virtual ``ROOT`` node down to one
token, so a sentence of n tokens has n + 1 terms (the virtual root's own term is
``{ROOT: 1}``). Terms are kept as label -> exponent mappings and named by a readable
canonical key such as ``ROOT^2·nsubj`` (ROOT first, then labels alphabetically), which is
also the key stored in PostgreSQL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import methodcaller

import numpy as np

ROOT = "ROOT"
SEP = "·"


def tree_terms(heads: Sequence[int], labels: Sequence[str]) -> Counter[str]:
    """Terms of a parsed sentence as ``Counter(key -> multiplicity)``.

    ``heads[i]`` is the index of token i's head, or i itself (or -1) for a root; a parse
    with several roots is joined under the one virtual ROOT, as the released code does.
    """
    n = len(heads)
    if len(labels) != n:
        raise ValueError("heads and labels must have the same length")
    keys: list[str | None] = [None] * n
    out: Counter[str] = Counter({ROOT: 1})
    for i in range(n):
        # Walk up until a token whose key is known (or the virtual root), then fill down.
        chain = []
        j = i
        while keys[j] is None:
            chain.append(j)
            h = heads[j]
            if h == j or h < 0:
                break
            if len(chain) > n:
                raise ValueError(f"dependency cycle through token {i}")
            j = h
        base = ROOT if keys[j] is None else keys[j]
        for node in reversed(chain):
            base = keys[node] = _child_key(base, labels[node])
            out[base] += 1
    return out


_CHILD_KEYS: dict[tuple[str, str], str] = {}


def _child_key(parent: str, label: str) -> str:
    """Key of ``parent`` times x_label, memoised: the same few thousand paths recur."""
    key = _CHILD_KEYS.get((parent, label))
    if key is None:
        exps = parse_key(parent)
        exps[label] = exps.get(label, 0) + 1
        key = _CHILD_KEYS[(parent, label)] = term_key(exps)
    return key


def term_key(exps: Mapping[str, int]) -> str:
    """Canonical readable name of a term: ``ROOT^2·nsubj``."""
    names = sorted((k for k, v in exps.items() if v), key=lambda k: (k != ROOT, k))
    return SEP.join(k if exps[k] == 1 else f"{k}^{exps[k]}" for k in names)


def parse_key(key: str) -> dict[str, int]:
    """Inverse of :func:`term_key`."""
    out: dict[str, int] = {}
    for part in key.split(SEP):
        name, _, power = part.rpartition("^") if "^" in part else (part, "", "1")
        out[name] = int(power)
    return out


class LabelSpace:
    """Maps label names to vector dimensions; grows when an unknown label shows up.

    Growing instead of dropping keeps every distance exact: a label the inventory did not
    know simply gets its own dimension.
    """

    def __init__(self, labels: Sequence[str] = ()) -> None:
        self.index: dict[str, int] = {}
        for name in labels:
            self.add(name)
        self._cache: dict[str, np.ndarray] = {}

    def add(self, name: str) -> int:
        idx = self.index.get(name)
        if idx is None:
            idx = self.index[name] = len(self.index)
        return idx

    @property
    def labels(self) -> list[str]:
        return list(self.index)

    def vector(self, key: str, width: int) -> np.ndarray:
        """Exponent vector of a term key, ``width`` wide (>= number of labels)."""
        vec = self._cache.get(key)
        if vec is None:
            parsed = [(self.add(name), power) for name, power in parse_key(key).items()]
            vec = np.zeros(max(i for i, _ in parsed) + 1, dtype=np.int32)
            for i, power in parsed:
                vec[i] = power
            self._cache[key] = vec
        out = np.zeros(width, dtype=np.int32)
        out[: len(vec)] = vec
        return out

    def register(self, key: str) -> None:
        """Give every label of ``key`` a dimension (before choosing a common width)."""
        for name in parse_key(key):
            self.add(name)

    def matrix(self, keys: Sequence[str], width: int | None = None) -> np.ndarray:
        """Stack term vectors (one row per key, repeats kept)."""
        for key in keys:
            self.register(key)
        w = width if width is not None else len(self.index)
        if not keys:
            return np.zeros((0, w), dtype=np.int32)
        return np.stack([self.vector(k, w) for k in keys])


def expand(terms: Mapping[str, int]) -> list[str]:
    """A Counter of keys as a flat multiset list (repeats counted), in key order."""
    return [k for k in sorted(terms) for _ in range(terms[k])]


class TermTable:
    """Distinct term keys -> row ids of one exponent-vector matrix, grown on demand.

    The selector sees the same few thousand terms query after query: giving each key a
    stable row id lets coverage find a pool's distinct terms without sorting vectors.
    """

    def __init__(self, labels: LabelSpace) -> None:
        self.labels = labels
        self.ids: dict[str, int] = {}
        self._keys: list[str] = []
        self._buffer = np.zeros((0, 0), dtype=np.int64)  # capacity rows >= len(_keys)
        self._norm_buffer = np.zeros(0, dtype=np.int64)  # each row's L1 norm (sum of exponents)
        self._filled = 0  # rows of _buffer holding their term's vector
        # Entries (rows, label dimensions, exponents) of the keys added since the last
        # ``matrix``, one triple of arrays per ``ids_of`` that added some: written into the
        # buffer with one scatter, not one vector per key.
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # "label^power" -> its dimension, its exponent: the parts of keys recur far more than keys.
        self._part_dims: dict[str, int] = {}
        self._part_powers: dict[str, int] = {}

    def ids_of(self, keys: Sequence[str]) -> np.ndarray:
        """Row ids of ``keys`` (new keys get new rows)."""
        get = self.ids.get
        # The common case: every key seen before (one C-level pass, -1 marks a new key).
        out = np.fromiter(map(get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
        missing = np.flatnonzero(out < 0).tolist()
        if missing:
            new = [keys[i] for i in missing]
            self._append(list(dict.fromkeys(new)))
            out[missing] = list(map(self.ids.__getitem__, new))
        return out

    def _append(self, keys: list[str]) -> None:
        """Give distinct new ``keys`` the next rows; their exponents are queued for ``matrix``.

        All of them at once: split every key, look its parts up ("nsubj^2" recurs in
        thousands of keys), one (row, dimension, exponent) entry per part (~0.9 µs a key
        with the scatter; key by key took ~1.8 µs, and a long query's pool can bring
        hundreds)."""
        first = len(self._keys)
        self.ids.update(zip(keys, range(first, first + len(keys))))
        self._keys += keys
        flat = SEP.join(keys).split(SEP)  # every key's parts, in order (parts never hold SEP)
        dims, powers = self._part_dims, self._part_powers
        for part in [p for p in dict.fromkeys(flat) if p not in dims]:  # first-seen order: labels' dimensions
            name, _, power = part.rpartition("^") if "^" in part else (part, "", "1")
            dims[part], powers[part] = self.labels.add(name), int(power)
        seps = np.fromiter(map(methodcaller("count", SEP), keys), dtype=np.int64, count=len(keys))
        rows = np.repeat(np.arange(first, first + len(keys)), seps + 1)
        cols = np.fromiter(map(dims.__getitem__, flat), dtype=np.intp, count=len(flat))
        exps = np.fromiter(map(powers.__getitem__, flat), dtype=np.int64, count=len(flat))
        self._pending.append((rows, cols, exps))

    @property
    def matrix(self) -> np.ndarray:
        """(n_terms, n_labels) exponent vectors (a view of a buffer that grows by doubling,
        so a query bringing a few new terms does not copy the whole table)."""
        width = len(self.labels.index)
        rows = len(self._keys)
        cap, old_width = self._buffer.shape
        if rows > cap or width != old_width:
            new_cap = max(rows, 2 * cap, 1024) if rows > cap else cap
            grown = np.zeros((new_cap, width), dtype=np.int64)
            grown[:self._filled, :old_width] = self._buffer[:self._filled]
            self._buffer = grown
            norms = np.zeros(new_cap, dtype=np.int64)
            norms[:self._filled] = self._norm_buffer[:self._filled]
            self._norm_buffer = norms
        if self._pending:
            r, c, v = (np.concatenate(x) for x in zip(*self._pending))
            self._buffer[r, c] = v
            self._pending = []
        if rows > self._filled:  # the new rows (contiguous: rows are only ever appended)
            self._norm_buffer[self._filled:rows] = self._buffer[self._filled:rows].sum(axis=1)
        self._filled = rows
        return self._buffer[:rows]

    @property
    def norms(self) -> np.ndarray:
        """(n_terms,) L1 norm of each row of :attr:`matrix` (kept as rows are added, so
        coverage need not sum full-width rows per query)."""
        rows = self.matrix.shape[0]
        return self._norm_buffer[:rows]
