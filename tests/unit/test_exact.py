"""What an exact match is (scoi.core.exact) and the --where filter's syntax."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from scoi.core.exact import WHITESPACE, check_where, exact_sha, normalize, parse_where, where_part
from scoi.jobs.spec import JobSpec
from tests.helpers.hypothesis import examples


def test_normalisation_drops_only_invisible_differences():
    assert normalize("  Je  vous\tinvite\u00a0à\n vous lever. ") == "Je vous invite à vous lever."
    assert normalize("e\u0301te\u0301") == "\u00e9t\u00e9"  # decomposed accents composed (NFC)
    assert normalize("Je vous invite.") != normalize("je vous invite.")  # case counts
    assert normalize("Je vous invite.") != normalize("Je vous invite !")  # punctuation counts
    assert normalize("a\u200bb") == "a\u200bb"  # a zero-width space is not whitespace: kept
    assert exact_sha(" Bonjour  !") == exact_sha("Bonjour !") != exact_sha("Bonjour!")


@given(st.text(st.sampled_from(list(WHITESPACE) + list("ab\u0301.")), max_size=30))
@settings(max_examples=examples(200))
def test_normalisation_is_idempotent_and_leaves_no_whitespace_run(text):
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip(" ") and "  " not in once
    assert not set(once) & (set(WHITESPACE) - {" "})


def test_where_syntax_and_its_errors():
    assert parse_where(None) is None and parse_where([]) is None
    assert parse_where(["domain=legal", "client=acme=x", "note.date:2024-01="]) == {
        "domain": "legal", "client": "acme=x", "note.date:2024-01": ""}
    assert parse_where(["domain=legal", "domain=legal"]) == {"domain": "legal"}
    for bad, says in ((["domain"], "expected KEY=VALUE"), (["=legal"], "expected KEY=VALUE"),
                      (["dom ain=x"], "expected KEY=VALUE"), (["a'b=x"], "expected KEY=VALUE"),
                      (["domain=legal", "domain=news"], "given twice")):
        with pytest.raises(ValueError, match=says):
            parse_where(bad)
    assert check_where({}) is None and check_where({"domain": "legal"}) == {"domain": "legal"}
    for bad, says in (([("domain", "legal")], "expected an object"), ({"domain": 3}, "expected a string"),
                      ({"x; DROP TABLE pair": "1"}, "bad key")):
        with pytest.raises(ValueError, match=says):
            check_where(bad)
    assert where_part({"domain": "legal", "client": "acme"}) == "client=acme,domain=legal"
    assert where_part(None) is None


def test_where_changes_a_jobs_signature_and_reuse_does_not():
    plain = JobSpec("fr", "en", model="openai:m")
    assert "where" not in plain.signature() and plain.params()["reuse"] == "exact"
    assert JobSpec("fr", "en", model="openai:m", reuse="off").signature() == plain.signature()
    legal = JobSpec("fr", "en", model="openai:m", where={"domain": "legal"})
    assert "|where:domain=legal|" in legal.signature() and legal.params()["where"] == {"domain": "legal"}
