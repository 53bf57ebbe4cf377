"""The SQL that writes or checks posting blocks outside Python (a rebuild, the directory
check, migration 0022) spells the layout's sizes as literals: they must be bm25blocks'."""

from __future__ import annotations

import re
from pathlib import Path

from scoi.core.bm25blocks import BLOCK, DIR, GROUP

ROOT = Path(__file__).resolve().parents[2]


def test_rebuild_and_checks_use_the_block_and_group_sizes() -> None:
    rebuild = (ROOT / "scoi/db/sql/bm25.sql").read_text()
    assert re.findall(r"- 1\) / (\d+) AS block_no", rebuild) == [str(BLOCK)]
    assert set(re.findall(r"block_no / (\d+)", rebuild)) == {str(GROUP)}
    assert f"= {GROUP} * {BLOCK}" in rebuild
    check = (ROOT / "scoi/db/sql/check.sql").read_text()  # the blocks themselves: scoi.core.blockcheck
    assert f"b.n * {DIR.itemsize}" in check
    migration = (ROOT / "migrations/versions/0022_bm25_block_groups.py").read_text()
    assert f"count(*) = {GROUP} AND sum(length(tfdl)) = 2 * {GROUP} * {BLOCK}" in migration
    assert f"substr(r.ids, 1 + 4 * {BLOCK} * k, 4 * {BLOCK})" in migration
