"""The writer's hand-written array literals read back as the lists they came from."""

from __future__ import annotations

import psycopg
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.writer import int_array, text_array

# Any text the readers can hand over (decoded UTF-8, so no lone surrogates; NUL rows are
# rejected): quotes, backslashes, braces, commas, spaces, "NULL", empty strings, non-ASCII.
TOKENS = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                          max_size=6)
                  | st.sampled_from(['"', "\\", "{", "}", ",", "NULL", "", " ", "l'", "·", "\t", "\n"]),
                  max_size=8)


@settings(max_examples=300, deadline=None)
@given(tokens=TOKENS, ints=st.lists(st.integers(-2**31, 2**31 - 1), max_size=8))
def test_array_literals_round_trip(server_url, tokens, ints) -> None:
    with psycopg.connect(server_url) as conn:
        got_text, got_int = conn.execute("SELECT %s::text[], %s::int[]", (text_array(tokens), int_array(ints))).fetchone()
    assert got_text == tokens
    assert got_int == ints


def test_array_literals_through_copy(db_url) -> None:
    """COPY's own escaping (backslashes, tabs, newlines) on top of the array syntax."""
    rows = [["a\\b", 'c"d', "\t", "\n", "{x}"], [], ["NULL", ""]]
    with psycopg.connect(db_url) as conn:
        conn.execute("CREATE TEMP TABLE t (i int, a text[])")
        with conn.cursor().copy("COPY t (i, a) FROM STDIN") as cp:
            for i, r in enumerate(rows):
                cp.write_row((i, text_array(r)))
        assert [r[0] for r in conn.execute("SELECT a FROM t ORDER BY i")] == rows
