"""The writer's hand-written literals (arrays, COPY fields, sparsevec) read back as what they came from."""

from __future__ import annotations

import psycopg
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.db.literals import VECTOR_WIDTH, bytea_array, copy_text, int_array, sparsevec, text_array

# Any text the readers can hand over (decoded UTF-8, so no lone surrogates; NUL rows are
# rejected): quotes, backslashes, braces, commas, spaces, "NULL", empty strings, non-ASCII.
TOKENS = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                          max_size=6)
                  | st.sampled_from(['"', "\\", "{", "}", ",", "NULL", "", " ", "l'", "·", "\t", "\n"]),
                  max_size=8)


@settings(max_examples=300, deadline=None)
@given(tokens=TOKENS, ints=st.lists(st.integers(-2**31, 2**31 - 1), max_size=8),
       blobs=st.lists(st.binary(max_size=33), max_size=5))
def test_array_literals_round_trip(server_url, tokens, ints, blobs) -> None:
    with psycopg.connect(server_url) as conn:
        got_text, got_int, got_bytes = conn.execute(
            "SELECT %s::text[], %s::int[], %s::bytea[]", (text_array(tokens), int_array(ints), bytea_array(blobs))).fetchone()
    assert got_text == tokens
    assert got_int == ints
    assert got_bytes == blobs


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(TOKENS.map(lambda t: "".join(t)), TOKENS), min_size=1, max_size=5))
def test_copy_text_rows_round_trip(server_url, rows) -> None:
    """Hand-built COPY rows (the writer's path): a text field and a text[] field."""
    with psycopg.connect(server_url) as conn:
        conn.execute("CREATE TEMP TABLE t (i int, s text, a text[])")
        with conn.cursor().copy("COPY t (i, s, a) FROM STDIN") as cp:
            cp.write("".join(f"{i}\t{copy_text(s)}\t{copy_text(text_array(a))}\n" for i, (s, a) in enumerate(rows)))
        assert conn.execute("SELECT s, a FROM t ORDER BY i").fetchall() == rows


def test_array_literals_through_copy(db_url) -> None:
    """COPY's own escaping (backslashes, tabs, newlines) on top of the array syntax."""
    rows = [["a\\b", 'c"d', "\t", "\n", "{x}"], [], ["NULL", ""]]
    with psycopg.connect(db_url) as conn:
        conn.execute("CREATE TEMP TABLE t (i int, a text[])")
        with conn.cursor().copy("COPY t (i, a) FROM STDIN") as cp:
            for i, r in enumerate(rows):
                cp.write_row((i, text_array(r)))
        assert [r[0] for r in conn.execute("SELECT a FROM t ORDER BY i")] == rows


@settings(max_examples=50, deadline=None)
@given(exps=st.dictionaries(st.integers(0, VECTOR_WIDTH - 1), st.integers(1, 40), max_size=8))
def test_sparsevec_literal_matches_pgvector(template_url, exps) -> None:
    """A term's exponents as sparsevec text read back by pgvector: 1-based, sorted, same powers."""
    with psycopg.connect(template_url) as conn:
        got = conn.execute("SELECT %s::sparsevec(1024)::text", (sparsevec(exps),)).fetchone()[0]
    body = ",".join(f"{i + 1}:{p}" for i, p in sorted(exps.items()))
    assert got == f"{{{body}}}/{VECTOR_WIDTH}"
