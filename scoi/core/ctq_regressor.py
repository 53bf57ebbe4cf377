"""A fitted CTQ Scorer regressor as plain arrays: its prediction and its stored bytes.

Pure: numpy only, no scikit-learn at selection time. The released code's regressor is an
MLP over min-max scaled features predicting the min-max scaled one-shot score; scoi fits
the same shape with scikit-learn (scoi.ctq.fit) and keeps only what predicting needs: the
feature scaler, the layers and the target scaler. Stored as an ``.npz`` archive without
pickles (``allow_pickle=False``): loading a model from the database never runs code.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ACTIVATIONS = ("relu", "tanh", "logistic", "identity")


@dataclass(frozen=True)
class Regressor:
    """``predict(X) = (mlp(X * x_scale + x_min) - y_min) / y_scale`` (MinMaxScaler's
    transform in, its inverse out); ``mlp``: ``activation`` after every layer but the last."""

    x_min: np.ndarray
    x_scale: np.ndarray
    coefs: tuple[np.ndarray, ...]
    intercepts: tuple[np.ndarray, ...]
    y_min: float
    y_scale: float
    activation: str = "relu"

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; expected one of {ACTIVATIONS}")
        if len(self.coefs) != len(self.intercepts) or not self.coefs:
            raise ValueError("a regressor needs as many intercept vectors as weight matrices, at least one")

    @property
    def n_features(self) -> int:
        return int(self.coefs[0].shape[0])

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted one-shot quality of each row of ``x`` (n, n_features)."""
        h = np.asarray(x, dtype=np.float64) * self.x_scale + self.x_min
        last = len(self.coefs) - 1
        for i, (w, b) in enumerate(zip(self.coefs, self.intercepts)):
            h = h @ w + b
            if i < last:
                h = _activate(h, self.activation)
        return (h[:, 0] - self.y_min) / self.y_scale

    def to_bytes(self) -> bytes:
        """The ``.npz`` archive the database stores (no pickles)."""
        arrays = {"x_min": self.x_min, "x_scale": self.x_scale, "y": np.array([self.y_min, self.y_scale]),
                  "activation": np.array(self.activation)}
        for i, (w, b) in enumerate(zip(self.coefs, self.intercepts)):
            arrays[f"w{i}"], arrays[f"b{i}"] = w, b
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Regressor:
        """The regressor :meth:`to_bytes` wrote; ValueError for anything else."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                n = sum(1 for name in z.files if name.startswith("w"))
                return cls(z["x_min"], z["x_scale"], tuple(z[f"w{i}"] for i in range(n)),
                           tuple(z[f"b{i}"] for i in range(n)), float(z["y"][0]), float(z["y"][1]),
                           str(z["activation"]))
        except (OSError, KeyError, ValueError, IndexError) as e:
            raise ValueError(f"not a stored CTQ regressor: {e}") from None


def _activate(h: np.ndarray, name: str) -> np.ndarray:
    if name == "relu":
        return np.maximum(h, 0.0)
    if name == "tanh":
        return np.tanh(h)
    if name == "logistic":
        return 1.0 / (1.0 + np.exp(-h))
    return h


def model_signature(name: str, features: Sequence[str], data: bytes) -> str:
    """What a selection's signature names a CTQ model by: its name, its features' hash and
    its bytes' hash (``NAME@f:1a2b3c4d,sha256:0123456789abcdef``)."""
    feats = hashlib.sha256(",".join(features).encode("utf-8")).hexdigest()[:8]
    return f"{name}@f:{feats},sha256:{hashlib.sha256(data).hexdigest()[:16]}"


__all__ = ["ACTIVATIONS", "Regressor", "model_signature"]
