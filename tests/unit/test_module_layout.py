"""The code's layout rules, read from the source with ``ast`` (no import is executed):
short modules, no import circle among scoi's and ingest's own modules (imports inside
functions count: they only hide a circle), no private name imported from another module,
and ``ingest`` built on ``scoi``, never the reverse.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("scoi", "ingest")
MAX_LINES = 400

# Modules over the limit while a parallel branch splits them (each entry goes when its split
# is merged; the parallel splits are merged, so none is left).
BEING_SPLIT: frozenset[str] = frozenset()


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages (migrations, which
    are loaded by Alembic and not imported by name, and symlinked folders left out)."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for folder, dirs, files in os.walk(ROOT / package):
            dirs[:] = sorted(d for d in dirs if d not in ("migrations", "__pycache__")
                             and not (Path(folder) / d).is_symlink())
            for name in files:
                if name.endswith(".py"):
                    path = Path(folder) / name
                    parts = list(path.relative_to(ROOT).with_suffix("").parts)
                    if parts[-1] == "__init__":
                        parts.pop()
                    out[".".join(parts)] = path
    return out


MODULES = module_files()


def is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def imports(module: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, imported module, name imported from it or None) of every import statement
    of ``module``, at any depth (functions, methods, ``if TYPE_CHECKING``), relative ones
    resolved."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package(module) else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                yield node.lineno, base, alias.name


def own_target(imported: str, name: str | None) -> str | None:
    """The module of scoi or ingest an import loads (``from scoi.core import prompt`` loads
    scoi.core.prompt), or None when it is not one of theirs."""
    if name is not None and f"{imported}.{name}" in MODULES:
        return f"{imported}.{name}"
    return imported if imported in MODULES else None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for _, imported, name in imports(module):
            target = own_target(imported, name)
            if target is not None and target != module:
                graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_sees_a_circle_hidden_in_a_function_and_nothing_else():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_is_longer_than_the_limit():
    too_long = {m: n for m, path in MODULES.items()
                if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES and m not in BEING_SPLIT}
    assert not too_long, f"modules over {MAX_LINES} lines (split them by what they hold): {too_long}"


def test_scoi_and_ingest_modules_import_no_circle():
    circles = [c for c in cycles(import_graph()) if not BEING_SPLIT & set(c)]
    assert not circles, f"import circles (counting imports inside functions): {circles}"


def test_no_private_name_is_imported_from_another_module():
    private = [f"{module}:{line} imports {name} from {imported}"
               for module in MODULES if module not in BEING_SPLIT
               for line, imported, name in imports(module)
               if name and name.startswith("_") and not name.startswith("__")
               and imported.split(".")[0] in PACKAGES]
    assert not private, "private names imported across modules:\n" + "\n".join(private)


def test_ingest_is_never_imported_by_scoi_outside_the_cli():
    """scoi is the library; ingest builds on it. Only the CLI's commands call ingest, and
    only inside the command, so that importing scoi (or its CLI) never loads ingest."""
    wrong = []
    for module in MODULES:
        if module.split(".")[0] != "scoi":
            continue
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        top_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n.split(".")[0] == "ingest" for n in names):
                if not module.startswith("scoi.cli.") or id(node) in top_level:
                    wrong.append(f"{module}:{node.lineno}")
    assert not wrong, f"scoi imports ingest (only a CLI command may, inside the command): {wrong}"


def test_the_layout_rules_see_every_module():
    """The walk finds the packages' modules, so the checks above cannot pass vacuously."""
    assert {"scoi", "scoi.core.prompt", "ingest", "ingest.pipeline", "ingest.writer"} <= set(MODULES)
    graph = import_graph()
    assert "ingest.writer" in graph["ingest.pipeline"]
    assert "ingest.pipeline" in graph["scoi.cli.ingest_cmd"]  # imported inside the command: still an edge
    assert "scoi.backends.base" in graph["scoi.backends.loader"]  # a relative import, resolved
