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
        self._filled = 0  # rows of _buffer holding their term's vector
        # Entries (row, label dimension, exponent) of the keys added since the last
        # ``matrix``: written into the buffer with one scatter, not one vector per key
        # (a long query's pool brings up to a few hundred new terms: ~10 µs each before).
        self._pending: tuple[list[int], list[int], list[int]] = ([], [], [])

    def ids_of(self, keys: Sequence[str]) -> np.ndarray:
        known = list(map(self.ids.get, keys))  # the common case: every key seen before
        if None not in known:
            return np.array(known, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        rows, cols, powers = self._pending
        add = self.labels.add
        for i, key in enumerate(keys):
            row = self.ids.get(key)
            if row is None:
                row = self.ids[key] = len(self._keys)
                self._keys.append(key)
                for name, power in parse_key(key).items():
                    rows.append(row)
                    cols.append(add(name))
                    powers.append(power)
            out[i] = row
        return out

    @property
    def matrix(self) -> np.ndarray:
        """(n_terms, n_labels) exponent vectors (a view of a buffer that grows by doubling,
        so a query bringing a few new terms does not copy the whole table)."""
        width = len(self.labels.index)
        rows = len(self._keys)
        cap, old_width = self._buffer.shape
        if rows > cap or width != old_width:
            grown = np.zeros((max(rows, 2 * cap, 1024), width), dtype=np.int64)
            grown[:self._filled, :old_width] = self._buffer[:self._filled]
            self._buffer = grown
        if self._pending[0]:
            r, c, v = self._pending
            self._buffer[np.array(r, dtype=np.intp), np.array(c, dtype=np.intp)] = v
            self._pending = ([], [], [])
        self._filled = rows
        return self._buffer[:rows]
