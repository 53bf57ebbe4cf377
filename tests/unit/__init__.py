"""Tests of pure code: no database, no parser pipeline, no model; seconds in all."""
