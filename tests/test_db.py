"""The database layer: embedded server, migrations up and down."""

import psycopg

from scoi.db.engine import get_engine
from scoi.db.migrate import current_revision, downgrade, head_revision, upgrade


def test_migrations_up_down_up(db_url):
    engine = get_engine(db_url)
    assert current_revision(engine) == head_revision()
    downgrade(engine, "base")
    assert current_revision(engine) is None
    with psycopg.connect(db_url) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' "
                              "AND tablename <> 'alembic_version'").fetchone()[0]
    assert tables == 0
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_vector_extension_and_l1_operator(db_url):
    with psycopg.connect(db_url) as conn:
        d = conn.execute("SELECT '{1:2,3:1}/1024'::sparsevec <+> '{1:1,5:1}/1024'::sparsevec").fetchone()[0]
    assert d == 3
