"""R-BM25 and DPP through the real database (docs/method.md §7.1, §7.2): Selector.select on the
demo corpus, checked against the literal references on the pool the selector fetched,
recorded, and named in the signature."""

from __future__ import annotations

import psycopg
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from scoi.selection.selector import Selector
from tests import reference as ref
from tests.helpers.cli import cli, cli_json
from tests.helpers.database import scratch_database
from tests.helpers.ingest import DEMO, DEMO_TEST, demo_pairs, ingest_inprocess


def literal_picks(sel: Selector, result, variant: str) -> list[tuple[int, str]]:
    """tests/reference.select on the pool the selector fetched (its term matrices: their
    construction is checked in test_select_sql.py), as (pair_id, criterion)."""
    query_terms, _, cands, _ = sel.query.coverage_inputs(result.query_terms, result.candidates)
    tokens = list(result.query_tokens)
    if variant == "agrawal":
        tok = Tokenizer13a()
        tokens = tok(result.query.rstrip()).split()
        cands = [c._replace(tokens=tok(row.src.rstrip()).split()) for c, row in zip(cands, result.candidates)]
    if variant == "ctq":  # CTQ Scorer's code: Indic NLP's tokenizer itself, without . , ?
        from indicnlp.tokenize.indic_tokenize import trivial_tokenize

        ctq = lambda text: [t for t in trivial_tokenize(text, "fr") if t not in (".", ",", "?")]  # noqa: E731
        tokens = ctq(result.query)
        cands = [c._replace(tokens=ctq(row.src)) for c, row in zip(cands, result.candidates)]
    picks = ref.select(query_terms, tokens, cands, result.k, result.method, rbm25_variant=variant)
    return [(result.candidates[p.index].pair_id, p.criterion) for p in picks]


def test_rbm25_and_dpp_on_the_demo_corpus(server_url, template_url) -> None:
    queries = [fr for fr, _ in demo_pairs(DEMO_TEST)][:6]
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        runs = [("rbm25", "moses"), ("rbm25", "ctq"), ("rbm25", "agrawal"), ("dpp", "moses")]
        for method, variant in runs:
            with Selector("fr", "en", url=url, pool=30, method=method, rbm25_variant=variant) as sel:
                for q in queries:
                    res = sel.select(q, record=True)
                    assert len(res.candidates) == 30
                    got = [(p.pair_id, p.criterion) for p in res.selected]
                    assert got == literal_picks(sel, res, variant), (method, variant, q)
                    pool_ids = [c.pair_id for c in res.candidates]
                    assert {p for p, _ in got} <= set(pool_ids) and len({p for p, _ in got}) == len(got)
                    if (method, variant) != ("rbm25", "agrawal"):
                        assert len(got) == 4
                    assert any(c == method for _, c in got), (method, variant, q)  # not all padding
                    parts = res.signature.split("|")
                    assert f"method:{method}" in parts
                    assert (f"rbm25:{variant}" in parts) == (method == "rbm25")
                    assert res.params.get("rbm25_variant") == (variant if method == "rbm25" else None)
                    with psycopg.connect(url) as conn:
                        rows = conn.execute("""SELECT p.pair_id, p.criterion FROM selection_pick p
                                               WHERE p.selection_id = %s ORDER BY p.position""",
                                            (res.selection_id,)).fetchall()
                    assert [tuple(r) for r in rows] == got
        # The CLI passes the variant through; an unknown one is refused.
        out = cli_json(["select", queries[0], "--src", "fr", "--tgt", "en", "--pool", "30", "--method", "rbm25",
                        "--rbm25-variant", "agrawal"], url)
        assert "rbm25:agrawal" in out["signature"].split("|") and out["params"]["rbm25_variant"] == "agrawal"
        bad = cli(["select", queries[0], "--src", "fr", "--tgt", "en", "--method", "rbm25", "--rbm25-variant", "x"], url)
        assert bad.exit_code != 0 and "R-BM25 variant" in bad.stderr
