"""Reviewed CAT files back into the corpus: `scoi ingest` of an XLIFF 1.2, an XLIFF 2.1 and a PO
file that hold translations stores each translated segment as a pair (codes around text keep
their text, the others go); untranslated segments are not pairs; an attack or a broken file
is one line naming file:line with nothing stored."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.helpers.cli import cli_json, refused, scoi_cli
from tests.helpers.database import scalar
from tests.helpers.ingest import stored_pairs

DATA = Path(__file__).resolve().parents[1] / "data" / "cat"

REVIEWED_12 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="ui.html" source-language="fr" target-language="en" datatype="html">
    <body>
      <trans-unit id="save">
        <source>Cliquez <g id="1">ici</g> pour enregistrer.<x id="2"/></source>
        <target state="translated">Click <g id="1">here</g> to save.<x id="2"/></target>
      </trans-unit>
      <trans-unit id="todo">
        <source>Pas encore traduit.</source>
      </trans-unit>
    </body>
  </file>
</xliff>
"""


def _ingest(url: str, path: Path) -> dict:
    return cli_json(["ingest", str(path), "--src", "fr", "--tgt", "en", "--workers", "0"], url)


def test_reviewed_xliff_and_po_files_become_pairs(db_url, tmp_path):
    ui = tmp_path / "ui.fr-en.xlf"
    ui.write_text(REVIEWED_12, encoding="utf-8")
    out = _ingest(db_url, ui)
    assert (out["corpus"], out["inserted"]) == ("ui.fr-en", 1)
    out = _ingest(db_url, DATA / "app.fr-en.xlf")  # one segment has a target
    assert out["inserted"] == 1
    out = _ingest(db_url, DATA / "messages.po")  # one message is translated
    assert (out["corpus"], out["inserted"]) == ("messages", 1)
    assert stored_pairs(db_url) == Counter([("Cliquez ici pour enregistrer.", "Click here to save."),
                                            ("Merci.", "Thank you."), ("Déjà traduit.", "Already translated.")])


def test_bad_cat_files_are_refused_and_store_nothing(db_url, tmp_path):
    attack = tmp_path / "attack.xlf"
    attack.write_text(REVIEWED_12.replace('<?xml version="1.0" encoding="UTF-8"?>\n',
                                          '<?xml version="1.0"?>\n<!DOCTYPE xliff [<!ENTITY a "aaaa">]>\n'),
                      encoding="utf-8")
    refused(scoi_cli(["ingest", str(attack), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url),
            "attack.xlf:1:", "internal subset")
    broken = tmp_path / "broken.xlf"
    broken.write_text(REVIEWED_12.replace("</g> pour", "</x> pour"), encoding="utf-8")
    refused(scoi_cli(["ingest", str(broken), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url),
            "broken.xlf:6:", "malformed XLIFF")
    refused(scoi_cli(["ingest", str(DATA / "ui.fr-en.xlf"), "--src", "de", "--tgt", "en", "--workers", "0"], db_url),
            "source-language is 'fr'")
    assert scalar(db_url, "SELECT count(*) FROM pair") == 0
