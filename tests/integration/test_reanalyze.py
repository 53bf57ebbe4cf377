"""A database as migration 0007 leaves one ingested before it (every sentence on a 'moses'
parser row, its tree built over its Moses tokens; ``old_db``, built once per session): what
it holds, and selection refusing old and mixed schemes, naming the command. ``scoi
reanalyze`` itself is checked end to end in tests/e2e/test_reanalyze.py.
"""

from __future__ import annotations

import psycopg
import pytest

from scoi.selection.selector import SelectionError, Selector
from tests.helpers.database import scalar
from tests.helpers.ingest import PIPELINES, assert_consistent, tree_size_problems
from tests.helpers.reanalyze import fresh_terms, schemes_in_use, stored_terms


# ------------------------------------------------------------------ tests
def test_old_scheme_database_is_what_0007_leaves(old_db):
    assert schemes_in_use(old_db) == [("en", "moses"), ("fr", "moses")]
    assert scalar(old_db, "SELECT count(*) FROM parser WHERE tree_tokens = 'spacy'") == 0
    assert_consistent(old_db)
    # Old trees: Moses tokens + 1 terms, unlike the authors' trees on a good share.
    assert scalar(old_db, """SELECT count(*) FROM sentence
                             WHERE (SELECT sum(m) FROM unnest(term_mults) m) <> n_tokens + 1""") == 0
    assert len(tree_size_problems(old_db)) == scalar(old_db, "SELECT count(*) FROM sentence")
    stored, fresh = stored_terms(old_db), fresh_terms(old_db)
    assert sum(stored[key] != fresh[key] for key in fresh) >= 50


def test_selection_refuses_mixed_schemes(old_db):
    """A few fr sentences moved to the current scheme: two schemes in use."""
    from ingest.pipeline import scheme_parser
    from ingest.reanalyze import write_batch
    from ingest.terms import TermResolver
    from scoi.analysis import analyzer
    from scoi.parsers import choose_parser

    with psycopg.connect(old_db) as conn:
        with conn.transaction():
            labels = scheme_parser(conn, "fr", choose_parser("fr", PIPELINES["fr"]))
        rows = conn.execute("SELECT id, text FROM sentence WHERE lang = 'fr' ORDER BY id LIMIT 10").fetchall()
        analyses = analyzer("fr", PIPELINES["fr"]).analyze([r[1] for r in rows])
        assert write_batch(conn, TermResolver(conn, {"fr": labels.parser_id}, {"fr": labels}), "fr",
                           [r[0] for r in rows], analyses) == 10
    with pytest.raises(SelectionError, match=r"2 different schemes .*/moses-tokens.*/spacy-tokens.*"
                                             r"scoi reanalyze --lang fr"):
        Selector("fr", "en", url=old_db)
    with pytest.raises(SelectionError, match="old scheme"):  # en is all old: refused too
        Selector("en", "fr", url=old_db)
