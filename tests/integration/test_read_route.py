"""Where selection reads when the read URL is not a healthy replica (scoi.db.reads): a server
that is not a standby, an unreachable one, one at another schema revision. The real replica
is tested in tests/e2e/test_read_replica.py."""

from __future__ import annotations

import psycopg
import pytest

from scoi.selector import Selector
from tests.helpers.database import fresh_database
from tests.helpers.ingest import DEMO, ingest_inprocess

QUERY = "Le chat dort sur le canapé du salon."


@pytest.fixture(scope="module")
def demo_db(server_url, template_url):
    with fresh_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        yield url


def with_param(url: str, param: str) -> str:
    """The same database under another URL (an extra libpq parameter)."""
    return url + ("&" if "?" in url else "?") + param


def test_a_read_url_that_is_no_standby_is_read_without_lag_and_never_written(demo_db):
    read_url = with_param(demo_db, "application_name=scoi-read")
    with Selector("fr", "en", url=demo_db, read_url=read_url, read_max_lag=0) as sel, \
            Selector("fr", "en", url=demo_db) as plain:
        result = sel.select(QUERY, record=True)
        assert result.read.server == "replica" and result.read.standby is False
        assert result.read.lag_s is None and result.read.fallback is None  # no replay position to compare
        assert [p.pair_id for p in result.selected] == [p.pair_id for p in plain.select(QUERY).selected]
        assert result.selection_id is not None  # recorded through the primary connection
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            sel.conn.execute("DELETE FROM selection")
        assert plain.select(QUERY).read is None


def test_an_unreachable_replica_falls_back_to_the_primary_with_one_warning(demo_db, tmp_path, capsys):
    read_url = f"postgresql://postgres@/scoi?host={tmp_path}"  # no server listens there
    with Selector("fr", "en", url=demo_db, read_url=read_url) as sel, Selector("fr", "en", url=demo_db) as plain:
        first, second = sel.select(QUERY), sel.select(QUERY)
        expected = [p.pair_id for p in plain.select(QUERY).selected]
    for result in (first, second):
        assert result.read.server == "primary" and "cannot be read" in result.read.fallback
        assert [p.pair_id for p in result.selected] == expected
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "reading from the primary: the replica (SCOI_READ_DATABASE_URL)" in warnings[0]


def test_a_replica_at_another_schema_revision_is_not_read(demo_db, server_url):
    with fresh_database(server_url) as other:
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute("UPDATE alembic_version SET version_num = '0001'")
        with Selector("fr", "en", url=demo_db, read_url=other) as sel:
            result = sel.select(QUERY)
    assert result.read.server == "primary"
    assert "schema is at revision 0001" in result.read.fallback
    assert result.selected  # from the primary's corpus: the other database holds none


def test_bad_max_lag_is_refused_with_the_value(demo_db):
    from typer.testing import CliRunner

    from scoi.cli.main import app

    result = CliRunner().invoke(app, ["select", QUERY, "--src", "fr", "--tgt", "en"],
                                env={"SCOI_DATABASE_URL": demo_db, "SCOI_READ_MAX_LAG": "soon"})
    assert result.exit_code == 1
    assert " ".join(result.stderr.split()) == (
        "error: SCOI_READ_MAX_LAG='soon': expected a number of seconds >= 0 (e.g. 5)")
