"""Every default a person can change is declared once, in scoi/core/defaults.py: the CLI's
options, the service's request models and query parameters take their defaults from there
(a literal number or word in one of them could drift from the library's own default).
Trivial defaults stay literal: 0, 1, off switches, empty lists, None."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The callables whose first argument is a default: Typer options, pydantic fields, FastAPI query parameters.
DECLARING = {"Option", "Field", "Query"}
TRIVIAL = (0, 1, None, False, True, ...)
#: Literal defaults still to move; each names its reason.
PENDING: dict[tuple[str, str], object] = {}  # literal defaults not moved yet: none


def literal_defaults(source: str) -> list[tuple[str, object]]:
    """(option or field, value) of each declaring call in ``source`` whose default is a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        value = node.args[0].value
        if name in DECLARING and value not in TRIVIAL and not isinstance(value, bool):
            label = next((a.value for a in node.args[1:] if isinstance(a, ast.Constant)), "?")
            found.append((label, value))
    return found


def test_cli_options_and_request_fields_take_their_defaults_from_core_defaults() -> None:
    files = [*sorted((ROOT / "scoi/cli").glob("*.py")), *sorted((ROOT / "scoi/service").rglob("*.py"))]
    assert len(files) > 20
    found = {(str(p.relative_to(ROOT)), label): value for p in files
             for label, value in literal_defaults(p.read_text(encoding="utf-8"))}
    # Choice lists and formats are words a person picks among, declared by their command.
    found = {k: v for k, v in found.items() if not isinstance(v, str)}
    assert found == PENDING


def test_the_scan_finds_literal_defaults_and_passes_declared_ones() -> None:
    source = """
def serve(port: int = typer.Option(8765, "--port"), timeout: float = typer.Option(30.0, "--timeout"),
          k: int = typer.Option(defaults.K, "-k"), json_out: bool = typer.Option(False, "--json"),
          workers: int = typer.Option(1, "--workers")) -> None: ...
class Body(BaseModel):
    limit: int = Field(50, ge=1)
"""
    assert literal_defaults(source) == [("--port", 8765), ("--timeout", 30.0), ("?", 50)]
