"""Reading from a replica without a server: SCOI_READ_DATABASE_URL and SCOI_READ_MAX_LAG as
scoi.config reads them, WAL positions as scoi.db.reads compares them."""

from __future__ import annotations

import pytest

from scoi.config import read_database_url_from_env, read_max_lag_from_env
from scoi.db.reads import ReadStatus, lsn_int


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


def test_lsn_int_orders_like_postgresql():
    assert lsn_int("0/0") == 0
    assert lsn_int("0/3018AD0") == 0x3018AD0
    assert lsn_int("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert lsn_int("1/0") > lsn_int("0/FFFFFFFF")


def status(**kw) -> ReadStatus:
    base = dict(server="replica", standby=True, replay_lsn="0/10", primary_lsn="0/10", lag_bytes=0, lag_s=0.0,
                replay_paused=False, max_lag_s=None, fallback=None, check_ms=0.1)
    return ReadStatus(**{**base, **kw})


def test_verbose_line_says_where_the_selection_read():
    assert status().describe() == "read from the replica: replayed up to 0/10 (caught up)"
    assert status(primary_lsn="0/20", lag_bytes=16, lag_s=2.25, replay_paused=True).describe() == (
        "read from the replica: replayed up to 0/10 (16 bytes of WAL behind, at most 2.2 s stale, replay paused)")
    assert "no transaction replayed yet" in status(lag_bytes=16, lag_s=None).describe()
    assert status(server="primary", fallback="the replica is 9.0 s behind (SCOI_READ_MAX_LAG=5)").describe() == (
        "read from the primary: the replica is 9.0 s behind (SCOI_READ_MAX_LAG=5)")
    assert status().to_dict()["replay_lsn"] == "0/10"


def test_a_database_error_becomes_one_line_without_the_statement():
    import psycopg

    from scoi.db.reads import error_cause

    multi = psycopg.OperationalError('connection to server on socket "/x/.s.PGSQL.5432" failed: No such file\n'
                                     "\tIs the server running locally?")
    assert error_cause(multi) == 'connection to server on socket "/x/.s.PGSQL.5432" failed: No such file'
    assert error_cause(psycopg.OperationalError("")) == "OperationalError"
