"""The page's files keep the rules its Content-Security-Policy and its tests rely
on: data reaches the DOM as text only, nothing inline, nothing from elsewhere;
one entry module, which reaches the others by relative paths; and every limit
of a field is the OpenAPI document's, never one of the page's own."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chalicelib.api import page

UI = Path(page.UI_DIR)
DOCUMENT = json.loads((UI.parent / "openapi.json").read_text(encoding="utf-8"))
MODULES = sorted(path.name for path in UI.glob("*.js"))
FILES = sorted(path.name for path in UI.iterdir())
# `import ... from "./x.js"`, `export ... from "./x.js"` and JSDoc's `import("./x.js")`.
IMPORTED = re.compile(
    r"""(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)["']([^"']+)["']""", re.MULTILINE
)
# contract.maxLength("/runs", "title"): the limit of a field of POST /runs's body.
LIMIT_ASKED = re.compile(r"""\.maxLength\(\s*"([^"]+)",\s*"([^"]+)"\s*\)""")


def test_the_page_is_its_document_modules_and_style_sheets_and_nothing_else() -> None:
    assert "index.html" in FILES and "app.js" in MODULES
    assert [name for name in FILES if not name.endswith((".js", ".css"))] == ["index.html"]
    for name in FILES:
        assert (UI / name).is_file(), name
        (UI / name).read_bytes().decode("utf-8")


@pytest.mark.parametrize(
    "markup_sink",
    [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "setHTML",
    ],
)
@pytest.mark.parametrize("module", MODULES)
def test_the_script_never_parses_text_as_markup_or_code(markup_sink: str, module: str) -> None:
    assert markup_sink not in (UI / module).read_text(encoding="utf-8")


def test_the_document_loads_one_entry_module_and_has_no_inline_script_style_or_handler() -> None:
    document = (UI / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", document) == [
        '<script type="module" src="{{base}}/ui/app.js">'
    ]
    assert "<style" not in document
    assert not re.search(r"\sstyle=", document)
    assert not re.search(r"\son[a-z]+=", document)


def test_every_style_sheet_is_linked_by_the_document() -> None:
    document = (UI / "index.html").read_text(encoding="utf-8")
    linked = re.findall(r'<link rel="stylesheet" href="\{\{base\}\}/ui/([^"]+)">', document)
    assert sorted(linked) == sorted(name for name in FILES if name.endswith(".css"))


@pytest.mark.parametrize("module", MODULES)
def test_modules_import_each_other_by_relative_paths_to_files_of_the_page(module: str) -> None:
    """A relative path resolves under API Gateway's stage (/api/ui/) as locally (/ui/)."""
    imported = IMPORTED.findall((UI / module).read_text(encoding="utf-8"))
    for name in imported:
        assert re.fullmatch(r"\./[a-z]+\.js", name), (module, name)
        assert name[2:] in MODULES, (module, name)


def test_every_module_is_reached_from_the_entry_module() -> None:
    reached, waiting = set(), ["app.js"]
    while waiting:
        module = waiting.pop()
        if module not in reached:
            reached.add(module)
            text = (UI / module).read_text(encoding="utf-8")
            waiting += [name[2:] for name in IMPORTED.findall(text)]
    assert sorted(reached) == MODULES


@pytest.mark.parametrize("name", FILES)
def test_nothing_comes_from_another_origin(name: str) -> None:
    # SVG's namespace is a name that createElementNS takes, never fetched.
    text = (UI / name).read_text(encoding="utf-8").replace('"http://www.w3.org/2000/svg"', "")
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.IGNORECASE)
    assert "@import" not in text


@pytest.mark.parametrize("module", MODULES)
def test_no_field_limit_is_written_in_the_page(module: str) -> None:
    """Limits come from the OpenAPI document (contract.js), not a copy of validation.py's."""
    assert not re.search(
        r"\b(maxlength|max|maxItems):\s*\"\d", (UI / module).read_text(encoding="utf-8")
    )


def _resolve(node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = DOCUMENT
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _longest(node: Any) -> int | None:
    """contract.js's rule: maxLength; allOf's shortest; a union's longest, if each has one."""
    node = _resolve(node)
    if isinstance(node.get("maxLength"), int):
        return int(node["maxLength"])
    required = [limit for each in node.get("allOf", []) if (limit := _longest(each)) is not None]
    if required:
        return min(required)
    variants = [
        _longest(each)
        for each in node.get("anyOf", []) + node.get("oneOf", [])
        if _resolve(each).get("type") != "null"
    ]
    if variants and all(limit is not None for limit in variants):
        return max(limit for limit in variants if limit is not None)
    return None


def test_every_limit_the_page_asks_the_document_for_is_stated_there() -> None:
    asked = {
        (path, field)
        for module in MODULES
        for path, field in LIMIT_ASKED.findall((UI / module).read_text(encoding="utf-8"))
    }
    assert ("/workflows", "name") in asked and ("/delegations", "reason") in asked
    for path, field in sorted(asked):
        schema = DOCUMENT["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        properties = _resolve(schema["schema"])["properties"]
        assert _longest(properties[field]) is not None, (path, field)
