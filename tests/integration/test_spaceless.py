"""Languages written without spaces: Moses makes one "word" of a Chinese clause, so BM25
preselection and word coverage would find nothing; their words come from spaCy's
tokenizer for the language instead (``spacy.blank("zh")``: characters, offline)."""

from __future__ import annotations

import importlib.util

import pytest

from ingest.options import IngestOptions
from ingest.pipeline import ingest_files
from scoi.analysis import Analyzer, word_tokenizer
from scoi.parsers import ParserNotAvailable
from scoi.text.moses import PunctNormalizer, moses_tokenizer
from scoi.selection.selector import Selector
from tests.helpers.database import scalar
from tests.helpers.ingest import assert_consistent

# Chinese-English pairs written for these tests.
ZH_EN = [
    ("我喜欢吃苹果。", "I like eating apples."),
    ("今天天气很好，我们去公园散步吧。", "The weather is nice today, let's take a walk in the park."),
    ("他在图书馆学习中文。", "He studies Chinese in the library."),
    ("这家餐厅的饺子非常好吃。", "The dumplings in this restaurant are delicious."),
    ("火车站离这里不远。", "The train station is not far from here."),
    ("我的妹妹在北京工作。", "My younger sister works in Beijing."),
]
QUERY = "他每天在图书馆看书。"  # shares 他, 在, 图书馆 with the third pair only


def test_moses_cannot_split_chinese_and_spacy_can():
    text = PunctNormalizer("zh").normalize(QUERY)
    assert moses_tokenizer("zh").tokenize(text, escape=False) == [QUERY]  # one "word"
    assert Analyzer("zh", "none").tokenize(QUERY) == list("他每天在图书馆看书。")
    assert Analyzer("zh", "none").tokenize("今天 天气") == ["今", "天", "天", "气"]  # no space tokens
    assert word_tokenizer("fr") is None  # languages with spaces keep the Moses tokens


def test_chinese_preselection_finds_the_sentence_sharing_words(tmp_path, db_url):
    tsv = tmp_path / "zh-en.tsv"
    tsv.write_text("".join(f"{zh}\t{en}\n" for zh, en in ZH_EN), encoding="utf-8")
    s = ingest_files(IngestOptions(files=[str(tsv)], src="zh", tgt="en", workers=0), db_url)
    assert s.inserted == len(ZH_EN) and s.parsers["zh"] == "none"  # no Chinese parser installed here
    assert scalar(db_url, "SELECT tokens FROM sentence WHERE text = %s", [ZH_EN[2][0]]) == list(ZH_EN[2][0])
    assert_consistent(db_url)
    with Selector("zh", "en", url=db_url, method="bm25", k=1) as sel:
        r = sel.select(QUERY)
        assert r.query_tokens == list(QUERY)
        assert r.selected[0].tgt == "He studies Chinese in the library."
        assert r.candidates[0].tokens == list(ZH_EN[2][0])
    with Selector("en", "zh", url=db_url, method="scoi", k=2) as sel:  # Chinese as the target
        picked = sel.select("The train station is far from here.").selected
        assert len(picked) == 2 and "火车站离这里不远。" in [p.tgt for p in picked]


@pytest.mark.skipif(importlib.util.find_spec("sudachipy") is not None, reason="SudachiPy is installed")
def test_japanese_without_its_tokenizer_is_refused_before_writing(tmp_path, db_url):
    tsv = tmp_path / "ja-en.tsv"
    tsv.write_text("私はリンゴが好きです。\tI like apples.\n", encoding="utf-8")
    with pytest.raises(ParserNotAvailable, match="'ja' is written without spaces.*pip install sudachipy"):
        ingest_files(IngestOptions(files=[str(tsv)], src="ja", tgt="en", workers=0), db_url)
    assert scalar(db_url, "SELECT count(*) FROM corpus") == 0


@pytest.mark.skipif(importlib.util.find_spec("sudachipy") is None, reason="SudachiPy is not installed")
def test_japanese_words_come_from_sudachi():
    assert len(Analyzer("ja", "none").tokenize("私はリンゴが好きです。")) >= 5
