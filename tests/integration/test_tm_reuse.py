"""Translation-memory reuse: exact matches (scoi.core.exact, migration 0031, scoi.reuse) and
jobs that insert the stored translation instead of asking the model."""

from __future__ import annotations

import psycopg
from hypothesis import HealthCheck, given, settings, strategies as st

from scoi.core.exact import WHITESPACE, exact_sha, normalize
from scoi.reuse import exact_matches
from tests.helpers.hypothesis import examples

# Text the normalisation must treat as the database does: letters, combining marks,
# every whitespace character and a few that are not (U+200B, U+001F).
_TEXT = st.text(st.sampled_from(list(WHITESPACE) + list("ae\u0301\u00e9\u212b\u0041\u030a,.\u200b\x1fZ")),
                max_size=24)


@given(texts=st.lists(_TEXT, min_size=1, max_size=20))
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sql_normalisation_equals_python_normalisation(db_url, texts):
    # read only: the one database serves every example
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT exact_text(t), exact_sha(t) FROM unnest(%s::text[]) AS t", (texts,)).fetchall()
    assert [r[0] for r in rows] == [normalize(t) for t in texts]
    assert [bytes(r[1]) for r in rows] == [exact_sha(t) for t in texts]


def test_exact_match_ignores_spacing_and_composition_but_not_case(job_db):
    with psycopg.connect(job_db) as conn:
        stored = "Je m'appelle Marie."
        # a stored text that is not normalised (two spaces, decomposed é) is found too
        conn.execute("UPDATE sentence SET text = %(new)s, text_sha = sha256(convert_to(%(new)s, 'UTF8')) "
                     "WHERE lang = 'fr' AND text = %(old)s",
                     {"new": "Il fait  beau aujourd'hui.", "old": "Il fait beau aujourd'hui."})
        found = exact_matches(conn, "fr", "en", [stored, "  Je  m'appelle\tMarie. ", "je m'appelle marie.",
                                                  "Il fait beau aujourd'hui.", "Personne ne dit cela.", ""])
    assert found[stored].target == "My name is Marie."
    assert found["  Je  m'appelle\tMarie. "] == found[stored]
    assert found["Il fait beau aujourd'hui."].target == "The weather is nice today."
    assert set(found) == {stored, "  Je  m'appelle\tMarie. ", "Il fait beau aujourd'hui."}
