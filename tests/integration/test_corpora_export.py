"""``scoi corpora export``: a corpus written as TMX (or JSON lines) and ingested into
another database gives the same pairs with the same metadata, through the CLI in this
process against real databases."""

from __future__ import annotations

import json

import psycopg
from lxml import etree

from tests.helpers.cli import cli, cli_json
from tests.helpers.database import fresh_database
from tests.helpers.ingest import write_tsv

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

# A memory as a CAT tool writes it: header prop, repeated props, notes, dates, usage count,
# <tuv> props and attributes, a language with two variants, markup in a segment.
CAT_TMX = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE tmx SYSTEM "tmx14.dtd">
<tmx version="1.4">
<header creationtool="SDL Language Platform" creationtoolversion="8.0" srclang="fr-FR" datatype="xml"
        segtype="sentence" adminlang="en-US" o-tmf="SDL TM8 Format" creationdate="20200101T000000Z">
  <prop type="x-client">acme</prop>
</header>
<body>
<tu tuid="42" creationdate="20230105T101500Z" creationid="ANNA" changedate="20240201T080000Z" changeid="BOB"
    usagecount="7" lastusagedate="20240301T000000Z">
  <prop type="x-domain">legal</prop><prop type="x-domain">tax</prop>
  <note>checked by  the client</note><note>second note</note>
  <tuv xml:lang="fr-FR" creationid="ANNA"><prop type="x-status">ok</prop><seg>Il a <bpt i="1">&lt;b&gt;</bpt>vraiment<ept i="1">&lt;/b&gt;</ept> faim &amp; soif.</seg></tuv>
  <tuv xml:lang="en-GB"><seg>He is really hungry &amp; thirsty.</seg></tuv>
  <tuv xml:lang="en-US"><seg>He is real hungry.</seg></tuv>
</tu>
<tu>
  <prop type="x-domain">general</prop><note>only one</note>
  <tuv xml:lang="fr-FR"><seg>Bonjour   tout le monde.</seg></tuv>
  <tuv xml:lang="en-GB"><seg>Hello everyone.</seg></tuv>
</tu>
</body></tmx>
"""

# Values TMX has no place for: numbers, booleans, null, objects, a one-element list, blanks.
ODD_META = [
    {"score": 0.93, "reviewed": True, "source": None, "tags": ["one"], "client": {"name": "acme", "ids": [1, 2]}},
    {"note": " padded ", "usagecount": "12", "creationdate": "2024-01-05", "": "empty key", "x-scoi-json": "mine"},
    {"line\tbreak": "a\nb", "tuid": 17, "weird": "bell\x07", "list": ["a", 2]},
]


def pairs_with_meta(db_url: str, corpus: str) -> set[tuple[str, str, str]]:
    with psycopg.connect(db_url) as conn:
        return {(src, tgt, json.dumps(meta, sort_keys=True)) for src, tgt, meta in conn.execute(
            "SELECT t.src, t.tgt, p.meta FROM pair_text t JOIN pair p ON p.id = t.pair_id WHERE t.corpus = %s",
            (corpus,))}


def ingest(db_url: str, path, corpus: str, src: str = "fr", tgt: str = "en") -> dict:
    return cli_json(["ingest", str(path), "--src", src, "--tgt", tgt, "--corpus", corpus, "--workers", "0"], db_url)


def round_trip(db_url: str, server_url: str, corpus: str, out, fmt: str = "tmx") -> set:
    """Export ``corpus`` to ``out``, ingest it into a fresh database, its (src, tgt, meta) set."""
    summary = cli_json(["corpora", "export", corpus, "--format", fmt, "-o", str(out)], db_url)
    assert summary["pairs"] == len(pairs_with_meta(db_url, corpus))
    with fresh_database(server_url) as other:
        ingest(other, out, "back")
        return pairs_with_meta(other, "back")


def test_a_cat_tool_memory_comes_back_with_the_same_pairs_and_metadata(db_url, server_url, tmp_path):
    (tmp_path / "cat.tmx").write_text(CAT_TMX, encoding="utf-8")
    ingest(db_url, tmp_path / "cat.tmx", "tm")
    before = pairs_with_meta(db_url, "tm")
    assert len(before) == 2
    meta = json.loads(next(m for s, _, m in before if s.startswith("Il a")))
    assert meta["x-domain"] == ["legal", "tax"] and meta["usagecount"] == 7 and meta["fr-fr:x-status"] == "ok"
    assert round_trip(db_url, server_url, "tm", tmp_path / "out.tmx") == before


def test_exported_tmx_is_tmx_14_with_a_header_and_a_language_per_tuv(db_url, tmp_path):
    (tmp_path / "cat.tmx").write_text(CAT_TMX, encoding="utf-8")
    ingest(db_url, tmp_path / "cat.tmx", "tm")
    assert cli(["corpora", "export", "tm", "-o", str(tmp_path / "out.tmx")], db_url).exit_code == 0
    root = etree.parse(str(tmp_path / "out.tmx")).getroot()
    header = root.find("header")
    assert root.get("version") == "1.4"
    assert {k: header.get(k) for k in ("creationtool", "datatype", "segtype", "srclang", "adminlang")} == {
        "creationtool": "scoi", "datatype": "plaintext", "segtype": "sentence", "srclang": "fr", "adminlang": "en"}
    assert header.get("creationtoolversion") and header.get("o-tmf")
    tus = root.findall("body/tu")
    assert len(tus) == 2
    assert all([tuv.get(XML_LANG) for tuv in tu.findall("tuv")] == ["fr", "en"] for tu in tus)
    first = next(tu for tu in tus if tu.get("tuid") == "42")
    assert first.get("usagecount") == "7" and first.get("creationdate") == "20230105T101500Z"
    assert [n.text for n in first.findall("note")] == ["checked by  the client", "second note"]
    assert [p.text for p in first.findall("prop[@type='x-domain']")] == ["legal", "tax"]


def test_the_other_direction_is_written_with_src(db_url, tmp_path):
    (tmp_path / "cat.tmx").write_text(CAT_TMX, encoding="utf-8")
    ingest(db_url, tmp_path / "cat.tmx", "tm")
    out = cli_json(["corpora", "export", "tm", "--src", "en", "-o", str(tmp_path / "en.tmx")], db_url)
    assert (out["src_lang"], out["tgt_lang"]) == ("en", "fr")
    root = etree.parse(str(tmp_path / "en.tmx")).getroot()
    assert root.find("header").get("srclang") == "en"
    assert [t.get(XML_LANG) for t in root.find("body/tu").findall("tuv")] == ["en", "fr"]


def test_metadata_tmx_cannot_hold_come_back_through_the_json_prop(db_url, server_url, tmp_path):
    lines = [json.dumps({"src": f"Phrase numéro {i}.", "tgt": f"Sentence number {i}.", **m})
             for i, m in enumerate(ODD_META)]
    (tmp_path / "odd.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ingest(db_url, tmp_path / "odd.jsonl", "odd")
    before = pairs_with_meta(db_url, "odd")
    assert {m for _, _, m in before} == {json.dumps(m, sort_keys=True) for m in ODD_META}
    assert round_trip(db_url, server_url, "odd", tmp_path / "odd.tmx") == before
    text = (tmp_path / "odd.tmx").read_text(encoding="utf-8")
    assert '<prop type="x-scoi-json">' in text


def test_a_tsv_corpus_with_extra_columns_comes_back_from_tmx(db_url, server_url, tmp_path):
    path = tmp_path / "tm.tsv"
    path.write_text("fr\ten\tclient\tdomain\n"
                    "Il pleut.\tIt is raining.\tacme\tweather\n"
                    "Merci.\tThank you.\tglobex\t\n", encoding="utf-8")
    ingest(db_url, path, "tsv")
    before = pairs_with_meta(db_url, "tsv")
    assert ("Merci.", "Thank you.", json.dumps({"client": "globex"})) in before
    assert round_trip(db_url, server_url, "tsv", tmp_path / "tsv.tmx") == before
    assert round_trip(db_url, server_url, "tsv", tmp_path / "tsv.jsonl", "jsonl") == before
    assert round_trip(db_url, server_url, "tsv", tmp_path / "back.tsv", "tsv") == before
    assert (tmp_path / "back.tsv").read_text(encoding="utf-8").splitlines()[0] == "fr\ten\tclient\tdomain"


def test_metadata_a_tsv_cell_cannot_hold_stops_the_tsv_export_by_pair(db_url, tmp_path):
    (tmp_path / "n.jsonl").write_text(json.dumps({"src": "Oui.", "tgt": "Yes.", "score": 0.5}) + "\n",
                                      encoding="utf-8")
    ingest(db_url, tmp_path / "n.jsonl", "n")
    out = tmp_path / "n.tsv"
    result = cli(["corpora", "export", "n", "-f", "tsv", "-o", str(out)], db_url)
    assert result.exit_code == 1 and "metadata score = 0.5 is not a TSV cell" in result.stderr
    assert not out.exists() and not (tmp_path / "n.tsv.part").exists()


def test_export_to_stdout_writes_the_file_and_nothing_else(db_url, tmp_path):
    write_tsv(tmp_path / "c.tsv", [("Oui.", "Yes."), ("Non.", "No.")])
    ingest(db_url, tmp_path / "c.tsv", "c")
    result = cli(["corpora", "export", "c", "-f", "jsonl", "-o", "-"], db_url)
    assert result.exit_code == 0
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"src": "Oui.", "tgt": "Yes."}, {"src": "Non.", "tgt": "No."}]


def test_exporting_an_unknown_corpus_or_language_fails_with_one_line_and_no_file(db_url, tmp_path):
    write_tsv(tmp_path / "c.tsv", [("Oui.", "Yes.")])
    ingest(db_url, tmp_path / "c.tsv", "c")
    out = tmp_path / "x.tmx"
    missing = cli(["corpora", "export", "nope", "-o", str(out)], db_url)
    assert missing.exit_code == 1 and "no corpus 'nope'" in missing.stderr
    wrong = cli(["corpora", "export", "c", "--src", "de", "-o", str(out)], db_url)
    assert wrong.exit_code == 1 and "holds fr and en" in wrong.stderr
    folder = cli(["corpora", "export", "c", "-o", str(tmp_path)], db_url)
    assert folder.exit_code == 1 and "is a directory" in folder.stderr
    assert not out.exists() and not (tmp_path / "x.tmx.part").exists()


def test_a_text_xml_cannot_hold_stops_the_export_and_leaves_no_file(db_url, tmp_path):
    (tmp_path / "vt.jsonl").write_text(json.dumps({"src": "Un\x0btab.", "tgt": "A tab."}) + "\n", encoding="utf-8")
    ingest(db_url, tmp_path / "vt.jsonl", "vt")
    out = tmp_path / "vt.tmx"
    result = cli(["corpora", "export", "vt", "-o", str(out)], db_url)
    assert result.exit_code == 1 and "U+000B" in result.stderr and "--format jsonl" in result.stderr
    assert not out.exists() and not (tmp_path / "vt.tmx.part").exists()
    assert cli(["corpora", "export", "vt", "-f", "jsonl", "-o", str(tmp_path / "vt.jsonl2")], db_url).exit_code == 0
