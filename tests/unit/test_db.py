"""The database layer without a database: URLs as libpq reads them."""


def test_libpq_url_without_sqlalchemy():
    """URLs mean to libpq what SQLAlchemy's rewriting made of them, for the forms users give."""
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import make_url

    from scoi.db.engine import _libpq_url

    for url in ["postgresql+psycopg://u:p%40ss@db-host:5433/scoi?sslmode=require",
                "postgresql://scoi@/scoi?host=/tmp/pg", "postgres://u@h/d", "postgresql+psycopg2://h/d"]:
        before = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        assert _libpq_url(url).startswith("postgresql://")
        assert conninfo_to_dict(_libpq_url(url)) == conninfo_to_dict(before)
