"""Alembic environment: migrations are plain SQL (see versions/), run on scoi's connection.

``scoi db upgrade`` passes its own connection in ``config.attributes["connection"]``;
plain ``alembic upgrade head`` (with alembic.ini at the repo root) uses the database
scoi would use (``SCOI_DATABASE_URL`` or the embedded server).
"""

from alembic import context

config = context.config


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    from scoi.db.engine import get_engine

    engine = get_engine(migrate=False)
    with engine.connect() as conn:
        context.configure(connection=conn, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
        conn.commit()


run()
