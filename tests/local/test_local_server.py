"""The local server of `make run` (scripts/local_server.py), in this process on
a free loopback port, on a real SQLite file: unknown paths answer as the
deployed API does, each request writes one access line, the routes answer as
the app does."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts import local_server
from tests.support.access import access_lines
from tests.support.backends import sqlite_backend
from tests.support.http import TIMEOUT, request, send
from tests.support.serving import served


@pytest.fixture
def port(tmp_path: Path, serve: None) -> Iterator[int]:
    """The port of the app on build_server, serving a fresh SQLite file."""
    with sqlite_backend(tmp_path) as open_storage, served(open_storage()) as port:
        yield port


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/index.html"),
        ("GET", "/ui/modules/nope.js"),
        ("GET", "/nope"),
        ("GET", "/workflows/1/nope"),
        ("POST", "/runs/1/approve/twice"),
        ("DELETE", "/workflow"),
        ("OPTIONS", "/nope"),
        ("GET", "/nope?limit=1"),
    ],
)
def test_an_unknown_path_answers_404_in_the_error_shape_with_a_request_id(
    port: int, capsys: pytest.CaptureFixture[str], method: str, path: str
) -> None:
    capsys.readouterr()
    answer = request(port, method, path, body={"name": "x"} if method == "POST" else None)
    assert answer.status == 404
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json() == {"error": local_server.NO_ROUTE}
    request_id = answer.headers["X-Request-Id"]
    assert request_id
    lines = access_lines(capsys.readouterr().out)
    assert len(lines) == 1
    assert lines[0]["request_id"] == request_id
    assert (lines[0]["method"], lines[0]["route"], lines[0]["status"]) == (method, None, 404)


@pytest.mark.parametrize("origin", [None, "https://approvals.example.com"])
def test_an_unknown_path_names_the_allowed_origin_as_the_deployed_api_does(
    tmp_path: Path, serve: None, monkeypatch: pytest.MonkeyPatch, origin: str | None
) -> None:
    """Deployed, API Gateway's 404 carries the stage's origin (deploy/stack.yaml),
    so that a page on it can read the error; `make run`'s does too."""
    if origin is None:
        monkeypatch.delenv("WORKFLOW_CORS_ORIGIN", raising=False)
    else:
        monkeypatch.setenv("WORKFLOW_CORS_ORIGIN", origin)
    with sqlite_backend(tmp_path) as open_storage, served(open_storage()) as port:
        answer = request(port, "GET", "/nope")
        routed = request(port, "GET", "/workflows")
    assert answer.status == 404
    assert answer.headers["Access-Control-Allow-Origin"] == (origin or "*")
    assert (
        routed.headers["Access-Control-Allow-Origin"]
        == answer.headers["Access-Control-Allow-Origin"]
    )


def test_the_approvers_page_is_served_as_text_with_its_access_line(
    port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    for path, content_type in (("/", "text/html"), ("/ui/app.js", "text/javascript")):
        answer = request(port, "GET", path)
        assert answer.status == 200
        assert answer.headers["Content-Type"] == f"{content_type}; charset=utf-8"
        assert answer.headers["Content-Security-Policy"].startswith("default-src 'none'")
    routes = [(line["route"], line["status"]) for line in access_lines(capsys.readouterr().out)]
    assert routes == [("/", 200), ("/ui/{name}", 200)]


@pytest.mark.parametrize(
    "path", ["/ui/..%2Fapi%2Fpage.py", "/ui/%2E%2E%2Fopenapi.json", "/ui/index.html"]
)
def test_no_file_but_the_pages_modules_and_style_sheets_is_served(port: int, path: str) -> None:
    answer = request(port, "GET", path)
    assert answer.status == 404
    assert answer.json()["error"].startswith("Page file ")
    assert answer.headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_an_unknown_path_answers_head_without_a_body(port: int) -> None:
    answer = request(port, "HEAD", "/nope")
    assert (answer.status, answer.body) == (404, b"")
    assert answer.headers["X-Request-Id"]


def test_a_connection_carries_on_after_an_unknown_path(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        # The unknown path's body is read, so the next request starts where it should.
        assert send(connection, "POST", "/nope", {"name": "x" * 10_000}).status == 404
        created = send(connection, "POST", "/workflows", {"name": "After", "steps": ["a"]})
        assert created.status == 201
        assert send(connection, "GET", f"/workflows/{created.json()['id']}").status == 200
    finally:
        connection.close()


def test_each_request_writes_one_access_line_and_http_server_none(
    port: int, capfd: pytest.CaptureFixture[str]
) -> None:
    capfd.readouterr()
    answers = [
        request(port, "POST", "/workflows", {"name": "Logged", "steps": ["a"]}),
        request(port, "GET", "/workflows/1"),
        request(port, "GET", "/nope"),
        request(port, "PUT", "/workflows"),
        request(port, "GET", "/workflows/999"),
    ]
    assert [answer.status for answer in answers] == [201, 200, 404, 405, 404]
    written = capfd.readouterr()
    lines = access_lines(written.out)
    assert [line["request_id"] for line in lines] == [
        answer.headers["X-Request-Id"] for answer in answers
    ]
    # http.server's own line: 127.0.0.1 - - [01/Dec/2026 10:00:00] "GET /nope HTTP/1.1" 404 -
    assert "HTTP/1.1" not in written.err + written.out


def test_the_routes_answer_as_the_app_does(port: int) -> None:
    created = request(port, "POST", "/workflows", {"name": "Served", "steps": ["a", "b"]})
    assert created.status == 201
    assert created.headers["Location"] == f"/workflows/{created.json()['id']}"
    assert request(port, "GET", "/workflows/999").json() == {"error": "Workflow 999 not found"}
    not_allowed = request(port, "PUT", "/workflows")
    assert not_allowed.status == 405
    assert set(not_allowed.json()) == {"error"}
    preflight = request(
        port, "OPTIONS", "/workflows", headers={"Access-Control-Request-Method": "POST"}
    )
    assert preflight.status == 200
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
