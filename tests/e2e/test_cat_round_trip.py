"""A localization team's round trip through the real CLI: an XLIFF (or PO) file in, a job on the
fake OpenAI server, the same file out with targets filled, every inline code kept where the
model kept it, and the items whose codes the model broke flagged in status, export and the
file. Bad files store nothing. Real PostgreSQL, real parsers, the real CLI."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polib
from lxml import etree

from tests.helpers.cli import last_json, refused, run_scoi, scoi_cli
from tests.helpers.database import scalar
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.jobs import items

DATA = Path(__file__).resolve().parents[1] / "data" / "cat"
NS12 = {"x": "urn:oasis:names:tc:xliff:document:1.2"}


def translate(prompt: str) -> str:
    """The fake model: the prompt's last source sentence with its placeholders echoed, a few
    words swapped; it drops <2>...</2> around "fichier" and invents <b> around "chat"
    when the sentence has no codes, as models do."""
    source = re.findall(r'French Sentence: "(.*)"\n', prompt)[-1]
    answer = source.replace("Le ", "The ").replace("Cliquez", "Click")
    if "fichier" in answer:
        answer = answer.replace("<2>", "").replace("</2>", "")
    if "<" not in source:
        answer = answer.replace("chat", "<b>cat</b>")
    return f' "{answer}"\n###\n'


def _inline(el) -> list[tuple[str, dict]]:
    return [(etree.QName(c).localname, dict(c.attrib)) for c in el.iter() if c is not el]


def _submit(url: str, path: Path, server: FakeOpenAI, *extra: str):
    """``job submit`` of a CAT file whose every segment goes to the model (``--reuse off``:
    the demo memory holds some of these sentences)."""
    return scoi_cli(["job", "submit", "--input", str(path), "--src", "fr", "--tgt", "en", "--model", "openai:stub",
                     "--reuse", "off", "--backend-opt", "max_retries=0", "--backend-opt", f"base_url={server.url}", "--json", *extra],
                    url)


def test_xliff_in_job_xliff_out_keeps_every_tag_and_flags_broken_ones(job_db, tmp_path):
    src = tmp_path / "ui.fr-en.xlf"
    shutil.copy(DATA / "ui.fr-en.xlf", src)
    with FakeOpenAI(answer=translate) as server:
        job = last_json(_submit(job_db, src, server, "-k", "2", "--name", "ui"))
        assert job["items"] == 4
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], job_db))
    assert summary["done"] == 4

    rows = {r["source_key"]: r for r in items(job_db, job["job_id"])}
    save = rows["1/save"]
    assert save["source"] == "Cliquez ici pour enregistrer le fichier."  # selection's text: no codes
    assert save["masked"] in save["prompt"] and save["selection_id"] is not None
    assert save["qa"] == ["missing <2>"]
    assert rows["1/nested"]["qa"] == [] and rows["1/break"]["qa"] == []
    assert rows["1/title"]["qa"] == ["invented <b>", "invented </b>"]

    status = last_json(scoi_cli(["job", "status", "ui", "--json"], job_db))
    assert status["qa"]["flagged"] == 2
    assert [(q["source_key"], q["qa"]) for q in status["qa"]["items"]] == [
        ("1/title", ["invented <b>", "invented </b>"]), ("1/save", ["missing <2>"])]
    text = scoi_cli(["job", "status", "ui"], job_db).stdout
    assert "2 items broke their inline codes" in text and "key '1/save'" in text

    out = tmp_path / "ui.en.xlf"
    done = last_json(scoi_cli(["job", "export", "ui", "--format", "xliff", "-o", str(out), "--json"], job_db))
    assert done["rows"] == 4
    root = etree.parse(str(out)).getroot()  # well-formed
    original = etree.parse(str(src)).getroot()
    assert [u.get("id") for u in root.iterfind(".//x:trans-unit", NS12)] == \
        [u.get("id") for u in original.iterfind(".//x:trans-unit", NS12)]
    for uid in ("break", "nested"):
        unit = root.find(f".//x:trans-unit[@id='{uid}']", NS12)
        source, target = unit.find("x:source", NS12), unit.find("x:target", NS12)
        assert _inline(target) == _inline(source), uid
        assert target.get("state") == "needs-review-translation"
    nested = root.find(".//x:trans-unit[@id='nested']/x:target", NS12)
    assert etree.tostring(nested, encoding="unicode").split(">", 1)[1].startswith(
        '<g id="4">Voir <g id="5">la page <x id="6"/> suivante</g></g> maintenant.')
    save_unit = root.find(".//x:trans-unit[@id='save']", NS12)
    assert _inline(save_unit.find("x:target", NS12)) == [("g", {"id": "1", "ctype": "bold"})]
    assert save_unit.findall("x:note", NS12)[-1].text == "scoi QA: missing <2>"
    title = root.find(".//x:trans-unit[@id='title']/x:target", NS12)
    assert len(title) == 0 and title.text == "The <b>cat</b> dort sur le canapé."  # text, not markup
    assert root.find(".//x:trans-unit[@id='done']/x:target", NS12).get("state") == "final"

    piped = scoi_cli(["job", "export", "ui", "--format", "xliff", "-o", "-"], job_db).stdout
    assert piped.encode() == out.read_bytes()  # stdout: the same file

    jsonl = scoi_cli(["job", "export", "ui"], job_db).stdout.splitlines()
    assert [json.loads(line)["qa"] for line in jsonl] == [["invented <b>", "invented </b>"], ["missing <2>"], [], []]

    wrong = run_scoi(["job", "export", "ui", "--format", "po", "-o", str(tmp_path / "x.po")], job_db)
    assert wrong.returncode != 0 and "--format xliff" in wrong.stderr and not (tmp_path / "x.po").exists()


def test_po_in_job_po_out_restores_placeholders_and_plurals(job_db, tmp_path):
    src = tmp_path / "messages.po"
    shutil.copy(DATA / "messages.po", src)
    with FakeOpenAI(answer=translate) as server:
        job = last_json(_submit(job_db, src, server, "--method", "zero", "-k", "0"))
        assert job["items"] == 5
        assert last_json(scoi_cli(["worker", "--burst", "--json"], job_db))["done"] == 5
    out = tmp_path / "messages.en.po"
    scoi_cli(["job", "export", str(job["job_id"]), "--format", "po", "-o", str(out)], job_db)
    entries = {e.msgid: e for e in polib.pofile(str(out))}
    assert entries["Bonjour %(name)s, vous avez %d messages."].msgstr == "Bonjour %(name)s, vous avez %d messages."
    plural = entries["Un fichier supprimé par %s."]
    assert plural.msgstr_plural == {0: "Un fichier supprimé par %s.", 1: "%d fichiers supprimés par %s."}
    assert "fuzzy" in plural.flags
    assert entries["Le chat dort."].msgstr == "The <b>cat</b> dort."
    assert entries["Le chat dort."].tcomment == "scoi QA: invented <b>; invented </b>"
    assert entries["Déjà traduit."].msgstr == "Already translated."


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE xliff [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="fr"><body>
<trans-unit id="1"><source>&b;</source></trans-unit></body></file></xliff>
"""


def test_bad_cat_files_are_refused_with_file_line_and_store_nothing(job_db, tmp_path):
    good = (DATA / "ui.fr-en.xlf").read_text(encoding="utf-8")
    cases = {
        "attack.xlf": (BILLION_LAUGHS, "attack.xlf:1: a DOCTYPE with an internal subset"),
        "broken.xlf": (good.replace("</g> pour", "</x> pour"), "broken.xlf:13: malformed XLIFF"),
        "noid.xliff": (good.replace('<trans-unit id="break">', "<trans-unit>"), "noid.xliff:15: <trans-unit> without"),
        "bad.po": ('msgid "Un."\nmsgstr ""\nnonsense\n', "bad.po:3: malformed PO"),
        "done.po": ('msgid "Un."\nmsgstr "One."\n', "nothing to translate"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        refused(scoi_cli(["job", "submit", "--input", str(path), "--src", "fr", "--tgt", "en", "--model",
                          "openai:stub", "--method", "zero", "-k", "0"], job_db), expected)
    assert scalar(job_db, "SELECT count(*) FROM job") == 0
    assert scalar(job_db, "SELECT count(*) FROM job_document") == 0


def test_job_sync_points_a_cat_file_to_schedules(job_db, tmp_path):
    src = tmp_path / "messages.po"
    shutil.copy(DATA / "messages.po", src)
    refused(scoi_cli(["job", "sync", "--input", str(src), "--name", "po", "--src", "fr", "--tgt", "en", "--model",
                      "openai:stub"], job_db), "job sync reads text lines", "scoi schedule add")
    assert scalar(job_db, "SELECT count(*) FROM job") == 0
