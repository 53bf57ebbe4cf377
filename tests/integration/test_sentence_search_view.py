"""Migration 0038: ``sentence.tsv`` is no longer stored; ``sentence_search`` computes the
same tsvector for people's own full-text queries, and a downgrade stores it again."""

from __future__ import annotations

import psycopg

from scoi.db.engine import get_engine
from scoi.db.migrate import downgrade, upgrade
from tests.helpers.ingest import ingest_inprocess, write_tsv

PAIRS = [("Le chat dort sur le canapé rouge.", "The cat sleeps on the red sofa."),
         ("Un chien aboie dans la rue.", "A dog barks in the street."),
         ("Le chat mange.", "The cat eats.")]


def test_sentence_search_matches_full_text_queries_and_the_downgrade_stores_tsv_again(db_url, tmp_path):
    ingest_inprocess(db_url, [write_tsv(tmp_path / "p.tsv", PAIRS)])
    query = ("SELECT text FROM sentence_search WHERE lang = 'fr' AND tsv @@ plainto_tsquery('simple', 'chat') "
             "ORDER BY text")
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.columns "
                            "WHERE table_name = 'sentence' AND column_name = 'tsv'").fetchone()[0] == 0
        assert [r[0] for r in conn.execute(query)] == ["Le chat dort sur le canapé rouge.", "Le chat mange."]
        assert conn.execute("SELECT bool_and(tsv = to_tsvector('simple', text)) FROM sentence_search").fetchone()[0]
    engine = get_engine(db_url)
    try:
        downgrade(engine, "0034")
        with psycopg.connect(db_url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM sentence WHERE tsv @@ plainto_tsquery('simple', 'chat') "
                                "AND lang = 'fr'").fetchone()[0] == 2
            assert conn.execute("SELECT to_regclass('sentence_tsv_idx') IS NOT NULL").fetchone()[0]
        upgrade(engine)
        with psycopg.connect(db_url, autocommit=True) as conn:
            assert [r[0] for r in conn.execute(query)] == ["Le chat dort sur le canapé rouge.", "Le chat mange."]
            assert conn.execute("SELECT count(*) FROM pair").fetchone()[0] == 3
    finally:
        engine.dispose()
