"""Test fixtures: a real PostgreSQL (embedded, or SCOI_DATABASE_URL) and fresh databases.

A template database is migrated once per session; each test that asks for ``db_url``
gets its own copy (``CREATE DATABASE ... TEMPLATE``), procrastinate style.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TEMPLATE = "scoi_test_template"


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """libpq URL of a server scoi tests may create databases on. An embedded server the
    suite starts is stopped, and its home removed, when the session ends."""
    from scoi.db.engine import dispose_engines, resolve_database, stop_embedded

    if os.environ.get("SCOI_DATABASE_URL"):
        yield resolve_database().url
        return
    home = tmp_path_factory.mktemp("scoi_home")
    if os.geteuid() == 0:  # the server runs as 'pgserver'; scoi opens no folder (README: The embedded database)
        home = Path(tempfile.mkdtemp(prefix="scoi-test-"))
        home.chmod(0o755)
    os.environ["SCOI_HOME"] = str(home)
    try:
        yield resolve_database().url
    finally:
        dispose_engines()
        stop_embedded()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def template_url(server_url: str) -> str:
    from scoi.db.engine import create_database, dispose_engines, get_engine

    url = create_database(server_url, TEMPLATE)
    get_engine(url)  # migrate
    dispose_engines()  # a template must have no open connections
    return url


@contextmanager
def fresh_database(server_url: str, template: str = TEMPLATE) -> Iterator[str]:
    """A new database copied from ``template``, dropped afterwards."""
    from scoi.db.engine import create_database, dispose_engines, drop_database

    name = f"scoi_test_{uuid.uuid4().hex[:10]}"
    url = create_database(server_url, name, template=template, drop=False)
    try:
        yield url
    finally:
        dispose_engines()
        drop_database(server_url, name)


@pytest.fixture()
def db_url(server_url: str, template_url: str):
    """A fresh, migrated database for one test."""
    with fresh_database(server_url) as url:
        yield url


def scoi_env(db_url: str, **extra: str) -> dict[str, str]:
    """Environment for running the ``scoi`` CLI as a subprocess against ``db_url``."""
    env = dict(os.environ)
    env["SCOI_DATABASE_URL"] = db_url
    env.update(extra)
    return env


def run_scoi(args: list[str], db_url: str, *, check: bool = False, timeout: float = 300,
             **kwargs) -> subprocess.CompletedProcess:
    """Run ``python -m scoi.cli.main ARGS`` the way a user runs ``scoi``."""
    proc = subprocess.run([sys.executable, "-m", "scoi.cli.main", *args], env=scoi_env(db_url),
                          capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"scoi {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc
