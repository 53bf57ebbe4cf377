"""Storage: connection handling, migrations and the SQL scoi runs."""
