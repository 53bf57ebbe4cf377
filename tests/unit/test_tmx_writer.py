"""The TMX writer (scoi.formats.tmx) is the TMX reader's inverse: any metadata jsonb can
store comes back from the written file as it went in, texts too."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.read_tmx import read_tmx
from scoi.formats.tmx import JSON_PROP, TmxWriteError, encode_meta, tmx_document
from tests.helpers.hypothesis import examples

# What jsonb stores: no NUL, no lone surrogate (the reader refuses those).
_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
_json = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                     | st.floats(allow_nan=False, allow_infinity=False, width=32) | _text,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                     max_leaves=8)
_keys = st.sampled_from(["note", "tuid", "usagecount", "creationdate", "x-domain", "fr-fr:x-status", JSON_PROP,
                         "", " k "]) | _text


def written_and_read(tmp_path, metas: list[dict]) -> list[dict]:
    path = tmp_path / "out.tmx"
    with open(path, "wb") as fh, tmx_document(fh, "fr", "en") as tmx:
        for i, meta in enumerate(metas):
            tmx.write(f"Phrase {i}.", f"Sentence {i}.", meta)
    records = list(read_tmx(str(path), "fr", "en"))
    assert [(r.src, r.tgt) for r in records] == [(f"Phrase {i}.", f"Sentence {i}.") for i in range(len(metas))]
    return [r.meta or {} for r in records]


@settings(max_examples=examples(200), deadline=None)
@given(metas=st.lists(st.dictionaries(_keys, _json, max_size=5), min_size=1, max_size=3))
def test_any_stored_metadata_comes_back_from_the_written_tmx(tmp_path_factory, metas):
    assert written_and_read(tmp_path_factory.mktemp("tmx"), metas) == metas


def test_values_tmx_holds_are_written_as_a_cat_tool_would(tmp_path):
    attrs, children = encode_meta({"tuid": "7", "usagecount": 3, "changedate": "20240201T080000Z",
                                   "x-domain": ["legal", "tax"], "note": "checked", "score": 0.5})
    assert attrs == {"tuid": "7", "usagecount": "3", "changedate": "20240201T080000Z"}
    assert children == [("prop", "x-domain", "legal"), ("prop", "x-domain", "tax"), ("note", None, "checked"),
                         ("prop", JSON_PROP, '{"score": 0.5}')]


def test_a_text_xml_cannot_hold_is_refused_by_name(tmp_path):
    with open(tmp_path / "x.tmx", "wb") as fh, pytest.raises(TmxWriteError, match="pair 9: the target holds U\\+0001"):
        with tmx_document(fh, "fr", "en") as tmx:
            tmx.write("Oui.", "Y\x01es.", what="pair 9")
