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


def test_array_columns_without_statistics_up_and_down(db_url):
    """0006: ANALYZE skips the array columns no query filters on; downgrade restores the default."""
    def targets():
        with psycopg.connect(db_url) as conn:
            return dict(conn.execute(
                "SELECT attrelid::regclass::text || '.' || attname, attstattarget FROM pg_attribute "
                "WHERE attrelid IN ('sentence'::regclass, 'bm25_doc'::regclass) AND attnum > 0 "
                "AND NOT attisdropped AND atttypid::regtype::text LIKE '%[]'").fetchall())

    skipped = {"sentence.tokens": 0, "sentence.term_keys": 0, "sentence.term_mults": 0,
               "bm25_doc.token_ids": 0, "bm25_doc.tfs": 0}
    assert targets() == skipped
    engine = get_engine(db_url)
    downgrade(engine, "0005")
    assert set(targets().values()) <= {-1, None}  # the default (NULL from PostgreSQL 17 on)
    upgrade(engine)
    assert targets() == skipped


def test_bulk_write_settings_up_and_down(db_url):
    """0005: vocab pages keep room for HOT df updates; pair and sentence lose their per-row
    foreign-key triggers (except pair -> corpus); downgrade restores both."""
    def state():
        with psycopg.connect(db_url) as conn:
            options = conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'vocab'").fetchone()[0]
            fks = conn.execute("SELECT conname FROM pg_constraint WHERE contype = 'f' "
                               "AND conrelid IN ('pair'::regclass, 'sentence'::regclass) ORDER BY 1").fetchall()
        return options, [name for (name,) in fks]

    assert state() == (["fillfactor=50"], ["pair_corpus_id_fkey"])
    engine = get_engine(db_url)
    downgrade(engine, "0004")
    assert state() == (None, ["pair_a_id_fkey", "pair_b_id_fkey", "pair_corpus_id_fkey", "pair_run_id_fkey",
                              "sentence_parser_id_fkey"])
    upgrade(engine)
    assert state() == (["fillfactor=50"], ["pair_corpus_id_fkey"])


def test_start_up_migration_check_without_alembic(db_url, server_url):
    """The check every command makes (``ensure_migrated``) reads the head from the revision
    files' text and agrees with Alembic; a database below head, or without the table,
    is not at head, and ensure_migrated then migrates it."""
    from scoi.db.engine import create_database, drop_database, ensure_migrated
    from scoi.db.migrate import at_head, known_heads

    assert known_heads() == {head_revision()}
    assert at_head(db_url)
    engine = get_engine(db_url)
    downgrade(engine, "0001")
    assert not at_head(db_url)
    ensure_migrated(db_url)
    assert at_head(db_url) and current_revision(engine) == head_revision()
    empty = create_database(server_url, "scoi_test_unmigrated")
    try:
        assert not at_head(empty)  # no alembic_version table
        ensure_migrated(empty)
        assert at_head(empty)
    finally:
        from scoi.db.engine import dispose_engines

        dispose_engines()
        drop_database(server_url, "scoi_test_unmigrated")


def test_connect_registers_pgvector_types_where_the_extension_is(db_url, server_url):
    from pgvector import SparseVector

    from scoi.db import connect

    with connect(db_url) as conn:
        value = conn.execute("SELECT '{1:2,3:1}/1024'::sparsevec").fetchone()[0]
        assert isinstance(value, SparseVector)
        assert (value.dimensions(), value.indices(), value.values()) == (1024, [0, 2], [2.0, 1.0])
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS  # not autocommit
    from scoi.db.engine import server_url as same_server

    with connect(same_server(server_url, "postgres"), autocommit=True) as conn:  # no extension there
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0] == 0
        assert conn.execute("SELECT 1").fetchone()[0] == 1


def test_rbm25_ctq_of_stored_rows_becomes_moses(db_url):
    """0018: ``ctq`` now names the published tokenization; jobs, schedules and recorded
    selections stored as ``ctq`` (Moses tokens) are renamed ``moses``, so none changes
    meaning; downgrade renames them back."""
    engine = get_engine(db_url)
    downgrade(engine, "0015")
    sig = "fr-en|method:rbm25|rbm25:ctq|k:4|pool:100"
    with psycopg.connect(db_url) as conn:
        for name, method, params in [("a", "rbm25", '{"rbm25_variant": "ctq"}'), ("b", "rbm25", "{}"),
                                     ("c", "rbm25", '{"rbm25_variant": "agrawal"}'), ("d", "scoi", "{}")]:
            conn.execute("INSERT INTO job (name, src_lang, tgt_lang, method, k, model, template, params, signature) "
                         "VALUES (%s, 'fr', 'en', %s, 4, 'm', 'xglm', %s, %s)",
                         [name, method, params, sig.replace("rbm25:ctq", "rbm25:agrawal") if name == "c" else sig])
        conn.execute("INSERT INTO selection (query, src_lang, tgt_lang, method, k, params, signature, query_tokens) "
                     "VALUES ('q', 'fr', 'en', 'rbm25', 4, '{\"rbm25_variant\": \"ctq\"}', %s, '{q}')", [sig])
        conn.execute("INSERT INTO schedule (name, cron, spec) VALUES ('s', '* * * * *', "
                     "'{\"method\": \"rbm25\", \"rbm25_variant\": \"ctq\"}')")
    upgrade(engine)
    with psycopg.connect(db_url) as conn:
        jobs = dict((n, (p.get("rbm25_variant"), s)) for n, p, s in conn.execute(
            "SELECT name, params, signature FROM job"))
        assert jobs == {"a": ("moses", sig.replace("ctq", "moses")), "b": ("moses", sig.replace("ctq", "moses")),
                        "c": ("agrawal", sig.replace("ctq", "agrawal")), "d": (None, sig)}
        assert conn.execute("SELECT params->>'rbm25_variant', signature FROM selection").fetchone() == \
            ("moses", sig.replace("ctq", "moses"))
        assert conn.execute("SELECT spec->>'rbm25_variant' FROM schedule").fetchone()[0] == "moses"
    downgrade(engine, "0015")
    with psycopg.connect(db_url) as conn:
        assert conn.execute("SELECT params->>'rbm25_variant', signature FROM job WHERE name = 'a'").fetchone() == \
            ("ctq", sig)
    upgrade(engine)
