"""scoi/service is laid out as FastAPI recommends and stays so: every import of scoi's own
modules at the top of its file (none hidden in a function), no import circle among the
service's modules, and the routers never import the application that includes them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "scoi" / "service"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scoi_imports(node: ast.AST) -> list[str]:
    """The scoi modules an import statement names."""
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        base = node.module
        return [f"{base}.{a.name}" for a in node.names] + [base] if base.startswith("scoi") else []
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("scoi")]
    return []


def top_level_imports(tree: ast.Module) -> set[str]:
    """Module-level imports, outside ``if TYPE_CHECKING:`` blocks."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        found.update(scoi_imports(node))
    return found


MODULES = {module_name(p): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(SERVICE.rglob("*.py"))}


def test_the_service_imports_scois_modules_only_at_the_top_of_its_files() -> None:
    hidden = []
    for name, tree in MODULES.items():
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            hidden += [f"{name}.{fn.name}: {m}" for n in ast.walk(fn) for m in scoi_imports(n)]
    assert hidden == []


def test_the_service_modules_import_no_circle() -> None:
    graph = {name: {m for m in top_level_imports(tree) if m in MODULES and m != name} for name, tree in MODULES.items()}
    assert {"scoi.service.app", "scoi.service.deps", "scoi.service.routers.jobs"} <= set(graph)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in graph[start])

    assert [name for name in graph if reaches(name, name, {name})] == []


def test_routers_never_import_the_application() -> None:
    routers = {name: tree for name, tree in MODULES.items() if name.startswith("scoi.service.routers.")}
    assert len(routers) >= 6
    assert {name for name, tree in routers.items() if "scoi.service.app" in top_level_imports(tree)} == set()
