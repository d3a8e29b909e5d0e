"""chalicelib's modules import each other in one direction only: no circle."""

from __future__ import annotations

import ast
from pathlib import Path

CHALICELIB = Path(__file__).resolve().parents[2] / "chalicelib"


def module_name(path: Path) -> str:
    parts = path.relative_to(CHALICELIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The chalicelib modules `path` imports, at the top, lazily or for types alike."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found & known


def test_chalicelib_has_no_import_circle() -> None:
    modules = {module_name(path): path for path in CHALICELIB.rglob("*.py")}
    graph = {name: imports_of(path, set(modules)) - {name} for name, path in modules.items()}

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join((*trail, name))
        for imported in sorted(graph[name]):
            visit(imported, (*trail, name))

    for name in sorted(graph):
        visit(name, ())
