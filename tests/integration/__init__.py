"""Tests against a real PostgreSQL and real parsers and models, in this process."""
