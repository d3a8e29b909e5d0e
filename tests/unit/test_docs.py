"""The documentation's shape, without a server: the README stays a door, every
page's examples follow the convention the local tier runs them by
(tests/support/doc_examples.py), links lead somewhere, every setting is
documented, BENCHMARKS.md stays what `make bench` writes, and the architecture
page's access patterns are the DynamoDB keys module's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import doc_examples
from tests.support.doc_examples import AnyValue, Arr, Exact, Obj, PageError, Rest, Text

PROJECT_DIR = Path(__file__).resolve().parents[2]
README = PROJECT_DIR / "README.md"
PAGES = [README, PROJECT_DIR / "BENCHMARKS.md", *sorted((PROJECT_DIR / "docs").rglob("*.md"))]


def name(path: Path) -> str:
    return str(path.relative_to(PROJECT_DIR))


# -- the README --------------------------------------------------------------------


def test_the_readme_is_read_in_five_minutes() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250


def test_the_readme_names_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert re.search(r"^make run\b", text, re.MULTILINE)
    assert re.search(r"^make test\b", text, re.MULTILINE)


# -- links -------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return found


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists() or (path.suffix == ".md" and anchor not in anchors(path) | {""}):
            broken.append(target)
    assert not broken


# -- configuration -----------------------------------------------------------------


def test_every_setting_is_in_the_configuration_page() -> None:
    """Every WORKFLOW_ variable the code reads, and every variable of the Makefile."""
    page = (PROJECT_DIR / "docs" / "configuration.md").read_text(encoding="utf-8")
    sources = [PROJECT_DIR / "app.py", *PROJECT_DIR.glob("chalicelib/**/*.py")]
    sources += PROJECT_DIR.glob("scripts/*.py")
    read = {
        variable
        for source in sources
        for variable in re.findall(r"\"(WORKFLOW_[A-Z_]+)\"", source.read_text(encoding="utf-8"))
    }
    makefile = (PROJECT_DIR / "Makefile").read_text(encoding="utf-8")
    read |= set(re.findall(r"^([A-Z_]+) \?=", makefile, re.MULTILINE))
    assert read
    assert not {variable for variable in read if f"`{variable}`" not in page}


# -- BENCHMARKS.md -----------------------------------------------------------------


def test_benchmarks_md_is_the_goals_and_figures_make_bench_writes() -> None:
    """bench/run.py rewrites what lies between the markers and keeps the rest:
    the rest is a heading and a link, the narrative lives in docs/performance.md."""
    text = (PROJECT_DIR / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert text.count("<!-- bench:begin -->") == text.count("<!-- bench:end -->") == 1
    head, _, rest = text.partition("<!-- bench:begin -->")
    figures, _, tail = rest.partition("<!-- bench:end -->")
    assert "docs/performance.md" in head
    assert len(head.splitlines()) <= 12
    assert "### Goals" in figures
    assert tail.strip() == ""


# -- the examples' convention ------------------------------------------------------


@pytest.mark.parametrize("page", [README, *sorted((PROJECT_DIR / "docs").rglob("*.md"))], ids=name)
def test_every_page_follows_the_examples_convention(page: Path) -> None:
    doc_examples.read_page(page)


def test_a_page_says_why_a_curl_example_is_not_run(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\ncurl -s https://example.com/api/workflows\n```\n", encoding="utf-8")
    with pytest.raises(PageError, match="must say why"):
        doc_examples.read_page(page, "page.md")

    page.write_text("<!-- not run: deployed -->\n" + page.read_text(), encoding="utf-8")
    assert doc_examples.read_page(page, "page.md").examples == []


def test_examples_are_commands_with_what_they_answer(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "\n".join(
            [
                "```sh",
                "# a comment of the page's own",
                "curl -s -X POST localhost:8000/workflows \\",
                '     -d \'{"name": "x"}\'   # a comment after the command: it\'s ignored',
                '# -> 201 {"id": 1,',
                '#         "steps": []}',
                "# another comment",
                "TOKEN=$(make -s token USER=ada |",
                "        tr -d '\\n')",
                "curl -si localhost:8000/workflows/1",
                "# -> 200 Location: /workflows/...",
                "#    X-Request-Id: ...",
                "python3 -c 'print(1)'",
                "# -> 1",
                "```",
                "```python",
                "# save as verify.py",
                "print('valid')",
                "```",
            ]
        ),
        encoding="utf-8",
    )

    read = doc_examples.read_page(page, "page.md")

    assert [(e.line, e.command.splitlines()[0]) for e in read.examples] == [
        (3, "curl -s -X POST localhost:8000/workflows \\"),
        (8, "TOKEN=$(make -s token USER=ada |"),
        (10, "curl -si localhost:8000/workflows/1"),
        (13, "python3 -c 'print(1)'"),
    ]
    first, token, headers, printed = (e.answer for e in read.examples)
    assert first is not None and first.status == 201
    assert first.body == Obj((("id", Exact(1)), ("steps", Arr(()))), open=False)
    assert token is None
    assert headers is not None and headers.body is None
    assert headers.headers == [("Location", Text("/workflows/...")), ("X-Request-Id", Text("..."))]
    assert printed is not None and printed.status is None and printed.text == Text("1")
    assert read.files == {"verify.py": "# save as verify.py\nprint('valid')\n"}


@pytest.mark.parametrize(
    "lines",
    [
        ["# -> 200 {}", "curl -s localhost:8000/runs"],
        ["curl -s localhost:8000/runs", "", "# -> 200 {}"],
        ["curl -s localhost:8000/runs", '# -> 200 {"items": [', "curl -s localhost:8000/runs"],
        ["curl -s localhost:8000/runs", "# -> 200 not json"],
        ["curl -s 'localhost:8000/runs"],
    ],
    ids=["no-command", "not-right-after", "unended-json", "not-json", "unended-command"],
)
def test_a_page_off_the_convention_says_where(tmp_path: Path, lines: list[str]) -> None:
    page = tmp_path / "page.md"
    page.write_text("\n".join(["```sh", *lines, "```"]) + "\n", encoding="utf-8")
    with pytest.raises(PageError):
        doc_examples.read_page(page, "page.md")


@pytest.mark.parametrize(
    "shown, value",
    [
        ('{"id": 1, ...}', {"id": 1, "name": "x"}),
        ('{"id": ..., "name": "x"}', {"id": 7, "name": "x"}),
        ('{"hash": "5e0c..."}', {"hash": "5e0cff"}),
        ("[..., 3]", [1, 2, 3]),
        ('[{"a": 1, ...}, ...]', [{"a": 1, "b": 2}, {"a": 9}]),
        ("[...]", []),
        ("{...}", {"x": [1]}),
        ("2.0", 2),
        ("null", None),
    ],
)
def test_what_a_page_shows_matches(shown: str, value: object) -> None:
    assert doc_examples.mismatches(doc_examples.parse_pattern(shown), value) == []


@pytest.mark.parametrize(
    "shown, value, problem",
    [
        ('{"id": 1}', {"id": 1, "name": "x"}, "members the page does not show"),
        ('{"id": 1, ...}', {"id": 2}, "$.id: the page shows 1, got 2"),
        ('{"id": 1, ...}', {"name": "x"}, '$: no member "id"'),
        ('{"ok": true}', {"ok": 1}, "$.ok: the page shows true, got 1"),
        ('{"n": 1}', {"n": True}, "$.n: the page shows 1, got true"),
        ('["a", "b"]', ["b", "a"], '$[0]: the page shows "a", got "b"'),
        ('["a"]', ["a", "b"], "the page shows 1 items, got 2"),
        ('[..., "c"]', ["a", "b"], "no items in this order"),
        ('{"s": "ab..."}', {"s": "xab"}, '$.s: the page shows "ab..."'),
        ("{...}", [], "the page shows an object"),
    ],
)
def test_what_differs_from_the_page_is_said(shown: str, value: object, problem: str) -> None:
    found = doc_examples.mismatches(doc_examples.parse_pattern(shown), value)
    assert any(problem in line for line in found), found


def test_dots_are_a_value_an_item_or_members() -> None:
    assert doc_examples.parse_pattern('{"a": ..., ...}') == Obj((("a", AnyValue()),), open=True)
    assert doc_examples.parse_pattern("[1, ...]") == Arr((Exact(1), Rest()))


# -- the architecture ------------------------------------------------------------------


def test_the_access_patterns_of_the_architecture_page_are_those_of_the_keys_module() -> None:
    """One table, kept in the module beside the keys it names and shown on the page."""
    from chalicelib.storage.dynamodb import keys

    assert keys.__doc__ is not None
    in_code = keys.__doc__.split("Access patterns: what each request reads and writes.\n\n")[1]
    in_code = in_code.split("\n\n")[0]
    page = (PROJECT_DIR / "docs" / "architecture.md").read_text(encoding="utf-8")
    shown = page.split("<!-- access-patterns:begin -->\n```\n")[1].split("```\n<!--")[0]
    assert [line.removeprefix("    ") for line in in_code.splitlines()] == shown.splitlines()
