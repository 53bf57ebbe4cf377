"""CAT files a job reads and writes back (scoi.formats): XLIFF 1.2 with <g> and <x/>, XLIFF 2.1
with <pc> and <ph>, PO with plurals and placeholders, as a CAT tool writes them
(tests/data/cat). Inline codes become placeholders and come back as the source's own
elements; ids, notes and untouched units are kept; bad files are one line naming file:line."""

from __future__ import annotations

import copy
from pathlib import Path

import polib
import pytest
from hypothesis import given, settings, strategies as st
from lxml import etree

from scoi.formats import DocumentError, Filled, po, xliff
from tests.helpers.hypothesis import examples

DATA = Path(__file__).resolve().parents[1] / "data" / "cat"
NS12 = {"x": xliff.NS12}
NS20 = {"x": xliff.NS20}


def _data(name: str) -> bytes:
    return (DATA / name).read_bytes()


def _echo(segments) -> dict[str, Filled]:
    return {s.key: Filled(s.masked) for s in segments}


def _inline(el) -> list[tuple[str, dict]]:
    """The inline elements of a source or target: (tag, attributes), in document order."""
    return [(etree.QName(c).localname, dict(c.attrib)) for c in el.iter() if c is not el]


def test_xliff12_segments_have_g_and_x_as_placeholders():
    segs = xliff.read(_data("ui.fr-en.xlf"), "ui.fr-en.xlf", "fr", "en")
    assert [(s.key, s.masked) for s in segs] == [
        ("1/title", "Le chat dort sur le canapé."),
        ("1/save", "Cliquez <1>ici</1> pour enregistrer le <2>fichier</2>."),
        ("1/break", "Le chien mange.<1/>Le chat dort."),
        ("1/nested", "<1>Voir <2>la page <3/> suivante</2></1> maintenant."),
    ]  # "done" has a target already, "code" is translate="no"
    assert segs[1].line == 13


def test_xliff12_written_back_keeps_every_tag_id_note_and_untouched_unit():
    data = _data("ui.fr-en.xlf")
    out, n = xliff.write(data, "ui.fr-en.xlf", _echo(xliff.read(data, "ui.fr-en.xlf")), "en")
    assert n == 4
    root = etree.fromstring(out)
    before = etree.fromstring(data)
    units = root.findall(".//x:trans-unit", NS12)
    assert [u.get("id") for u in units] == [u.get("id") for u in before.findall(".//x:trans-unit", NS12)]
    for unit in units[:4]:
        source, target = unit.find("x:source", NS12), unit.find("x:target", NS12)
        assert _inline(target) == _inline(source)
        assert "".join(target.itertext()) == "".join(source.itertext())
        assert target.get("state") == "needs-review-translation" and target.get("state-qualifier") == "mt-suggestion"
    assert units[0].find("x:note", NS12).text == "Page title, keep it short."
    for old, new in zip(before.findall(".//x:trans-unit", NS12)[4:], units[4:]):
        assert etree.tostring(old) == etree.tostring(new)  # the translated and the translate="no" units


def test_xliff12_answer_that_breaks_a_code_gets_a_well_formed_target_and_a_qa_note():
    data = _data("ui.fr-en.xlf")
    answer = "Click <1>here to save the <2>file</2>."  # <1> never closed
    out, _ = xliff.write(data, "ui.fr-en.xlf", {"1/save": Filled(answer, ["missing </1>"])})
    unit = etree.fromstring(out).find(".//x:trans-unit[@id='save']", NS12)
    target = unit.find("x:target", NS12)
    assert _inline(target) == [("g", {"id": "2", "ctype": "italic"})]
    assert "".join(target.itertext()) == "Click here to save the file."
    assert unit.findall("x:note", NS12)[-1].text == "scoi QA: missing </1>"


def test_xliff12_invented_markup_is_written_as_text():
    data = _data("ui.fr-en.xlf")
    out, _ = xliff.write(data, "ui.fr-en.xlf", {"1/title": Filled("The <b>cat</b> sleeps & dreams.")})
    target = etree.fromstring(out).find(".//x:trans-unit[@id='title']/x:target", NS12)
    assert len(target) == 0 and target.text == "The <b>cat</b> sleeps & dreams."
    assert b"The &lt;b&gt;cat&lt;/b&gt; sleeps &amp; dreams." in out


ANSWERS = st.one_of(st.text(), st.lists(st.sampled_from(["<1>", "</1>", "<2>", "</2>", "<3/>", "<3>", "<4/>", "</9>",
                                                          "<b>", "&", "]]>", "\x01", "\ufffe", "<!--", "é", " "]),
                                         max_size=14).map("".join))


@settings(max_examples=examples(300), deadline=None)
@given(ANSWERS, ANSWERS)
def test_any_answer_is_written_as_well_formed_xliff_with_only_the_source_codes(nested, save):
    data = _data("ui.fr-en.xlf")
    out, _ = xliff.write(data, "ui.fr-en.xlf", {"1/nested": Filled(nested), "1/save": Filled(save)})
    root = etree.fromstring(out)  # raises if not well-formed
    for uid in ("nested", "save"):
        unit = root.find(f".//x:trans-unit[@id='{uid}']", NS12)
        source = _inline(unit.find("x:source", NS12))
        target = _inline(unit.find("x:target", NS12))
        assert all(code in source for code in target) and len(target) == len({c[1]["id"] for c in target})


def test_control_characters_an_answer_holds_are_removed_and_noted():
    out, _ = xliff.write(_data("ui.fr-en.xlf"), "ui.fr-en.xlf", {"1/title": Filled("The cat\x1b sleeps.")})
    unit = etree.fromstring(out).find(".//x:trans-unit[@id='title']", NS12)
    assert unit.find("x:target", NS12).text == "The cat sleeps."
    assert unit.findall("x:note", NS12)[-1].text == "scoi QA: characters XML cannot hold removed"


def test_xliff21_segments_have_pc_and_ph_as_placeholders():
    segs = xliff.read(_data("app.fr-en.xlf"), "app.fr-en.xlf", "fr", "en")
    assert [(s.key, s.masked) for s in segs] == [
        ("f1/greeting/1", "Bonjour <1/>, vous avez <2>trois messages</2>."),
        ("f1/greeting/2", "Le chat dort."),
        ("f1/plain/1", "Le chien mange."),
    ]


def test_xliff21_written_back_keeps_pc_ph_notes_original_data_and_sets_state():
    data = _data("app.fr-en.xlf")
    filled = _echo(xliff.read(data, "app.fr-en.xlf"))
    filled["f1/greeting/1"] = Filled("Hello <1/>, you have <2>three messages</2>.")
    out, n = xliff.write(data, "app.fr-en.xlf", filled, "en")
    assert n == 3
    root = etree.fromstring(out)
    seg = root.find(".//x:unit[@id='greeting']/x:segment[@id='s1']", NS20)
    assert _inline(seg.find("x:target", NS20)) == _inline(seg.find("x:source", NS20))
    assert "".join(seg.find("x:target", NS20).itertext()) == "Hello , you have three messages."
    assert seg.get("state") == "initial" and seg.get("subState") == "scoi:mt"
    unit = root.find(".//x:unit[@id='greeting']", NS20)
    assert [n.text for n in unit.findall("x:notes/x:note", NS20)] == ["Shown after login."]
    assert len(unit.findall("x:originalData/x:data", NS20)) == 3
    done = root.find(".//x:unit[@id='translated']/x:segment", NS20)
    assert done.get("state") == "final" and done.find("x:target", NS20).text == "Thank you."


def test_xliff21_qa_flags_become_a_note_and_substate():
    data = _data("app.fr-en.xlf")
    out, _ = xliff.write(data, "app.fr-en.xlf", {"f1/greeting/1": Filled("Hello, you have three messages.",
                                                                        ["missing <1/>", "missing <2>"])})
    unit = etree.fromstring(out).find(".//x:unit[@id='greeting']", NS20)
    assert unit.find("x:segment[@id='s1']", NS20).get("subState") == "scoi:qa"
    notes = unit.findall("x:notes/x:note", NS20)
    assert notes[-1].get("category") == "scoi-qa" and notes[-1].text == \
        "segment s1: scoi QA: missing <1/>; missing <2>"


def test_po_plural_and_placeholder_messages_are_segments():
    segs = po.read(_data("messages.po"), "messages.po", "fr", "en")
    assert [s.masked for s in segs] == [
        "Le chat dort.",
        "Bonjour <1/>, vous avez <2/> messages.",
        "Un fichier supprimé par <1/>.",
        "<1/> fichiers supprimés par <2/>.",
        "Ouvrir <1/> dans <2/> secondes.",
    ]  # the translated and the obsolete entries are left alone
    assert segs[2].key + ":plural" == segs[3].key


def test_po_written_back_restores_placeholders_fills_plurals_and_flags_fuzzy():
    data = _data("messages.po")
    answers = {"Le chat dort.": "The cat sleeps.",
               "Bonjour <1/>, vous avez <2/> messages.": "Hello <1/>, you have <2/> messages.",
               "Un fichier supprimé par <1/>.": "One file deleted by <1/>.",
               "<1/> fichiers supprimés par <2/>.": "<1/> files deleted by <2/>.",
               "Ouvrir <1/> dans <2/> secondes.": "Open <1/> in <2/> seconds."}
    segs = po.read(data, "messages.po")
    filled = {s.key: Filled(answers[s.masked]) for s in segs}
    filled[segs[-1].key] = Filled("Open <1/> in seconds.", ["missing <2/>"])
    out, n = po.write(data, "messages.po", filled, "en")
    assert n == 4
    entries = {e.msgid: e for e in polib.pofile(out.decode())}
    assert entries["Bonjour %(name)s, vous avez %d messages."].msgstr == "Hello %(name)s, you have %d messages."
    plural = entries["Un fichier supprimé par %s."]
    assert plural.msgstr_plural == {0: "One file deleted by %s.", 1: "%d files deleted by %s."}
    assert all("fuzzy" in e.flags for e in entries.values() if e.msgid and not e.obsolete and e.msgid != "Déjà traduit.")
    assert "fuzzy" in plural.flags and "python-format" in plural.flags
    assert entries["Le chat dort."].comment == "Shown on the home page."
    brace = entries["Ouvrir {filename} dans {0} secondes."]
    assert brace.msgstr == "Open {filename} in seconds." and brace.tcomment == "scoi QA: missing <2/>"
    assert entries["Déjà traduit."].msgstr == "Already translated." and "fuzzy" not in entries["Déjà traduit."].flags


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE xliff [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="fr"><body>
<trans-unit id="1"><source>&b;</source></trans-unit></body></file></xliff>"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE xliff [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="fr"><body>
<trans-unit id="1"><source>&secret;</source></trans-unit></body></file></xliff>"""


def _bad(data: bytes, *expected: str, reader=xliff.read, tgt: str = "en") -> str:
    with pytest.raises(DocumentError) as e:
        reader(data, "bad.xlf", "fr", tgt)
    msg = str(e.value)
    assert "\n" not in msg
    for text in expected:
        assert text in msg, msg
    return msg


@pytest.mark.parametrize("data", [BILLION_LAUGHS, EXTERNAL])
def test_xml_entity_attacks_are_refused(data):
    _bad(data, "bad.xlf:1:", "internal subset")


def test_a_doctype_that_only_names_its_dtd_is_read_without_loading_it():
    data = _data("ui.fr-en.xlf").replace(b"<xliff ", b'<!DOCTYPE xliff SYSTEM "file:///nonexistent/xliff.dtd">\n<xliff ', 1)
    assert len(xliff.read(data, "ui.xlf", "fr", "en")) == 4


def test_tmx_ingest_refuses_an_internal_dtd_subset(tmp_path):
    from ingest.read_tmx import read_tmx
    from ingest.records import InputError

    tmx = tmp_path / "attack.tmx"
    tmx.write_bytes(b"""<?xml version="1.0"?>
<!DOCTYPE tmx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<tmx version="1.4"><header srclang="fr"/><body><tu><tuv xml:lang="fr"><seg>&b;</seg></tuv>
<tuv xml:lang="en"><seg>b</seg></tuv></tu></body></tmx>""")
    with pytest.raises(InputError, match="internal subset"):
        list(read_tmx(str(tmx), "fr", "en"))


def test_bad_xliff_files_are_one_line_naming_file_line():
    good = _data("ui.fr-en.xlf")
    _bad(good.replace(b"</g> pour", b"</x> pour"), "bad.xlf:13:", "malformed XLIFF")
    _bad(good.replace(b'<trans-unit id="save">', b"<trans-unit>"), "bad.xlf:12:", "without an id")
    _bad(good.replace(b'id="save"', b'id="title"'), "bad.xlf:12:", "'title' appears twice")
    _bad(good, "bad.xlf:3:", "source-language is 'fr'", "--src", reader=lambda d, n, s, t: xliff.read(d, n, "de", t))
    _bad(good, "target-language is 'en'", tgt="ja")
    _bad(b"<tmx version='1.4'><body/></tmx>", "bad.xlf:1:", "not an XLIFF file")
    _bad(good.replace(b'version="1.2"', b'version="3.0"'), "bad.xlf:2:", "not supported")


def test_bad_po_files_are_one_line_naming_file_line():
    good = _data("messages.po")
    _bad(good.replace(b"#: app/views.py:20\n", b"garbage here\n"), "bad.xlf:16:", "malformed PO", reader=po.read)
    _bad(good.replace("supprimé".encode(), b"supprim\xe9", 1), "bad.xlf:23:", "invalid UTF-8", reader=po.read)
    _bad(good, "Language header is 'en'", reader=po.read, tgt="de")


def test_printf_is_a_placeholder_only_in_format_strings():
    data = b'msgid "Vraiment 100% sur de %s."\nmsgstr ""\n\n#, c-format\nmsgid "Encore %s."\nmsgstr ""\n'
    assert [s.masked for s in po.read(data, "p.po")] == ["Vraiment 100% sur de %s.", "Encore <1/>."]


def test_reading_does_not_change_the_file_bytes():
    data = _data("ui.fr-en.xlf")
    kept = copy.copy(data)
    xliff.write(data, "ui.fr-en.xlf", _echo(xliff.read(data, "ui.fr-en.xlf")))
    assert data == kept


SPANS_20 = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.1" srcLang="fr" trgLang="en">
  <file id="f1"><unit id="u1"><segment>
    <source>Lire <sc id="1" type="fmt"/>la <pc id="2">notice</pc><ec startRef="1"/> avant.<sc id="3" isolated="yes"/></source>
  </segment></unit></file>
</xliff>
"""
SPANS_12 = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="fr"><body>
  <trans-unit id="t"><source>Lire <bpt id="1" rid="7">&lt;a&gt;</bpt>la notice<ept id="2" rid="7">&lt;/a&gt;</ept>.</source>
  </trans-unit></body></file></xliff>
"""


def test_a_span_of_sc_and_ec_is_one_code_around_its_text_and_comes_back_as_both():
    [seg] = xliff.read(SPANS_20, "s.xlf")
    assert seg.masked == "Lire <1>la <2>notice</2></1> avant.<3/>"
    out, _ = xliff.write(SPANS_20, "s.xlf", {seg.key: Filled("Read <1>the <2>manual</2></1> first.<3/>")})
    target = etree.fromstring(out).find(".//x:target", NS20)
    assert etree.tostring(target, encoding="unicode").split(">", 1)[1].rsplit("<", 1)[0] == (
        'Read <sc id="1" type="fmt"/>the <pc id="2">manual</pc><ec startRef="1"/> first.<sc id="3" isolated="yes"/>')


def test_a_span_end_moved_before_its_start_is_left_out_never_written_reversed():
    [seg] = xliff.read(SPANS_12, "s.xlf")
    assert seg.masked == "Lire <1>la notice</1>."
    out, _ = xliff.write(SPANS_12, "s.xlf", {seg.key: Filled("</1>Read the manual<1>.")})
    target = etree.fromstring(out).find(".//x:target", NS12)
    assert len(target) == 0 and target.text == "Read the manual."
