"""spaCy imported for the CLI without torch, in a fresh interpreter."""

from __future__ import annotations


def test_spacy_imported_without_torch_leaves_torch_importable():
    """spaCy is imported with torch hidden, and the hiding is undone (a transformers
    backend in the same process can still import torch)."""
    import subprocess
    import sys

    code = ("import sys, importlib.util\n"
            "from scoi.parsers import import_spacy\n"
            "import_spacy(with_torch=False)\n"
            "import thinc.compat\n"
            "assert 'spacy' in sys.modules and 'torch' not in sys.modules and not thinc.compat.has_torch\n"
            "assert importlib.util.find_spec('torch') is not None  # still installed and importable\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
