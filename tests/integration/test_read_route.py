"""Where selection reads when the read URL is not a healthy replica (scoi.db.reads): a server
that is not a standby, an unreachable one, one at another schema revision. The real replica
is tested in tests/e2e/test_read_replica.py."""

from __future__ import annotations

import psycopg
import pytest

from scoi.selection.selector import Selector
from tests.helpers.database import fresh_database
from tests.helpers.ingest import DEMO, ingest_inprocess, write_tsv

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
            sel.reader.execute("DELETE FROM selection")
        assert plain.select(QUERY).read is None


def test_an_unreachable_replica_falls_back_to_the_primary_with_one_warning_naming_the_cause(demo_db, tmp_path,
                                                                                          capsys):
    read_url = f"postgresql://postgres@/scoi?host={tmp_path}"  # no server listens there
    with Selector("fr", "en", url=demo_db, read_url=read_url) as sel, Selector("fr", "en", url=demo_db) as plain:
        first, second = sel.select(QUERY), sel.select(QUERY)
        expected = [p.pair_id for p in plain.select(QUERY).selected]
    for result in (first, second):
        assert result.read.server == "primary" and "cannot be read" in result.read.fallback
        assert str(tmp_path) in result.read.fallback  # the cause, also while not tried again
        assert "\n" not in result.read.fallback
        assert [p.pair_id for p in result.selected] == expected
    assert "not tried again for" in second.read.fallback
    err = capsys.readouterr().err.strip().splitlines()
    warnings = [line for line in err if line.startswith("warning:")]
    assert len(warnings) == 1 and "reading from the primary: the replica (SCOI_READ_DATABASE_URL)" in warnings[0]
    assert str(tmp_path) in warnings[0] and len(err) == 1


def test_another_database_of_the_server_is_not_read_as_a_replica(demo_db, server_url, tmp_path, capsys):
    """SCOI_READ_DATABASE_URL naming another migrated scoi database: its pair ids are not the
    primary's, so it is never read (before, picks were recorded pointing at unrelated pairs)."""
    with fresh_database(server_url) as other:
        own = [("C'est une petite bibliothèque.", "It's a small library."), (QUERY, "A sofa.")]
        ingest_inprocess(other, [write_tsv(tmp_path / "other.tsv", own)])  # a scoi database, pairs of its own
        with Selector("fr", "en", url=demo_db, read_url=other) as sel, Selector("fr", "en", url=demo_db) as plain:
            result = sel.select(QUERY, record=True)
            again = sel.select(QUERY)
            expected = [p.pair_id for p in plain.select(QUERY).selected]
    assert result.read.server == again.read.server == "primary"
    assert "is not a standby of the primary: it names database" in result.read.fallback
    assert [p.pair_id for p in result.selected] == expected
    with psycopg.connect(demo_db) as conn:  # recorded on the primary, each pick a pair there
        recorded = [r[0] for r in conn.execute("SELECT pair_id FROM selection_pick WHERE selection_id = %s "
                                               "ORDER BY position", [result.selection_id])]
    assert recorded == expected
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "not a standby of the primary" in warnings[0]


def test_a_replica_at_another_schema_revision_is_not_read(demo_db):
    read_url = with_param(demo_db, "application_name=scoi-behind")  # the identity check passes: the same server
    with psycopg.connect(demo_db, autocommit=True) as conn:
        head = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
        try:
            with Selector("fr", "en", url=demo_db, read_url=read_url) as sel:
                result = sel.select(QUERY)
        finally:
            conn.execute("UPDATE alembic_version SET version_num = %s", [head])
    assert result.read.server == "primary"
    assert "schema is at revision 0001" in result.read.fallback
    assert result.selected


def test_bad_max_lag_is_refused_with_the_value(demo_db):
    from typer.testing import CliRunner

    from scoi.cli.main import app

    result = CliRunner().invoke(app, ["select", QUERY, "--src", "fr", "--tgt", "en"],
                                env={"SCOI_DATABASE_URL": demo_db, "SCOI_READ_MAX_LAG": "soon"})
    assert result.exit_code == 1
    assert " ".join(result.stderr.split()) == (
        "error: SCOI_READ_MAX_LAG='soon': expected a number of seconds >= 0 (e.g. 5)")
