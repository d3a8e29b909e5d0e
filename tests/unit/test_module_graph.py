"""chalicelib's modules import each other in one direction only, layer by layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHALICELIB = Path(__file__).resolve().parents[2] / "chalicelib"


def module_name(path: Path) -> str:
    parts = path.relative_to(CHALICELIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def every_import(path: Path) -> set[str]:
    """Every module `path` imports, by its full name, at the top or lazily alike."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_chalicelib_has_no_import_circle() -> None:
    modules = {module_name(path): path for path in CHALICELIB.rglob("*.py")}
    graph = {name: every_import(path) & set(modules) - {name} for name, path in modules.items()}

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join((*trail, name))
        for imported in sorted(graph[name]):
            visit(imported, (*trail, name))

    for name in sorted(graph):
        visit(name, ())


# Each layer of chalicelib and the layers (and outside packages) it may not import.
EDGE = ("chalicelib.api", "app")
STORAGE = "chalicelib.storage"
DELIVERY = "chalicelib.delivery"
# The rule modules the storage is handed the results of, and never imports.
RULES = tuple(f"chalicelib.domain.{name}" for name in ("audit", "events", "decision", "deadlines"))
# The use cases, which app.py calls: the edge only parses and shapes around them.
USE_CASES = (
    "chalicelib.engine",
    "chalicelib.delegations",
    "chalicelib.versions",
    "chalicelib.cursors",
    "chalicelib.contacts",
    "chalicelib.action_links",
    "chalicelib.slack_clicks",
    "chalicelib.stats",
)
FORBIDDEN = {
    "chalicelib.domain": (*EDGE, STORAGE, DELIVERY, "chalicelib.engine", "boto3", "botocore"),
    STORAGE: (*EDGE, DELIVERY, "chalicelib.engine", "chalicelib.domain.transitions", *RULES),
    DELIVERY: (*EDGE, "chalicelib.engine"),
    "chalicelib.api": (STORAGE, DELIVERY, *USE_CASES, "boto3", "botocore", "sqlite3", "_sqlite3"),
}
# The modules that may import the edge (chalicelib.api): app.py, the function's
# entry point in front of it (API Gateway's HTTP API), and the local serving
# beside it (chalice local's threads and access lines); no layer below them.
EDGE_IMPORTERS = ("app", "chalicelib.http_api", "chalicelib.background")
# And what no module of the domain imports at all: it computes, it does not store.
DOMAIN_NEVER = ("sqlite3", "_sqlite3")
MAX_LINES = 600


def crossings(name: str, imported: set[str]) -> list[str]:
    """The imports of module `name` that its layer may not make."""
    found = []
    for layer, forbidden in FORBIDDEN.items():
        if name != layer and not name.startswith(layer + "."):
            continue
        found += [
            f"{name} imports {module}"
            for module in sorted(imported)
            if any(module == banned or module.startswith(banned + ".") for banned in forbidden)
        ]
    if name.startswith("chalicelib.domain"):
        found += [f"{name} imports {m}" for m in sorted(imported) if m in DOMAIN_NEVER]
    return found


def test_each_layer_imports_only_the_layers_below_it() -> None:
    found = []
    for path in sorted(CHALICELIB.rglob("*.py")):
        found += crossings(module_name(path), every_import(path))
    assert found == []


def test_only_the_entry_points_import_the_edge() -> None:
    importing = [
        name
        for path in sorted(CHALICELIB.rglob("*.py"))
        if not (name := module_name(path)).startswith("chalicelib.api")
        and name not in EDGE_IMPORTERS
        and any(
            m == "chalicelib.api" or m.startswith("chalicelib.api.") for m in every_import(path)
        )
    ]
    assert importing == []


def test_the_layering_test_sees_a_crossing(tmp_path: Path) -> None:
    """every_import finds what a storage module importing a rule would write."""
    module = tmp_path / "leaky.py"
    module.write_text("def f():\n    from chalicelib.domain import audit\n")
    assert "chalicelib.domain.audit" in every_import(module)
    assert crossings("chalicelib.storage.leaky", every_import(module)) != []


@pytest.mark.parametrize(
    "imported", ["chalicelib.storage.sqlite.adapter", "chalicelib.engine", "boto3"]
)
def test_the_layering_test_sees_the_edge_reach_below_the_use_cases(imported: str) -> None:
    assert crossings("chalicelib.api.validation", {imported}) == [
        f"chalicelib.api.validation imports {imported}"
    ]


# CPython's accelerators behind public modules, named without an underscore.
PRIVATE_ACCELERATORS = ("c_make_encoder", "c_scanstring", "c_encode_basestring")


def private_names(path: Path) -> list[str]:
    """The private names of other packages `path` uses: a module or a name
    imported from one with a leading underscore (`_sqlite3`,
    `collections._tuplegetter`), or one of CPython's accelerators."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [
                alias.name
                for alias in node.names
                if any(part.startswith("_") for part in alias.name.split("."))
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "__future__" or node.module.startswith("chalicelib"):
                continue
            parts = [*node.module.split("."), *(alias.name for alias in node.names)]
            if any(part.startswith("_") for part in parts):
                found.append(node.module)
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_ACCELERATORS:
            found.append(node.attr)
        elif isinstance(node, ast.Constant) and node.value in PRIVATE_ACCELERATORS:
            found.append(str(node.value))
    return found


def test_the_service_uses_no_private_name_of_another_package() -> None:
    """CPython's internals change between versions without notice: the
    service keeps to the public names of the standard library and its
    dependencies (issue 43)."""
    sources = [CHALICELIB.parent / "app.py", *sorted(CHALICELIB.rglob("*.py"))]
    found = {
        str(path.relative_to(CHALICELIB.parent)): names
        for path in sources
        if (names := private_names(path))
    }
    assert found == {}


def test_the_private_name_check_sees_each_kind(tmp_path: Path) -> None:
    module = tmp_path / "internals.py"
    module.write_text(
        "import _sqlite3 as sqlite3\n"
        "from collections import _tuplegetter\n"
        "import json.encoder\n"
        "make = json.encoder.c_make_encoder\n"
        "also = getattr(json.encoder, 'c_make_encoder')\n"
        "from chalicelib.domain import record\n"
    )
    assert private_names(module) == ["_sqlite3", "collections", "c_make_encoder", "c_make_encoder"]


def test_no_module_of_chalicelib_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(CHALICELIB.parent)): lines
        for path in CHALICELIB.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_file_of_the_approvers_page_is_over_600_lines() -> None:
    """Its modules and style sheets (chalicelib/ui/) are held to the modules' cap too."""
    files = [path for path in (CHALICELIB / "ui").iterdir() if path.suffix in (".js", ".css")]
    assert files
    long = {
        path.name: lines
        for path in files
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
