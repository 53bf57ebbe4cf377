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


def test_vocab_pages_keep_room_for_hot_df_updates(db_url):
    """0005: ingest updates vocab.df every batch; with free space in the pages those are
    HOT updates (no index entries), and the setting goes away on downgrade."""
    def options():
        with psycopg.connect(db_url) as conn:
            return conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'vocab'").fetchone()[0]

    assert options() == ["fillfactor=50"]
    engine = get_engine(db_url)
    downgrade(engine, "0004")
    assert options() is None
    upgrade(engine)
    assert options() == ["fillfactor=50"]
