"""PostgreSQL text literals built by hand: array parameters, COPY text fields, sparsevec.

The writer's measured fast path (docs/schema.md, "Writes"): psycopg's ``write_row`` and
list dumping work field by field and element by element in Python, which was most of the
ingest writer's client time (a million postings per 42k pairs). Each helper here is
checked against PostgreSQL's own parsing in tests/integration/test_ingest_writer_literals.py; the
sparsevec text comes from pgvector's own type.
"""

from __future__ import annotations

from pgvector import SparseVector

VECTOR_WIDTH = 1024  # term.exps and selection_query_term.exps are sparsevec(1024)


def text_array(values: list[str]) -> str:
    """PostgreSQL array literal of strings, every element quoted."""
    if not values:
        return "{}"
    body = '","'.join(values)
    if "\\" in body or '"' in body:  # rare: escape element by element
        body = '","'.join(v.replace("\\", "\\\\").replace('"', '\\"') for v in values)
    return '{"' + body + '"}'


def int_array(values: list[int]) -> str:
    """PostgreSQL array literal of integers."""
    return "{" + ",".join(map(str, values)) + "}"


def bytea_array(values: list[bytes]) -> str:
    """PostgreSQL array literal of byte strings (bytea hex format)."""
    return "{" + ",".join(f'"\\\\x{v.hex()}"' for v in values) + "}"


def copy_text(value: str) -> str:
    """A text field escaped for COPY's text format (backslash, tab, newline, carriage return)."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return value


def sparsevec(exps: dict[int, int]) -> str:
    """``sparsevec(1024)`` literal of 0-based dimension -> power (a term's label exponents)."""
    return SparseVector(exps, VECTOR_WIDTH).to_text()
