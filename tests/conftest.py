"""Shared fixtures: a real PostgreSQL (embedded, or SCOI_DATABASE_URL) and fresh databases,
and the tier markers.

A template database is migrated once per session; each test that asks for ``db_url``
gets its own copy (``CREATE DATABASE ... TEMPLATE``), procrastinate style. The job tests'
demo-corpus database and the reanalyze tests' old-scheme database are built once per
session the same way, then copied per test.

Every test is marked with its tier, the folder it is in (``unit``, ``integration``,
``e2e``), so ``pytest -m unit`` runs the fast tier alone (add ``--hypothesis-profile=quick``
for a tenth of the property-test examples). ``tests/unit/conftest.py`` keeps
the database away from the unit tier.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers.database import TEMPLATE, fresh_database
from tests.helpers.hypothesis import QUICK_MAX_EXAMPLES
from tests.helpers.ingest import demo_pairs, few_pairs

# `pytest --hypothesis-profile=quick`: property tests run a tenth of their examples
# (tests/helpers/hypothesis.py), for the edit-test loop; the default runs them all.
settings.register_profile("quick", max_examples=QUICK_MAX_EXAMPLES)

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier: the first folder below tests/."""
    for item in items:
        try:
            tier = item.path.resolve().relative_to(TESTS).parts[0]
        except ValueError:  # a test file from outside tests/
            continue
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))


# ------------------------------------------------------------------ the server and fresh databases
@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """libpq URL of a server scoi tests may create databases on. An embedded server the
    suite starts is stopped, and its home removed, when the session ends."""
    from scoi.db.embedded import stop_embedded
    from scoi.db.engine import dispose_engines, resolve_database

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


@pytest.fixture()
def db_url(server_url: str, template_url: str):
    """A fresh, migrated database for one test."""
    with fresh_database(server_url) as url:
        yield url


# ------------------------------------------------------------------ jobs: the demo corpus, a tiny model
@pytest.fixture(scope="session")
def corpus_template(server_url: str, template_url: str):
    """Name of a database with the demo corpus ingested (once per session)."""
    from scoi.db.engine import create_database, dispose_engines, drop_database
    from tests.helpers.ingest import DEMO, ingest_inprocess

    name = f"scoi_jobs_corpus_{uuid.uuid4().hex[:8]}"
    url = create_database(server_url, name, template=TEMPLATE, drop=True)
    ingest_inprocess(url, [DEMO])
    dispose_engines()  # a template must have no open connections
    yield name
    drop_database(server_url, name)


@pytest.fixture()
def job_db(server_url: str, corpus_template: str):
    """A fresh database holding the demo corpus, for one test."""
    with fresh_database(server_url, corpus_template) as url:
        yield url


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """Backend spec of a tiny random-weight Llama built in a temp dir."""
    from tests.tiny_model import build_tiny_model

    return "hf:" + str(build_tiny_model(tmp_path_factory.mktemp("tiny_llama")))


# ------------------------------------------------------------------ reanalyze: a pre-0007 database
@pytest.fixture(scope="session")
def old_template(server_url: str, template_url: str):
    """Name of a database holding the demo corpus on the old scheme (a template)."""
    from scoi.db.engine import create_database, dispose_engines, drop_database
    from tests.helpers.ingest import DEMO, ingest_inprocess
    from tests.helpers.reanalyze import to_old_scheme

    name = f"scoi_test_old_{uuid.uuid4().hex[:8]}"
    url = create_database(server_url, name, template=TEMPLATE, drop=False)
    try:
        ingest_inprocess(url, [DEMO])
        to_old_scheme(url)
        dispose_engines()
        yield name
    finally:
        dispose_engines()
        drop_database(server_url, name)


@pytest.fixture()
def old_db(server_url: str, old_template: str):
    """A fresh copy of the old-scheme demo database, for one test."""
    with fresh_database(server_url, old_template) as url:
        yield url


@pytest.fixture(scope="session")
def pairs() -> list:
    """The demo corpus's (fr, en) pairs: the ingest tests' input."""
    return demo_pairs()


@pytest.fixture(scope="session")
def few(pairs: list) -> list:
    """A dozen demo pairs with the punctuation that trips tokenisers."""
    return few_pairs(pairs)
