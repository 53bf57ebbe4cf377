"""The public API re-exported from ``scoi``: every name resolves, and importing the
package alone loads none of the heavy modules (the CLI's start-up depends on it)."""

from __future__ import annotations

import subprocess
import sys

import scoi


def test_every_exported_name_resolves() -> None:
    for name in scoi.__all__:
        assert getattr(scoi, name) is not None, name
    assert scoi.Selector.__module__ == "scoi.selection.selector"
    assert scoi.select_examples.__module__ == "scoi.core.greedy"


def test_import_scoi_is_cheap() -> None:
    code = ("import sys, scoi; heavy = [m for m in ('numpy', 'psycopg', 'spacy', 'scoi.selection.selector', 'sqlalchemy') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import scoi loaded {out}"
