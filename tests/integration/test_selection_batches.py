"""The selector's batch protocol against a real database: ``warm`` (load, or parse and
preselect a batch together) and ``select_many`` give the selections ``select`` gives one
by one; the pool seam answers a PoolResult; recording goes to the primary."""

from __future__ import annotations

import psycopg
import pytest

from scoi.selection.selector import BATCH, Selector
from tests.helpers.database import scratch_database
from tests.helpers.ingest import DEMO, DEMO_TEST, demo_pairs, ingest_inprocess


@pytest.fixture(scope="module")
def demo_db(server_url, template_url):
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        yield url


@pytest.fixture(scope="module")
def queries():
    return [fr for fr, _ in demo_pairs(DEMO_TEST)]


def shape(result) -> tuple:
    return ([c.pair_id for c in result.candidates], [(p.pair_id, p.criterion) for p in result.selected],
            result.certified, result.signature)


def test_select_many_equals_select_one_by_one_and_records_on_the_primary(demo_db, queries):
    with Selector("fr", "en", url=demo_db, pool=20) as sel:
        alone = [shape(sel.select(q, k=3)) for q in queries]
        many = list(sel.select_many(queries, k=3, record=True))
        assert [shape(r) for r in many] == alone
        assert not sel.engine.prepared  # every prepared pool was taken by its selection
        ids = [r.selection_id for r in many]
    with psycopg.connect(demo_db) as conn:
        stored = conn.execute("SELECT count(*) FROM selection WHERE id = ANY(%s)", (ids,)).fetchone()[0]
    assert stored == len(queries) and len(set(ids)) == len(ids)


def test_warm_prepares_the_batch_pools_that_select_then_takes(demo_db, queries):
    with Selector("fr", "en", url=demo_db, pool=10) as sel:
        analyses = sel.warm(queries[:5])
        assert len(analyses) == 5 and len(sel.engine.prepared) == 5
        first = sel.select(queries[0], analysis=analyses[0])
        assert len(sel.engine.prepared) == 4
        assert shape(first) == shape(sel.select(queries[0]))
        assert sel.warm(queries[:2], method="zero") and len(sel.engine.prepared) == 4  # no pool for zero


def test_warm_without_texts_loads_the_parser_step_by_step(demo_db):
    steps: list[str] = []
    with Selector("fr", "en", url=demo_db) as sel:
        assert sel.warm(step=steps.append) == []
    assert steps[0] == "spaCy import" and steps[1].startswith("pipeline load (") and steps[2] == "Moses set-up"


def test_the_pool_seam_answers_rows_certified_and_where_it_read(demo_db, queries):
    with Selector("fr", "en", url=demo_db, pool=7) as sel:
        tokens = sel.analyzer.tokenize(queries[0])
        pool = sel.pool_of(tokens)
        assert len(pool.rows) == 7 and pool.certified is True and pool.read is None  # no replica set
        assert len({r.src for r in pool.rows}) == 7
        assert [r.pair_id for r in pool.rows] == [c.pair_id for c in sel.select(queries[0]).candidates]
        empty = sel.pool_of([])
        assert empty.rows == [] and empty.certified is True
    assert BATCH == 64
