"""The examples of README.md and docs/*.md, run as a reader runs them: each
page's commands in order, in one bash shell, with curl, against a `make run` on
a free loopback port and a fresh SQLite file; each answer compared with what
the page shows (the convention: tests/support/doc_examples.py, and
docs/development.md, "Examples that are run"). An example that drifts from
the service fails here, with the page and line it is on.

What differs from a reader's terminal, and why: the commands run in a
scratch directory, so that the files they write (a saved audit, a saved
verifier) stay out of the project; `make` runs in the project (`make -C`),
as it would from its root; `localhost:8000` is the test's port. The jwt
examples (docs/auth.md) run too: the page exports WORKFLOW_AUTH=jwt and a
secret it makes with openssl, then starts `make run` itself, and makes its
tokens with `make token`. The examples run on SQLite only: `make run-dynamodb`
answers alike (tests/local/test_make_run.py, and the api tier on both
backends).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import doc_examples
from tests.support.processes import PROJECT_DIR, command_env, free_port

PAGES = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").rglob("*.md"))]
RUN = [page for page in PAGES if doc_examples.read_page(page).examples]


def test_the_pages_with_examples_are_found() -> None:
    """A page whose blocks stopped matching the convention would silently run nothing."""
    names = {str(page.relative_to(PROJECT_DIR)) for page in RUN}
    assert {"README.md", "docs/api.md", "docs/auth.md", "docs/audit.md"} <= names


@pytest.mark.parametrize("path", RUN, ids=[str(p.relative_to(PROJECT_DIR)) for p in RUN])
def test_every_example_answers_what_its_page_shows(path: Path, tmp_path: Path) -> None:
    assert shutil.which("curl"), "the examples run with curl, as the pages do"
    page = doc_examples.read_page(path)

    problems = doc_examples.run(page, tmp_path, command_env(tmp_path), free_port())

    assert not problems, "\n\n".join(problems)


def test_an_example_that_drifted_fails(tmp_path: Path) -> None:
    """The runner compares: a wrong status, a wrong value, a missing member, a
    member the page does not show and a wrong header each say so."""
    drifted = tmp_path / "drifted.md"
    drifted.write_text(
        "\n".join(
            [
                "```sh",
                "curl -s -X POST localhost:8000/workflows -H 'Content-Type: application/json' \\",
                '     -d \'{"name": "Purchase order"}\'',
                '# -> 200 {"id": 2, "title": "Purchase order", ...}',
                "curl -s localhost:8000/runs/1",
                '# -> 404 {"error": "Run 1 not found", "run_id": 1}',
                "curl -s localhost:8000/workflows/1",
                '# -> 200 {"id": 1, "name": "Purchase order"}',
                "curl -si localhost:8000/workflows/1",
                "# -> 200 Location: /workflows/1",
                "curl -s localhost:8000/runs/2",
                "```",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    work = tmp_path / "work"
    work.mkdir()
    page = doc_examples.read_page(drifted, "drifted.md")

    problems = doc_examples.run(page, work, command_env(tmp_path), free_port())

    assert [problem.split(":", 2)[1] for problem in problems] == ["2", "5", "7", "9", "11"]
    text = "\n".join(problems)
    assert "the page shows 200, the server answered 201" in text
    assert "$.id: the page shows 2, got 1" in text
    assert '$: no member "title"' in text
    assert 'no member "run_id"' in text
    assert "members the page does not show" in text
    assert "the page shows Location: /workflows/1, the answer has None" in text
    assert "answered 404, and the page shows no answer" in text
