"""Inline codes as placeholders (scoi.core.inline): a source's codes survive a model that
echoes them, every way a model breaks them is flagged, and the tree read back from any
answer is well-nested (so the XML built from it is well-formed)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
from lxml import etree

from scoi.core import inline
from scoi.core.inline import Pc, Ph
from tests.helpers.hypothesis import examples

TEXT = st.text(alphabet=st.characters(blacklist_characters="<>", blacklist_categories=("Cs", "Cc")), max_size=8)


@st.composite
def trees(draw, depth: int = 3) -> list[inline.Node]:
    """A segment's content: text, codes on their own, codes around text, nested."""
    counter = draw(st.just([0]))

    def nodes(level: int) -> list[inline.Node]:
        out: list[inline.Node] = []
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["text", "ph", "pc"] if level < depth else ["text", "ph"]))
            if kind == "text":
                text = draw(TEXT)
                if text:
                    if out and isinstance(out[-1], str):
                        out[-1] += text
                    else:
                        out.append(text)
                continue
            counter[0] += 1
            num = counter[0]
            out.append(Ph(num) if kind == "ph" else Pc(num, tuple(nodes(level + 1))))
        return out

    return nodes(0)


def _xml(nodes) -> bytes:
    """The tree as XML, the way a writer builds a target (codes as elements)."""
    root = etree.Element("target")

    def fill(parent, children):
        last = None
        for n in children:
            if isinstance(n, str):
                if last is None:
                    parent.text = (parent.text or "") + n
                else:
                    last.tail = (last.tail or "") + n
            elif isinstance(n, Ph):
                last = etree.SubElement(parent, "x", id=str(n.id))
            else:
                last = etree.SubElement(parent, "g", id=str(n.id))
                fill(last, n.children)

    fill(root, nodes)
    return etree.tostring(root)


@settings(max_examples=examples(300), deadline=None)
@given(trees())
def test_an_echoed_answer_reads_back_as_the_source_tree_with_no_flag(tree):
    masked = inline.mask(tree)
    got, flags = inline.parse(masked, inline.source_shape(masked))
    assert got == tree and flags == []
    assert inline.check(masked, masked) == []


@settings(max_examples=examples(300), deadline=None)
@given(trees(), st.lists(st.sampled_from(["<1>", "</1>", "<2/>", "</2>", "<3>", "</3>", "<9/>", "<b>", "</i>",
                                           "<1/>", "</4/>", "x", " "]), max_size=12))
def test_any_answer_reads_back_as_well_formed_xml_of_the_source_codes(tree, parts):
    masked = inline.mask(tree)
    shape = inline.source_shape(masked)
    got, _ = inline.parse("".join(parts), shape)
    etree.fromstring(_xml(got))  # raises if not well-formed
    kept = inline.source_shape(inline.mask(got))
    assert all(shape[num][0] == kind for num, (kind, _) in kept.items())  # only the source's codes, same kind


def test_a_missing_code_is_flagged():
    assert inline.check("Cliquez <1>ici</1> pour <2/> enregistrer.", "Click here to <2/> save.") == \
        ["missing <1>"]
    assert inline.check("A <1/> B", "A B") == ["missing <1/>"]


def test_an_unclosed_code_is_flagged_and_dropped():
    answer = "Click <1>here to save."
    assert inline.check("Cliquez <1>ici</1>.", answer) == ["missing </1>"]
    tree, _ = inline.parse(answer, inline.source_shape("Cliquez <1>ici</1>."))
    assert tree == ["Click here to save."]


def test_an_extra_or_repeated_code_is_flagged():
    assert inline.check("A <1/> B", "A <1/> B <1/>") == ["extra <1/>"]
    assert inline.check("A <1/> B", "A <1/> B <7/>") == ["extra <7/>"]


def test_codes_crossing_each_other_are_flagged():
    assert inline.check("<1>a <2>b</2></1>", "<1>a <2>b</1></2>") == ["misnested <2>", "misnested </2>"]
    tree, _ = inline.parse("<1>a <2>b</1></2>", inline.source_shape("<1>a <2>b</2></1>"))
    assert tree == [Pc(1, ("a b",))]  # the crossed code is left out, its text kept


def test_a_code_moved_out_of_its_enclosing_code_is_flagged():
    assert inline.check("<1>Voir <2/> la page</1>.", "<1>See the page</1> <2/>.") == ["misnested <2/>"]


def test_codes_reordered_within_one_level_are_not_flagged():
    assert inline.check("Le <1>chat</1> de <2>Marie</2>.", "<2>Mary</2>'s <1>cat</1>.") == []


def test_markup_the_model_invents_is_flagged_and_kept_as_text():
    assert inline.check("Le chat dort.", "The <b>cat</b> sleeps.") == ["invented <b>", "invented </b>"]
    tree, _ = inline.parse("The <b>cat</b> sleeps.", inline.source_shape("Le chat dort."))
    assert tree == ["The <b>cat</b> sleeps."]  # text: a writer escapes it


def test_selection_text_has_no_placeholders():
    assert inline.plain("Cliquez <1>ici</1> pour<2/>enregistrer.") == "Cliquez ici pour enregistrer."
