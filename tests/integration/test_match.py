"""Match % on selections and the fuzzy lookup, on the demo corpus in a real database:
every candidate and pick carries the reference's match % of its stored tokens,
--min-match restricts the pool for every method, recording keeps it, and the lookup
ranks by match % and finds the brute-force best match."""

from __future__ import annotations

import time

import psycopg
import pytest

from scoi import lookup as lookup_mod
from scoi.lookup import lookup
from scoi.selection.selector import SelectionError, Selector
from tests import reference as ref
from tests.helpers.database import view_columns

QUERY = "Bonjour, comment allez-vous ce soir ?"  # the demo's first source with two words added


def stored_sources(url: str) -> dict[int, list[str]]:
    """pair id -> Moses tokens of its fr side, for every fr-en pair (the brute force's input)."""
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT e.pair_id, s.tokens FROM example e JOIN sentence s ON s.id = e.src_id "
                                 "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en'").fetchall())


def test_every_candidate_and_pick_carries_the_reference_match(job_db: str) -> None:
    sources = stored_sources(job_db)
    with Selector("fr", "en", url=job_db) as sel:
        result = sel.select(QUERY)
    assert result.candidates and result.selected
    for c in result.candidates:
        assert c.match == ref.match_percent(result.query_tokens, sources[c.pair_id])
    for p in result.selected:
        assert p.match == ref.match_percent(result.query_tokens, sources[p.pair_id])
    out = result.to_dict(explain=True)
    assert all("match" in c for c in out["candidates"]) and all("match" in p for p in out["selected"])
    # "Bonjour , comment allez-vous ?" against the query's 7 tokens: 2 inserted, 100 * (1 - 2/7)
    assert max(p.match for p in result.selected) == 71.43


@pytest.mark.parametrize("method", ["scoi", "bm25", "random", "rbm25"])
def test_min_match_keeps_only_qualifying_examples_for_every_method(job_db: str, method: str) -> None:
    with Selector("fr", "en", url=job_db, method=method, min_match=70) as sel:
        result = sel.select(QUERY)
        plain = sel.select(QUERY, min_match=0)
    assert [c.match for c in result.candidates] == [c.match for c in plain.candidates if c.match >= 70]
    assert result.selected and all(p.match >= 70 for p in result.selected)
    assert result.notice == f"1 of {len(plain.candidates)} candidates reach 70% match: 1 example instead of 4"
    assert "|match:70|" in result.signature and result.params["min_match"] == 70
    assert "match" not in plain.signature.split("|")[1:] and plain.notice is None


def test_min_match_must_be_a_percentage(job_db: str) -> None:
    with pytest.raises(SelectionError, match="min match 120 is not a percentage"):
        Selector("fr", "en", url=job_db, min_match=120)


def test_recorded_selection_keeps_the_match_in_tables_and_views(job_db: str) -> None:
    with Selector("fr", "en", url=job_db) as sel:
        result = sel.select(QUERY, record=True)
    with psycopg.connect(job_db) as conn:
        picks = conn.execute("SELECT pair_id, match FROM selection_pick_text WHERE selection_id = %s "
                             "ORDER BY position", (result.selection_id,)).fetchall()
        cands = conn.execute("SELECT pair_id, match FROM selection_candidate WHERE selection_id = %s ORDER BY rank",
                             (result.selection_id,)).fetchall()
    assert picks == [(p.pair_id, pytest.approx(p.match, abs=1e-4)) for p in result.selected]
    assert cands == [(c.pair_id, pytest.approx(c.match, abs=1e-4)) for c in result.candidates]


def test_lookup_ranks_by_match_and_returns_corpus_and_meta(job_db: str) -> None:
    sources = stored_sources(job_db)
    with psycopg.connect(job_db) as conn:
        conn.execute("UPDATE pair SET meta = '{\"domain\": \"greetings\"}' WHERE id = (SELECT pair_id FROM example e "
                     "JOIN sentence s ON s.id = e.src_id WHERE s.text = 'Bonjour, comment allez-vous ?' LIMIT 1)")
    with Selector("fr", "en", url=job_db, method="bm25") as sel:
        result = lookup(sel, QUERY, n=5, min_match=0)  # the BM25 pool's path
        tokens = sel.analyzer.tokenize(QUERY)
        strict = lookup(sel, QUERY, min_match=99)
        default = lookup(sel, QUERY, n=5)  # 70 %: every stored sentence that can reach it
    best = result.matches[0]
    assert (best.src, best.tgt, best.match, best.meta) == (
        "Bonjour, comment allez-vous ?", "Hello, how are you?", 71.43, {"domain": "greetings"})
    assert best.corpus and result.certified is True and len(result.matches) == 5
    keys = [(-m.match, -m.score, m.pair_id) for m in result.matches]
    assert keys == sorted(keys)
    brute = sorted(ref.match_percent(tokens, toks) for toks in sources.values())[::-1][:5]
    assert [m.match for m in result.matches] == brute  # the pool held the true best five
    assert strict.matches == [] and result.to_dict()["matches"][0]["meta"] == {"domain": "greetings"}
    assert default.min_match == 70 and default.search["path"] == "count" and result.search["path"] == "pool"
    assert default.matches == [best]  # the only one at >= 70 %, with the pool path's BM25 score


def test_lookup_refuses_bad_arguments(job_db: str) -> None:
    with Selector("fr", "en", url=job_db, method="bm25") as sel:
        with pytest.raises(SelectionError, match="-n 0 is out of range"):
            lookup(sel, QUERY, n=0)
        with pytest.raises(SelectionError, match="not a percentage"):
            lookup(sel, QUERY, min_match=-5)


def test_min_match_filters_the_fuzzy_methods_vectors_with_their_pairs(job_db, tmp_path_factory) -> None:
    from scoi.embedding.embedder import Embedder
    from scoi.embedding.embeddings import embed_missing
    from tests import reference_baselines as slow
    from tests.tiny_model import build_tiny_sentence_transformer

    model = str(build_tiny_sentence_transformer(tmp_path_factory.mktemp("st") / "tiny-st"))
    emb = Embedder(model)
    embed_missing(job_db, emb, langs=["fr"])
    with Selector("fr", "en", url=job_db, method="fuzzy", embedder=model, min_match=25) as sel:
        res = sel.select(QUERY, k=10)
    assert 1 < len(res.candidates) < 50 and all(c.match >= 25 for c in res.candidates)
    # the cosine ranking of exactly the qualifying candidates: vectors and pairs stayed aligned
    want = slow.fuzzy(emb.encode([QUERY])[0], emb.encode([c.src for c in res.candidates]), 10)
    assert [p.pair_id for p in res.selected] == [res.candidates[i].pair_id for i, _ in want]
    with Selector("fr", "en", url=job_db, method="fuzzy-ann", embedder=model, min_match=25) as sel:
        ann = sel.select(QUERY, k=10)
    assert all(p.match >= 25 for p in ann.selected) and all(c.match >= 25 for c in ann.candidates)


def test_migration_0029_adds_match_to_the_views_and_its_downgrade_removes_it(db_url: str) -> None:
    from scoi.db.engine import get_engine
    from scoi.db.migrate import downgrade, upgrade

    engine = get_engine(db_url)
    assert all("match" in cols for cols in view_columns(db_url).values())
    downgrade(engine, "0023")
    after = view_columns(db_url)
    assert "match" not in after["selection_pick_text"] and "match" not in after["job_item_trace"]
    upgrade(engine)
    assert all("match" in cols for cols in view_columns(db_url).values())


def test_lookup_small_first_pool_returns_what_the_full_pool_does(job_db: str, monkeypatch) -> None:
    # stored sources with a word dropped or added (matches >= 70 % exist) and unrelated
    # sentences (the best match is low: the small pool cannot be proven, so it widens)
    sources = list(stored_sources(job_db).values())
    queries = [" ".join(t[1:]) for t in sources[:6] if len(t) > 3] + [" ".join(t + ["merci"]) for t in sources[6:10]]
    queries += ["Le chat dort sur le canapé rouge .", "Quelle heure est-il à Paris ?"]
    verdicts: list[bool] = []
    settled = lookup_mod.settled

    def spy(*args, **kwargs) -> bool:
        verdicts.append(settled(*args, **kwargs))
        return verdicts[-1]

    with Selector("fr", "en", url=job_db, method="bm25") as sel:
        for q in queries:
            tokens = sel.analyzer.tokenize(q)
            for n, min_match in ((1, 0.0), (2, 0.0), (1, 70.0)):
                full = lookup_mod.rank(tokens, lookup_mod.candidates(sel, tokens, 40), n=n, min_match=min_match)
                with monkeypatch.context() as m:
                    m.setattr(lookup_mod, "settled", spy)
                    got = lookup(sel, q, n=n, min_match=min_match, pool=40, first=3)
                assert [(x.pair_id, x.match, x.score) for x in got.matches] == full, (q, n, min_match)
    assert True in verdicts and False in verdicts  # both paths ran: kept small, and widened


def test_lookup_keeps_only_pairs_whose_metadata_holds_the_filter(job_db: str) -> None:
    with psycopg.connect(job_db) as conn:
        tagged = conn.execute("UPDATE pair SET meta = '{\"client\": \"acme\"}' WHERE id IN (SELECT pair_id FROM example "
                              "WHERE src_lang = 'fr' AND tgt_lang = 'en' ORDER BY pair_id DESC LIMIT 3) "
                              "RETURNING id").fetchall()
    with psycopg.connect(job_db) as conn:  # a sentence closest to a tagged pair's source (and others')
        near = conn.execute("SELECT s.text FROM example e JOIN sentence s ON s.id = e.src_id "
                            "WHERE e.pair_id = %s AND e.src_lang = 'fr'", (tagged[0][0],)).fetchone()[0]
    with Selector("fr", "en", url=job_db, method="bm25", where={"client": "acme"}) as sel:
        for first in (1, 40):  # the small pool kept or widened, and the whole pool at once
            got = lookup(sel, QUERY, n=5, pool=40, first=first, min_match=0)
            assert got.matches and {m.pair_id for m in got.matches} <= {r[0] for r in tagged}
            assert all(m.meta == {"client": "acme"} for m in got.matches)
        counted = lookup(sel, near, n=5)  # the count filter's path maps through the same filter
        assert counted.search["path"] == "count" and counted.matches[0].match == 100
        assert {m.pair_id for m in counted.matches} <= {r[0] for r in tagged}
    with Selector("fr", "en", url=job_db, method="bm25") as sel:  # unfiltered, the best are others
        assert {m.pair_id for m in lookup(sel, QUERY, n=5, pool=40, min_match=0).matches} - {r[0] for r in tagged}


def test_lookup_and_selection_on_two_connections_return_what_one_returns(job_db: str) -> None:
    """``Bm25Params(connections=2)``: the selector opens one helper connection to its
    server, the lookup (small first pool, then widened) and the selection's pool are the
    same as on one connection, and closing the selector closes the helper too."""
    from scoi.selection.preselector import Bm25Params

    def backends() -> int:
        with psycopg.connect(job_db) as c:
            return c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                             "AND pid <> pg_backend_pid()").fetchone()[0]

    sources = list(stored_sources(job_db).values())
    queries = [QUERY, "Le chat dort sur le canapé rouge ."] + [" ".join(t[1:]) for t in sources[:4] if len(t) > 3]
    with Selector("fr", "en", url=job_db, method="bm25") as one:
        alone = backends()
        with Selector("fr", "en", url=job_db, method="bm25", bm25=Bm25Params(connections=2)) as two:
            for q in queries:
                for first in (3, 40):
                    a, b = (lookup(sel, q, n=3, pool=40, first=first) for sel in (one, two))
                    assert [(m.pair_id, m.match, m.score) for m in a.matches] == \
                        [(m.pair_id, m.match, m.score) for m in b.matches], q
                tokens = one.analyzer.tokenize(q)
                assert one.preselect(tokens) == two.preselect(tokens)
                pools = [sel.engine.pool(sel.reader, tokens, 10) for sel in (one, two)]
                assert pools[0].rows == pools[1].rows and pools[1].certified
            assert backends() == alone + 2  # its own connection and one helper
        deadline = time.monotonic() + 10  # a backend leaves a moment after its client
        while backends() != alone and time.monotonic() < deadline:
            time.sleep(0.05)
        assert backends() == alone
