"""The public API re-exported from ``scoi``: every name resolves, and importing the
package alone loads none of the heavy modules (the CLI's start-up depends on it)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import scoi


def test_every_exported_name_resolves() -> None:
    """Each name is the real module-level class or function (not a stand-in), and the
    version is the one the package is built with."""
    for name in scoi.__all__:
        if name == "__version__":
            continue
        obj = getattr(scoi, name)
        assert callable(obj), name
        assert getattr(importlib.import_module(obj.__module__), obj.__name__) is obj, name
        assert obj.__name__ == name or (name, obj.__name__) == ("select_examples", "select")
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert scoi.__version__ == project["version"]
    assert scoi.Selector.__module__ == "scoi.selection.selector"
    assert scoi.select_examples.__module__ == "scoi.core.greedy"


def test_import_scoi_is_cheap() -> None:
    code = ("import sys, scoi; heavy = [m for m in ('numpy', 'psycopg', 'spacy', 'scoi.selection.selector', 'sqlalchemy') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import scoi loaded {out}"
