"""``scoi glossary`` as a user runs it (a real process): a bad file is one line naming
file:line, exit 1, nothing stored; a good one is added and listed."""

from __future__ import annotations

from pathlib import Path

import psycopg

from tests.helpers.cli import refused, run_scoi

TBX = Path(__file__).resolve().parents[1] / "data" / "glossary" / "board.fr-en.tbx"


def test_a_broken_tbx_is_one_line_and_stores_nothing(db_url: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.tbx"
    broken.write_text(TBX.read_text(encoding="utf-8").replace("<tig><term>UN</term></tig>", "<tig><term>UN</term>", 1),
                      encoding="utf-8")  # an entry near the end lost a closing tag: nothing before it is stored
    line = refused(run_scoi(["glossary", "add", str(broken), "--src", "fr", "--tgt", "en"], db_url),
                   "broken.tbx:", "malformed TBX")
    assert "broken.tbx:43: malformed TBX: Opening and ending tag mismatch: tig line 42 and langSet" in line
    with psycopg.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM glossary_entry").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM glossary").fetchone() == (0,)


def test_a_tbx_is_added_and_listed(db_url: str) -> None:
    added = run_scoi(["glossary", "add", str(TBX), "--src", "fr", "--tgt", "en"], db_url, check=True)
    assert "glossary board: 4 entries added, 0 already there" in added.stdout
    listed = run_scoi(["glossary", "list"], db_url, check=True)
    assert listed.stdout.splitlines()[1].split("\t")[:3] == ["board", "4", "fr-en"]
