"""A running selector (a serve's, a worker's cached one) after `scoi reanalyze` switches the
stored sentences to another parser: it parses queries with the new one from the next
selection, and refuses to select while a reanalysis has the language on two schemes."""

from __future__ import annotations

import psycopg
import pytest

from ingest.reanalyze import ReanalyzeOptions, reanalyze, write_batch
from scoi.selection.selector import SelectionError, Selector
from tests.helpers.ingest import PIPELINES, demo_pairs, ingest_inprocess, write_tsv

QUERY = "Le chat dort sur le canapé du salon."


@pytest.fixture()
def small_db(db_url, tmp_path):
    ingest_inprocess(db_url, [write_tsv(tmp_path / "s.tsv", demo_pairs()[:30])])
    return db_url


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory) -> str:
    """The French pipeline saved as a directory: another analysis scheme (another parser name)."""
    import spacy

    path = tmp_path_factory.mktemp("frpipe") / "frpipe"
    spacy.load(PIPELINES["fr"]).to_disk(path)
    return str(path)


def test_a_running_selector_parses_with_the_parser_reanalyze_switched_to(small_db, pipeline_dir, capsys):
    with Selector("fr", "en", url=small_db) as running:
        before = running.select(QUERY)
        batch = running.query.analyze_batch([QUERY])  # parsed before the switch
        assert f"parser:{PIPELINES['fr']}==" in before.signature
        reanalyze(ReanalyzeOptions(langs=["fr"], parsers={"fr": pipeline_dir}), small_db)
        after = running.select(QUERY)
        again = running.select(QUERY, analysis=batch[0])
        with Selector("fr", "en", url=small_db) as fresh:
            expected = fresh.select(QUERY)
    assert after.signature == again.signature == expected.signature != before.signature
    assert f"parser:{pipeline_dir}==" in after.signature
    assert running.query.scheme.name == pipeline_dir
    assert [p.pair_id for p in after.selected] == [p.pair_id for p in expected.selected]
    assert after.query_terms == expected.query_terms
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and f"now analysed with {pipeline_dir}" in notes[0]


def test_a_running_selector_refuses_to_select_during_a_reanalysis(small_db, pipeline_dir):
    """Some sentences on the new parser, the rest on the old: two schemes until it ends."""
    from ingest.pipeline import scheme_parser
    from ingest.terms import TermResolver
    from scoi.analysis import analyzer
    from scoi.parsers import choose_parser

    with Selector("fr", "en", url=small_db) as running:
        running.select(QUERY)
        with psycopg.connect(small_db) as conn:  # the first batch of a reanalysis committed
            with conn.transaction():
                labels = scheme_parser(conn, "fr", choose_parser("fr", pipeline_dir))
            rows = conn.execute("SELECT id, text FROM sentence WHERE lang = 'fr' ORDER BY id LIMIT 5").fetchall()
            analyses = analyzer("fr", pipeline_dir).analyze([r[1] for r in rows])
            assert write_batch(conn, TermResolver(conn, {"fr": labels.parser_id}, {"fr": labels}), "fr",
                               [r[0] for r in rows], analyses) == 5
        for _ in range(2):  # at every selection, not only the first after the change
            with pytest.raises(SelectionError, match=r"2 different schemes .*scoi reanalyze --lang fr"):
                running.select(QUERY)
        reanalyze(ReanalyzeOptions(langs=["fr"], parsers={"fr": pipeline_dir}), small_db)
        assert f"parser:{pipeline_dir}==" in running.select(QUERY).signature  # the reanalysis ended
