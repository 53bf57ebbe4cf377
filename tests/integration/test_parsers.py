"""Parsers beyond the installed spaCy packages: a spaCy pipeline directory (a tiny German
parser trained in the test session) and natasha for Russian (real slovnet model), through
ingest, ``scoi reanalyze`` and selection, with the choice recorded in the analysis scheme
and the selection signature."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ingest.options import IngestOptions
from ingest.pipeline import ingest_files
from ingest.reanalyze import ReanalyzeOptions, reanalyze
from scoi.analysis import analyzer
from scoi.parsers import NATASHA, ParserNotAvailable, choose_parser
from scoi.selection.selector import SelectionError, Selector
from tests.helpers.database import scalar
from tests.helpers.ingest import assert_consistent
from tests.helpers.parsers import VERSION, german_parser  # noqa: F401 - a fixture
from tests.integration.test_languages import EN_DE, _en_de

# Russian-English pairs written for these tests.
RU_EN = [
    ("Мальчик читает интересную книгу.", "The boy is reading an interesting book."),
    ("Кошка спит на тёплом диване.", "The cat is sleeping on the warm sofa."),
    ("Мы поедем в Москву завтра утром.", "We will go to Moscow tomorrow morning."),
    ("Девочка пишет письмо своей бабушке.", "The girl is writing a letter to her grandmother."),
    ("Собака громко лает во дворе.", "The dog is barking loudly in the yard."),
    ("Отец купил новую машину.", "Father bought a new car."),
    ("Студенты слушают лекцию в большой аудитории.", "The students are listening to a lecture in a large hall."),
    ("Вчера шёл сильный дождь.", "Yesterday it rained heavily."),
]


def _terms_sizes(db_url: str, lang: str) -> list[tuple[int, int]]:
    """(sum of term multiplicities, number of terms) of each stored sentence of ``lang``."""
    with psycopg.connect(db_url) as conn:
        return conn.execute("SELECT (SELECT sum(m) FROM unnest(term_mults) m), cardinality(term_keys) "
                            "FROM sentence WHERE lang = %s", [lang]).fetchall()


def test_spacy_pipeline_directory_parses_german(tmp_path, db_url, german_parser):
    scheme = f"{german_parser}=={VERSION}/spacy-tokens"
    s = ingest_files(IngestOptions(files=_en_de(tmp_path), src="en", tgt="de", workers=0,
                                   parsers={"de": german_parser}), db_url)
    assert s.parsers["de"] == scheme
    sizes = _terms_sizes(db_url, "de")
    assert len(sizes) == len(EN_DE) and all(total >= 4 and n >= 3 for total, n in sizes)
    assert scalar(db_url, "SELECT count(*) FROM parser WHERE lang = 'de' AND name = %s AND version = %s",
                  [german_parser, VERSION]) == 1
    assert_consistent(db_url)

    with Selector("de", "en", url=db_url, method="scoi", k=2, parser=german_parser) as sel:
        r = sel.select("Ein Hund fängt einen Ball.")
        assert f"parser:{scheme}" in r.signature
        assert "A dog catches a ball in the water." in [p.tgt for p in r.selected]
        assert r.query_terms["ROOT"] == 1 and sum(r.query_terms.values()) == 7
    with pytest.raises(SelectionError, match="scoi reanalyze --lang de --parser de=de_core_news_sm"):
        Selector("de", "en", url=db_url, method="scoi", parser="de_core_news_sm")


def test_reanalyze_adds_trees_with_a_pipeline_directory(tmp_path, db_url, german_parser):
    ingest_files(IngestOptions(files=_en_de(tmp_path), src="en", tgt="de", workers=0), db_url)
    assert {total for total, _ in _terms_sizes(db_url, "de")} == {None}
    # Real worker processes: the fork server and workers load the directory too.
    summary = reanalyze(ReanalyzeOptions(langs=["de"], workers=1, parsers={"de": german_parser}), db_url)
    assert summary.reanalyzed == len(EN_DE)
    want = {t: a.terms for t, a in zip(
        (de for _, de in EN_DE), analyzer("de", german_parser).analyze([de for _, de in EN_DE]))}
    with psycopg.connect(db_url) as conn:
        got = {t: dict(zip(k, m)) for t, k, m in conn.execute(
            "SELECT text, term_keys, term_mults FROM sentence WHERE lang = 'de'")}
    assert got == want
    assert_consistent(db_url)
    with Selector("de", "en", url=db_url, method="scoi", k=2) as sel:
        assert "Two dogs run across a green field." in [p.tgt for p in sel.select("Zwei Hunde rennen.").selected]


def test_pipeline_built_by_a_function(german_parser):
    """``module:function``: how spacy-stanza and spacy-udpipe pipelines plug in."""
    factory = "tests.helpers.parsers:tiny_german"
    choice = choose_parser("de", factory)
    assert str(choice.scheme) == f"{factory}==unversioned/spacy-tokens"
    texts = [de for _, de in EN_DE]
    # In a process of its own: the pipeline needs PyTorch, and this one may have imported
    # spaCy without it for an earlier test's pipeline (scoi.parsers.import_spacy).
    code = ("import sys; from scoi.analysis import analyzer; from tests.helpers import parsers; "
            "parsers.TRAINED[:] = [sys.argv[2]]; texts = sys.argv[3:]; "
            "print([a.terms for a in analyzer('de', sys.argv[1]).analyze(texts)] == "
            "[a.terms for a in analyzer('de', sys.argv[2]).analyze(texts)])")
    same = subprocess.run([sys.executable, "-c", code, factory, str(german_parser), *texts], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[2], check=False)
    assert same.stdout.strip() == "True", same.stderr[-2000:]
    with pytest.raises(ParserNotAvailable, match="'no_such_module:load' requested for 'de' is not installed"):
        choose_parser("de", "no_such_module:load")


def test_bad_parser_choices():
    with pytest.raises(ParserNotAvailable, match="'/nonexistent/pipeline' requested for 'de' is not a spaCy "
                                                 "pipeline directory"):
        choose_parser("de", "/nonexistent/pipeline")
    with pytest.raises(ParserNotAvailable, match="natasha parses Russian only"):
        choose_parser("de", NATASHA)


def test_natasha_trees_and_terms():
    choice = choose_parser("ru")  # no spaCy Russian pipeline here: natasha is the default
    assert choice.name == NATASHA and str(choice.scheme).startswith("natasha==") and \
        str(choice.scheme).endswith("/razdel-tokens")
    a = analyzer("ru", NATASHA)
    one, empty, two = a.analyze(["Собака лает на кота.", "  ", "Мама мыла раму. Кот спит."])
    # Собака <-nsubj- лает (root), на <-case- кота <-obl- лает, . <-punct- лает
    assert one.terms == {"ROOT": 1, "ROOT^2": 1, "ROOT^2·nsubj": 1, "ROOT^2·obl": 1, "ROOT^2·case·obl": 1,
                         "ROOT^2·punct": 1}
    assert one.tokens == ["Собака", "лает", "на", "кота", "."] and one.tree_tokens == 5
    assert empty.terms == {"ROOT": 1} and empty.tokens == []
    # Two sentences: two roots under the one virtual root, as spaCy's multi-sentence parses.
    assert two.terms["ROOT^2"] == 2 and sum(two.terms.values()) == two.tree_tokens + 1 == 8
    assert a.terms("Собака лает на кота.") == one.terms


def test_russian_to_english_selection_with_natasha(tmp_path, db_url):
    tsv = tmp_path / "ru-en.tsv"
    tsv.write_text("".join(f"{ru}\t{en}\n" for ru, en in RU_EN), encoding="utf-8")
    s = ingest_files(IngestOptions(files=[str(tsv)], src="ru", tgt="en", workers=1), db_url)  # a real worker
    assert s.inserted == len(RU_EN) and s.parsers["ru"].startswith("natasha==")
    sizes = _terms_sizes(db_url, "ru")
    assert len(sizes) == len(RU_EN) and all(n >= 3 for _, n in sizes)
    assert_consistent(db_url)
    with Selector("ru", "en", url=db_url, method="scoi", k=2) as sel:
        r = sel.select("Девочка читает новую книгу.")
        assert "parser:natasha==" in r.signature
        picked = [p.tgt for p in r.selected]
        assert "The boy is reading an interesting book." in picked
    with Selector("en", "ru", url=db_url, method="scoi", k=2) as sel:  # and the other way
        assert "Кошка спит на тёплом диване." in [p.tgt for p in sel.select("The cat is sleeping.").selected]
