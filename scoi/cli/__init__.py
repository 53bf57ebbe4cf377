"""Thin command-line interface over the library (Typer)."""
