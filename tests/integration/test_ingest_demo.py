"""The embedded server's bulk-load settings."""

from __future__ import annotations

import pytest


def test_embedded_server_gets_bulk_load_settings(server_url):
    """The embedded server is set up for bulk ingest (fewer checkpoints mid-run); a user's
    own server (SCOI_DATABASE_URL) is left as it is."""
    import os

    import psycopg

    from scoi.db.embedded import EMBEDDED_SETTINGS

    if os.environ.get("SCOI_DATABASE_URL"):
        pytest.skip("runs against the embedded server only")
    with psycopg.connect(server_url) as conn:
        got = {n: conn.execute("SELECT current_setting(%s)", (n,)).fetchone()[0] for n in EMBEDDED_SETTINGS}
    assert got == EMBEDDED_SETTINGS
