"""Recorded picks name what their number is: ``selection_pick_text.quantity`` and
``job_item_trace.quantity`` agree with the pick JSON's ``value.kind`` (scoi.core.criteria)
for every method that scores its picks differently, and the downgrade takes the columns away."""

from __future__ import annotations

import psycopg
import pytest

from scoi.core.criteria import QUANTITY
from scoi.selection.selector import Selector
from tests.helpers.database import view_columns

QUERY = "Le chat dort sur le canapé du salon."


@pytest.mark.parametrize("method", ["scoi", "poly-topk", "dpp", "rbm25", "bm25", "random"])
def test_the_views_name_the_quantity_the_pick_json_names(job_db: str, method: str) -> None:
    with Selector("fr", "en", url=job_db) as sel:
        result = sel.select(QUERY, k=3, method=method, record=True)
    picks = result.to_dict()["selected"]
    assert picks and all(p["value"] == (None if p["coverage"] is None else
                                        {"kind": QUANTITY[p["criterion"]], "value": p["coverage"]}) for p in picks)
    with psycopg.connect(job_db) as conn:
        rows = conn.execute("SELECT criterion, quantity, value, coverage FROM selection_pick_text "
                            "WHERE selection_id = %s ORDER BY position", (result.selection_id,)).fetchall()
    assert [(c, q) for c, q, _, _ in rows] == [(p["criterion"], QUANTITY[p["criterion"]]) for p in picks]
    assert [v for _, _, v, _ in rows] == [pytest.approx(p["coverage"]) if p["coverage"] is not None else None
                                         for p in picks]
    assert all(v == cov for _, _, v, cov in rows)  # coverage: the same number, its old name


def test_the_view_knows_every_criterion_scoi_names(job_db: str) -> None:
    """The migration's CASE and scoi.core.criteria are one table: each criterion maps alike."""
    with psycopg.connect(job_db) as conn:
        sql = conn.execute("SELECT pg_get_viewdef('selection_pick_text'::regclass)").fetchone()[0]
    for criterion, kind in QUANTITY.items():
        if kind is None:
            assert f"'{criterion}'" not in sql
        else:
            assert f"WHEN '{criterion}'::text THEN '{kind}'::text" in sql


def test_migration_0039_downgrade_removes_the_columns_and_upgrade_restores_them(db_url: str) -> None:
    from scoi.db.engine import get_engine
    from scoi.db.migrate import downgrade, upgrade

    engine = get_engine(db_url)
    assert [cols[-3:] for cols in view_columns(db_url).values()] == [["match", "quantity", "value"]] * 2
    downgrade(engine, "0037")
    assert [cols[-1] for cols in view_columns(db_url).values()] == ["match", "match"]
    with psycopg.connect(db_url) as conn:  # the views built on selection_pick_text came back
        assert conn.execute("SELECT count(*) FROM pg_views WHERE viewname IN "
                            "('selection_term_coverage', 'selection_word_contribution')").fetchone() == (2,)
    upgrade(engine)
    assert [cols[-3:] for cols in view_columns(db_url).values()] == [["match", "quantity", "value"]] * 2
