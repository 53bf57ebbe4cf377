"""Glossary matching and term checks (scoi.core.glossary), the prompt's glossary block, and
the glossary file readers (ingest.glossary_files) on files written as a CAT tool exports
them. Pure: no database."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ingest.glossary_files import read_glossary
from ingest.records import InputError
from scoi.core.glossary import Entry, check_terms, find_matches, is_acronym, key_of, term_accuracy
from scoi.core.prompt import Example, render_prompt
from tests.helpers.hypothesis import examples

DATA = Path(__file__).resolve().parents[1] / "data" / "glossary"


def entry(src: str, tgt: str = "t", lemmas: str | None = None) -> Entry:
    exact = is_acronym(src)
    return Entry(src, tgt, None, key_of(src.split(), exact), key_of(tgt.split(), is_acronym(tgt)),
                 tuple(lemmas.split()) if lemmas else None)


def spans(text: str, entries: list[Entry], lemmas: str | None = None) -> list[tuple[str, int, int]]:
    return [(m.entry.src, m.start, m.end)
            for m in find_matches(text.split(), lemmas.split() if lemmas else None, entries)]


def test_longest_term_wins_over_the_words_inside_it() -> None:
    es = [entry("chambre"), entry("commerce"), entry("chambre de commerce")]
    assert spans("la chambre de commerce et la chambre", es) == [
        ("chambre de commerce", 1, 4), ("chambre", 6, 7)]


def test_case_is_ignored_except_for_acronyms() -> None:
    es = [entry("conseil"), entry("ONU")]
    assert spans("Le Conseil de l' ONU", es) == [("conseil", 1, 2), ("ONU", 4, 5)]
    assert spans("le conseil de l' onu", es) == [("conseil", 1, 2)]  # onu is not the acronym


def test_a_term_matches_an_inflected_form_by_its_lemmas() -> None:
    es = [entry("conseil d' administration", lemmas="conseil de administration")]
    text, lemmas = "les conseils d' administration", "le conseil de administration"
    assert spans(text, es) == []
    assert spans(text, es, lemmas) == [("conseil d' administration", 1, 4)]


def test_equal_spans_go_to_the_first_entry() -> None:
    es = [entry("chambre", "room"), entry("chambre", "chamber")]
    [m] = find_matches("une chambre".split(), None, es)
    assert m.entry.tgt == "room"


def test_term_check_finds_the_target_term_by_form_or_lemma() -> None:
    e = Entry("conseil", "board", None, ("conseil",), ("board",), None, None)
    u = Entry("ONU", "UN", None, ("ONU",), ("UN",), None, None)
    matches = find_matches(["le", "conseil", "de", "l'", "ONU"], None, [e, u])
    assert check_terms(matches, ["The", "Board", "of", "the", "UN"], None) == [
        {"src": "conseil", "tgt": "board", "found": True}, {"src": "ONU", "tgt": "UN", "found": True}]
    assert check_terms(matches, ["the", "council", "of", "the", "un"], None) == [
        {"src": "conseil", "tgt": "board", "found": False}, {"src": "ONU", "tgt": "UN", "found": False}]
    plural = Entry("conseil", "board", None, ("conseil",), ("board",), None, ("board",))
    m2 = find_matches(["conseil"], None, [plural])
    assert check_terms(m2, ["boards"], ["board"]) == [{"src": "conseil", "tgt": "board", "found": True}]
    assert term_accuracy([check_terms(matches, ["Board"], None), []]) == (1, 2)


def reference_matches(forms: list[str], lemmas: list[str] | None, entries: list[Entry]) -> list[tuple[int, int, int]]:
    """The rule read literally: among the occurrences (by form under the case rule, or by
    lemma for a term that is no acronym) not overlapping a span already taken, repeatedly
    take the longest, then the leftmost, then the first entry; in sentence order."""
    def spans(e: Entry) -> list[tuple[int, int]]:
        out = []
        for i in range(len(forms)):
            words = forms[i:i + len(e.src_key)]
            if len(words) == len(e.src_key) and [w if e.exact else w.casefold() for w in words] == list(e.src_key):
                out.append((i, len(e.src_key)))
            elif lemmas is not None and e.src_lemmas and not e.exact:
                got = [w.casefold() for w in lemmas[i:i + len(e.src_lemmas)]]
                if got == list(e.src_lemmas):
                    out.append((i, len(e.src_lemmas)))
        return out

    taken: set[int] = set()
    out = []
    while True:
        best = None
        for order, e in enumerate(entries):
            for i, n in spans(e):
                if not set(range(i, i + n)) & taken:
                    cand = (-n, i, order)
                    if best is None or cand < best:
                        best = cand
        if best is None:
            return sorted((i, i - neg, order) for neg, i, order in out)
        out.append(best)
        taken |= set(range(best[1], best[1] - best[0]))


WORDS = st.sampled_from(["a", "A", "b", "B", "c", "AB", "de"])
LEMMAS = st.sampled_from(["a", "b", "c", "x"])


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), n=st.integers(0, 12), with_lemmas=st.booleans(),
       terms=st.lists(st.tuples(st.lists(WORDS, min_size=1, max_size=3), st.none() | st.lists(LEMMAS, min_size=1,
                                                                                                max_size=3)),
                      min_size=1, max_size=6))
def test_matches_equal_the_literal_reference(data: st.DataObject, n: int, with_lemmas: bool,
                                             terms: list[tuple[list[str], list[str] | None]]) -> None:
    forms = data.draw(st.lists(WORDS, min_size=n, max_size=n))
    lemmas = data.draw(st.lists(LEMMAS, min_size=n, max_size=n)) if with_lemmas else None
    entries = [entry(" ".join(t), lemmas=" ".join(lm) if lm else None) for t, lm in terms]
    got = [(m.start, m.end, entries.index(m.entry)) for m in find_matches(forms, lemmas, entries)]
    assert got == reference_matches(forms, lemmas, entries)


def test_prompts_without_terms_are_unchanged_and_with_terms_hold_one_block() -> None:
    ex = [Example("Bonjour.", "Hello.")]
    terms = [{"src": "conseil d'administration", "tgt": "board of directors", "note": None},
             {"src": "ONU", "tgt": "UN", "note": "always capitals"}]
    plain = render_prompt("Le conseil.", ex, "fr", "en")
    assert render_prompt("Le conseil.", ex, "fr", "en", glossary=[]) == plain
    block = ("Glossary:\n- conseil d'administration \u2192 board of directors\n"
             "- ONU \u2192 UN (always capitals)\n\n")
    assert render_prompt("Le conseil.", ex, "fr", "en", glossary=terms) == block + plain
    alpaca = render_prompt("Le conseil.", ex, "fr", "en", template="alpaca")
    head = "Instruction: Translate the following French text into English.\n\n"
    assert render_prompt("Le conseil.", ex, "fr", "en", template="alpaca", glossary=terms) == (
        head + block + alpaca[len(head):])


def test_user_templates_get_the_terms(tmp_path: Path) -> None:
    tpl = tmp_path / "t.j2"
    tpl.write_text("{% for t in glossary %}{{ t.src }}={{ t.tgt }};{% endfor %}{{ query }}", encoding="utf-8")
    out = render_prompt("x", [], "fr", "en", template=str(tpl), glossary=[{"src": "a", "tgt": "b", "note": None}])
    assert out == "a=b;x"


def test_tbx_basic_entries_with_multi_word_terms_and_notes() -> None:
    rows = read_glossary(str(DATA / "board.fr-en.tbx"), "fr", "en")
    assert [(r.src, r.tgt, r.entry_id) for r in rows] == [
        ("conseil d'administration", "board of directors", "c1"), ("conseil", "council", "c2"),
        ("ONU", "UN", "c3"), ("assemblée générale annuelle", "annual general meeting", "c4")]
    assert rows[0].note == "Gouvernance" and rows[2].note == "Toujours en majuscules."
    assert rows[0].line == 17  # the <term>'s line
    # the fr-de entry (c5) is for another pair
    assert [(r.src, r.tgt) for r in read_glossary(str(DATA / "board.fr-en.tbx"), "fr", "de")] == [
        ("procès-verbal", "Protokoll")]


def test_tbx_2019_concept_entries() -> None:
    rows = read_glossary(str(DATA / "concept.tbx"), "fr", "en")
    assert [(r.src, r.tgt, r.entry_id) for r in rows] == [("taux d'intérêt", "interest rate", "k1")]


def test_csv_with_language_code_header_and_quoted_cells() -> None:
    rows = read_glossary(str(DATA / "board.fr-en.csv"), "fr", "en")
    assert [(r.line, r.src, r.tgt, r.note) for r in rows] == [
        (2, "chambre de commerce", "chamber of commerce", None), (3, "chambre", "room", "hotel sense"),
        (4, "rapport annuel, version finale", "final annual report", "quoted, with a comma")]
    swapped = read_glossary(str(DATA / "board.fr-en.csv"), "en", "fr")  # the header names the columns
    assert (swapped[0].src, swapped[0].tgt) == ("chamber of commerce", "chambre de commerce")


@pytest.mark.parametrize("name,content,where,problem", [
    ("g.tsv", "src\ttgt\nchambre\n", ":2:", "has 1 column; expected 2"),
    ("g.tsv", "source\tcible\nchambre\troom\n", ":1:", "does not name the columns"),
    ("g.csv", "src,tgt\nchambre,\n", ":2:", "target term is empty"),
    ("g.csv", "src,tgt\n" + "a" * 400 + ",b\n", ":2:", "expected a term of at most 300"),
    ("g.tbx", "<martif><text><body><termEntry id='e9'><langSet xml:lang='fr'><tig><term>a</term></tig>"
              "</langSet><langSet xml:lang='en'><tig><term></term></tig></langSet></termEntry></body></text></martif>",
     ":1:", "entry e9: target term is empty"),
    ("g.tbx", "<martif><text><body><termEntry>\n<langSet><tig><term>a</term></tig></langSet></termEntry>"
              "</body></text></martif>", ":2:", "<langSet> has no xml:lang"),
    ("g.tbx", "<martif><text><body><termEntry>\n</body></text></martif>", ":2:", "malformed TBX"),
    ("g.tbx", "<tmx><body/></tmx>", "g.tbx:", "no entry with both a fr and a en term"),
    ("g.tbx", "<martif/>", "g.tbx:", "not a TBX file"),
])
def test_bad_glossary_files_name_the_line_and_the_problem(tmp_path: Path, name: str, content: str, where: str,
                                                          problem: str) -> None:
    f = tmp_path / name
    f.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_glossary(str(f), "fr", "en")
    assert where in str(e.value) and problem in str(e.value), str(e.value)


def test_xml_attacks_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET", encoding="utf-8")
    xxe = tmp_path / "xxe.tbx"
    xxe.write_text(f'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY s SYSTEM "file://{secret}">]>'
                   "<martif><text><body><termEntry id='x'><langSet xml:lang='fr'><tig><term>a&s;</term></tig>"
                   "</langSet><langSet xml:lang='en'><tig><term>b</term></tig></langSet></termEntry>"
                   "</body></text></martif>", encoding="utf-8")
    with pytest.raises(InputError) as e:  # the external entity is never resolved
        read_glossary(str(xxe), "fr", "en")
    assert "xxe.tbx:1" in str(e.value) and "TOPSECRET" not in str(e.value)
    lol = tmp_path / "lol.tbx"
    ents = '<!ENTITY l0 "lollollollollollollollollollol">' + "".join(
        f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    lol.write_text(f'<?xml version="1.0"?><!DOCTYPE m [{ents}]><martif><text><body><termEntry id="x">'
                   "<langSet xml:lang='fr'><tig><term>&l9;</term></tig></langSet>"
                   "<langSet xml:lang='en'><tig><term>b</term></tig></langSet></termEntry></body></text></martif>",
                   encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_glossary(str(lol), "fr", "en")
    assert "lol.tbx:1" in str(e.value) and "amplification" in str(e.value)
