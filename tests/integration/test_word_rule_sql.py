"""The coverage-gaps view (``selection_gap``) counts a token as a word by the SQL function
``is_word(text)`` (migration 0040); the page and ``/api/select``'s coverage count it by
scoi.core.coverage.is_word (a letter or digit: Unicode L and N). The two agree on every code
point, and the SQL rule means the same whatever the database's locale or the text's
collation: its class is a list of code-point ranges, not ``[[:alnum:]]`` (which followed
LC_CTYPE). The literal's equality with the Python rule: tests/unit/test_word_rule.py."""

from __future__ import annotations

import string
import sys
import uuid

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from scoi.core.coverage import is_word
from scoi.db.engine import get_engine
from scoi.db.migrate import downgrade, upgrade
from tests.helpers.migrations import migration_constant

#: the class migration 0040 embeds, read from the file
WORD_CLASS = migration_constant("0040_word_rule.py", "WORD_CLASS")
#: every code point PostgreSQL's chr() takes (no NUL, no surrogates)
CODE_POINTS = "FROM generate_series(1, %(top)s) AS cp WHERE (cp < 55296 OR cp > 57343)"
#: tokens whose fate differed under '[[:alnum:]]' (C.UTF-8), and plain ones
TOKENS = ["x²", "²", "½", "ⓐ", "\u0301", "\u0903", "é", "٣", "日本", "--", "«", "€", "3,5"]


def sql_words(conn: psycopg.Connection, test: sql.Composable, params: dict | None = None) -> set[int]:
    query = sql.SQL("SELECT coalesce(array_agg(cp), '{{}}') {} AND {}").format(sql.SQL(CODE_POINTS), test)
    return set(conn.execute(query, {"top": sys.maxunicode, **(params or {})}).fetchone()[0])


def python_words() -> set[int]:
    return {cp for cp in range(1, sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF and is_word(chr(cp))}


def test_the_gaps_view_counts_words_by_the_python_rule_on_every_code_point(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        view = conn.execute("SELECT pg_get_viewdef('selection_gap'::regclass)").fetchone()[0]
        assert "is_word(w.unit)" in view and "alnum" not in view
        words = sql_words(conn, sql.SQL("is_word(chr(cp))"))
    ours = python_words()
    assert len(ours) > 130_000
    assert sorted(hex(cp) for cp in words ^ ours)[:20] == []


def test_the_gaps_view_lists_the_tokens_is_word_keeps(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        sid = conn.execute("INSERT INTO selection (query, src_lang, tgt_lang, method, k, params, signature, "
                           "query_tokens) VALUES (%s, 'fr', 'en', 'scoi', 2, '{}', 'test', %s) RETURNING id",
                           (" ".join(TOKENS), TOKENS)).fetchone()[0]
        units = {r[0] for r in conn.execute("SELECT unit FROM selection_gap WHERE selection_id = %s AND kind = 'word'",
                                            (sid,))}
    assert units == {t for t in TOKENS if is_word(t)}
    assert {"²", "½"} <= units and not {"ⓐ", "\u0301", "\u0903"} & units  # where [[:alnum:]] erred


def test_the_word_class_matches_by_code_point_whatever_the_collation(db_url: str) -> None:
    """Bracket ranges compare code points in a UTF8 database: the same set under the C,
    builtin, libc and ICU collations of the list below that the server has, and under the
    database's own. A class that follows the collation would show here: ``[[:alnum:]]`` does."""
    with psycopg.connect(db_url) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT collname FROM pg_collation WHERE collencoding IN (-1, 6) AND (collname IN "
            "('C', 'POSIX', 'ucs_basic', 'pg_c_utf8', 'pg_unicode_fast', 'C.utf8', 'en_US.utf8', 'tr_TR.utf8', "
            "'und-x-icu', 'en-x-icu', 'tr-x-icu') "
            "OR collname = (SELECT datcollate FROM pg_database WHERE datname = current_database())) "
            "ORDER BY collname")]
        assert {"C", "POSIX"} <= set(names)
        base = sql_words(conn, sql.SQL("is_word(chr(cp))"))
        for name in names:
            collated = sql_words(conn, sql.SQL("is_word(chr(cp) COLLATE {})").format(sql.Identifier(name)))
            assert sorted(hex(cp) for cp in collated ^ base)[:20] == [], name
        ctype = conn.execute("SELECT datctype FROM pg_database WHERE datname = current_database()").fetchone()[0]
        if ctype not in ("C", "POSIX"):  # the database's locale has more than ASCII letters
            alnum = sql.SQL("chr(cp) ~ '[[:alnum:]]'")
            assert sql_words(conn, sql.SQL("chr(cp) COLLATE \"C\" ~ '[[:alnum:]]'")) != sql_words(conn, alnum)


def test_the_word_class_means_the_same_in_a_database_made_with_the_c_locale(server_url: str, db_url: str) -> None:
    name = f"scoi_test_c_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
                      .format(sql.Identifier(name)))
        try:
            with psycopg.connect(make_conninfo(server_url, dbname=name)) as conn:
                in_c = sql_words(conn, sql.SQL("chr(cp) ~ %(class)s"), {"class": WORD_CLASS})
                ascii_alnum = {ord(ch) for ch in string.ascii_letters + string.digits}
                assert sql_words(conn, sql.SQL("chr(cp) ~ '[[:alnum:]]'")) == ascii_alnum  # under C: ASCII only
        finally:
            admin.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(db_url) as conn:
        assert in_c == sql_words(conn, sql.SQL("is_word(chr(cp))"))


def test_migration_0040_downgrade_restores_alnum_and_drops_the_function(db_url: str) -> None:
    engine = get_engine(db_url)
    try:
        with psycopg.connect(db_url) as conn:
            ours = conn.execute("SELECT pg_get_viewdef('selection_gap'::regclass)").fetchone()[0]
            before = conn.execute("SELECT obj_description('selection_gap'::regclass), "
                                  "pg_get_viewdef('job_gap'::regclass)").fetchone()
        downgrade(engine, "0039")
        with psycopg.connect(db_url) as conn:
            view = conn.execute("SELECT pg_get_viewdef('selection_gap'::regclass)").fetchone()[0]
            assert view == ours.replace("is_word(w.unit)", "(w.unit ~ '[[:alnum:]]'::text)")  # 0021's, as was
            assert conn.execute("SELECT to_regprocedure('is_word(text)')").fetchone()[0] is None
        upgrade(engine)
        with psycopg.connect(db_url) as conn:
            assert "is_word(w.unit)" in conn.execute("SELECT pg_get_viewdef('selection_gap'::regclass)").fetchone()[0]
            assert conn.execute("SELECT obj_description('selection_gap'::regclass), "
                                "pg_get_viewdef('job_gap'::regclass)").fetchone() == before
    finally:
        engine.dispose()

