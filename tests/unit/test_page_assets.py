"""The page's files keep the rules its Content-Security-Policy and its tests rely
on: data reaches the DOM as text only, nothing inline, nothing from elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chalicelib.api import page

UI = Path(page.UI_DIR)
FILES = ("index.html", "app.js", "app.css")


def test_the_page_is_the_three_text_files_and_nothing_else() -> None:
    assert sorted(path.name for path in UI.iterdir()) == sorted(FILES)
    for name in FILES:
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
def test_the_script_never_parses_text_as_markup_or_code(markup_sink: str) -> None:
    assert markup_sink not in (UI / "app.js").read_text(encoding="utf-8")


def test_the_document_has_no_inline_script_style_or_handler() -> None:
    document = (UI / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", document) == ['<script src="{{base}}/ui/app.js" defer>']
    assert "<style" not in document
    assert not re.search(r"\sstyle=", document)
    assert not re.search(r"\son[a-z]+=", document)


@pytest.mark.parametrize("name", FILES)
def test_nothing_comes_from_another_origin(name: str) -> None:
    text = (UI / name).read_text(encoding="utf-8")
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.IGNORECASE)
    assert "@import" not in text


def test_rendering_fills_every_placeholder() -> None:
    template = (UI / "index.html").read_text(encoding="utf-8")
    rendered = page.render(template, "/api", page.AuthSettings("jwt", "email", "roles"))
    assert "{{" not in rendered
    assert '<meta name="actor-claim" content="email">' in rendered
    assert '<meta name="admin-group" content="workflow-admins">' in rendered
