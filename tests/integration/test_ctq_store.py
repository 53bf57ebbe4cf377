"""A fitted CTQ Scorer regressor round-trips through PostgreSQL: the stored model predicts
what scikit-learn's fitted estimator predicts, and its signature names its bytes."""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from scoi.core.ctq_regressor import model_signature
from scoi.ctq import SQL, CtqError, find_model, model_row
from scoi.ctq_train import fit, store_fitted


def _training_row(conn: psycopg.Connection, name: str, features: list[str]) -> None:
    conn.execute(SQL["insert_model"], {"name": name, "src": "fr", "tgt": "en", "llm": "openai:m", "metric": "chrf",
                                       "pool": 4, "features": features, "omitted": json.dumps({}), "embedder": None,
                                       "job_id": None, "dev_hash": "h"})


def test_a_fitted_model_predicts_the_same_after_reload(job_db):
    rng = np.random.default_rng(7)
    features = ["bm25_score", "chrf_score", "no_of_tokens_in_src_sent"]
    x = rng.uniform(0, 30, size=(80, 3))
    y = 20 + x[:, 1] * 0.8 - x[:, 2] + rng.normal(size=80)
    reg, info, estimator = fit(x, y, seed=3)
    assert info["early_stopping"] and info["hidden_layer_sizes"] == [128] * 4
    probe = rng.uniform(0, 30, size=(25, 3))
    assert reg.predict(probe) == pytest.approx(estimator.predict(probe), rel=1e-9, abs=1e-9)

    with psycopg.connect(job_db, autocommit=True) as conn:
        _training_row(conn, "round-trip", features)
        with pytest.raises(CtqError, match="not fitted yet"):
            find_model(conn, "round-trip", "fr", "en")
        with conn.cursor(row_factory=dict_row) as cur:
            unfitted = model_row(cur.execute(SQL["model_by_name"], {"name": "round-trip"}).fetchone())
        assert unfitted.status == "translating" and unfitted.regressor is None
        store_fitted(conn, unfitted, reg, info, len(y))
        with pytest.raises(CtqError, match="fitted already"):
            store_fitted(conn, unfitted, reg, info, len(y))
        loaded = find_model(conn, None, "fr", "en")
        by_signature = find_model(conn, loaded.signature, "fr", "en")
        with pytest.raises(CtqError, match="ranks fr-en examples, not en-fr"):
            find_model(conn, "round-trip", "en", "fr")
        with pytest.raises(CtqError, match="trained again"):
            find_model(conn, "round-trip@f:00000000,sha256:0", "fr", "en")
    assert loaded.name == by_signature.name == "round-trip" and loaded.features == features
    assert loaded.signature == model_signature("round-trip", features, reg.to_bytes())
    assert np.array_equal(loaded.regressor.predict(probe), reg.predict(probe))
    assert loaded.fit["estimator"] == "MLPRegressor" and loaded.n_rows == 80
