"""scoi's tests, in three tiers: ``unit`` (no database), ``integration`` (real PostgreSQL
and parsers) and ``e2e`` (the ``scoi`` command end to end). Shared helpers live in
``tests.helpers``; the slow literal implementations the fast paths are checked against in
``tests.reference``."""
