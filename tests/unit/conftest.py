"""The unit tier uses no database: the database fixtures fail here, and ``scoi`` code that
would reach for a server on its own (``SCOI_DATABASE_URL`` unset starts the embedded one)
is pointed at a socket folder that does not exist, so it fails at once instead."""

from __future__ import annotations

import pytest

NO_DATABASE = "postgresql://unit-tests@/use_no_database?host=/nonexistent/scoi-unit-tests"


def _no_database(name: str):
    @pytest.fixture(name=name, scope="session")
    def refuse():
        pytest.fail(f"a unit test asked for '{name}': unit tests use no database "
                    "(a test that needs PostgreSQL belongs in tests/integration or tests/e2e)", pytrace=False)

    return refuse


server_url = _no_database("server_url")
template_url = _no_database("template_url")


@pytest.fixture(autouse=True)
def _unit_tests_use_no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOI_DATABASE_URL", NO_DATABASE)
