"""SCOI_READ_DATABASE_URL and SCOI_READ_MAX_LAG as scoi.config reads them."""

from __future__ import annotations

import pytest

from scoi.config import read_database_url_from_env, read_max_lag_from_env


@pytest.mark.parametrize(("raw", "expected"), [("", None), ("  ", None), ("0", 0.0), ("5", 5.0), (" 2.5 ", 2.5)])
def test_max_lag_values(monkeypatch, raw, expected):
    monkeypatch.setenv("SCOI_READ_MAX_LAG", raw)
    assert read_max_lag_from_env() == expected


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf", "5s"])
def test_bad_max_lag_names_the_value(monkeypatch, raw):
    monkeypatch.setenv("SCOI_READ_MAX_LAG", raw)
    with pytest.raises(ValueError, match=r"SCOI_READ_MAX_LAG='.*': expected a number of seconds >= 0"):
        read_max_lag_from_env()


def test_read_url(monkeypatch):
    monkeypatch.delenv("SCOI_READ_DATABASE_URL", raising=False)
    assert read_database_url_from_env() is None
    monkeypatch.setenv("SCOI_READ_DATABASE_URL", " postgresql://u@replica/scoi ")
    assert read_database_url_from_env() == "postgresql://u@replica/scoi"
