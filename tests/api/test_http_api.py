"""The HTTP API in front of the app (the packaged default, ApiType=http): its
payload 1.0 events, through the packaged entry point (chalicelib/http_api.py),
answer as the REST API's do.

moto's API Gateway v2 serves no Lambda integration, and the deploy rehearsal
plays API Gateway from the template itself (scripts/rehearsal/gateway.py):
these tests hold the entry point to the event AWS documents, and the recorded
session to the same bytes through either API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from chalice.config import Config
from chalice.local import LocalGateway

import app as app_module
from chalicelib import http_api
from chalicelib.storage import Backend
from tests.api.test_recorded_session import (
    RECORDING,
    Session,
    fixed_session,
    named_by_place,
    play,
    stored_events,
)
from tests.support import http_api as events
from tests.support.access import access_lines
from tests.support.http_api import HttpApiClient

__all__ = ["fixed_session"]  # a fixture the recorded session's test defines

ORIGIN = "https://approvals.example.com"
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def http(storage: Backend, serve: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The HTTP API's `http`, the app serving from `storage`, from CorsOrigin."""
    monkeypatch.setenv("WORKFLOW_CORS_ORIGIN", ORIGIN)
    app_module.use_storage(storage)
    yield HttpApiClient().http


def test_the_recorded_session_answers_the_same_bytes_through_the_http_api(
    storage: Backend, serve: None, fixed_session: None
) -> None:
    app_module.use_storage(storage)
    session = Session(HttpApiClient(), storage)  # type: ignore[arg-type]
    play(session)
    played = named_by_place(session.answers, stored_events(storage))
    expected = json.loads(RECORDING.read_text(encoding="utf-8"))
    for sent, kept in zip(played["answers"], expected["answers"], strict=True):
        assert sent == kept
    assert played["events"] == expected["events"]


def test_a_path_no_route_matches_answers_the_services_404(
    http: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    answer = http.get("/reports", headers={"Origin": ORIGIN})
    assert answer.status_code == 404
    assert json.loads(answer.body) == {"error": "No route matches this path"}
    assert answer.headers["Content-Type"] == "application/json"
    # A page on the allowed origin can read it, as the REST API's gateway response.
    assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN
    (line,) = access_lines(capsys.readouterr().out)
    assert line["request_id"] == answer.headers["X-Request-Id"]
    assert (line["method"], line["route"], line["status"]) == ("GET", None, 404)
    assert http.request("HEAD", "/runs/1/nothing").body == b""


def test_a_preflight_answers_what_the_rest_apis_mock_integration_does(
    http: Any, storage: Backend
) -> None:
    """The same headers chalice's local gateway answers, and its swagger writes
    into the REST API's mock integration: the route's methods, OPTIONS, the
    allowed origin and headers, the exposed headers and the max age."""
    asked = {
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    }
    answer = http.request("OPTIONS", "/runs/7/approve", headers=asked)
    local = LocalGateway(app_module.app, Config()).handle_request(
        "OPTIONS", "/runs/7/approve", asked, None
    )
    assert answer.status_code == local["statusCode"] == 200
    cors = {k: v for k, v in answer.headers.items() if k.lower().startswith("access-control-")}
    assert cors == local["headers"]
    assert cors["Access-Control-Allow-Methods"] == "POST,OPTIONS"
    assert cors["Access-Control-Allow-Origin"] == ORIGIN
    assert "Idempotency-Key" in cors["Access-Control-Allow-Headers"]
    assert cors["Access-Control-Max-Age"] == "600"


def test_a_method_a_route_lacks_answers_405_with_allow(http: Any) -> None:
    answer = http.request("DELETE", "/runs")
    assert answer.status_code == 405
    assert set(answer.headers["Allow"].split(", ")) == {"GET", "POST"}
    assert "error" in json.loads(answer.body)


def test_routes_take_their_parameters_from_the_path(http: Any) -> None:
    workflow = json.loads(
        http.post("/workflows", headers=JSON, body=b'{"name": "w", "steps": ["A"]}').body
    )
    run = http.post(
        "/runs",
        headers=JSON,
        body=json.dumps({"workflow_id": workflow["id"], "title": "t"}).encode(),
    )
    assert run.status_code == 201
    assert run.headers["Location"] == f"/runs/{json.loads(run.body)['id']}"
    shown = http.get(f"/runs/{json.loads(run.body)['id']}/")  # a trailing slash, as REST drops it
    assert shown.status_code == 200 and json.loads(shown.body)["title"] == "t"
    # Literal segments before {parameters}: /runs/{run_id} is not /inbox.
    assert http.get("/inbox?actor=ann").status_code == 200
    # A route that matched answers its own 404, not the no-route one.
    assert "ids are positive integers" in json.loads(http.get("/runs/abc").body)["error"]


def test_a_named_stage_is_taken_off_the_path_and_kept_as_the_base(storage: Backend) -> None:
    """An HTTP API's payload 1.0 names the path as requested, a named stage's
    prefix included (the packaged one uses the `$default` stage, which has
    none): the routes match without it, and links name it."""
    app_module.use_storage(storage)
    try:
        staged = HttpApiClient(stage="api").http
        document = json.loads(staged.get("/openapi.json").body)
        assert document["servers"] == [{"url": "/api"}]
        assert staged.get("/workflows").status_code == 200
        assert b'src="/api/ui/app.js"' in staged.get("/").body
    finally:
        app_module.use_storage(None)
    assert http_api.route_path("/api", "api") == "/"
    assert http_api.route_path("/apiary/x", "api") == "/apiary/x"
    assert http_api.route_path("/runs/", "$default") == "/runs"


def test_a_rest_apis_event_reaches_the_app_unchanged(
    storage: Backend, serve: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_module.use_storage(storage)
    seen: list[dict[str, Any]] = []

    class Spy:
        routes = app_module.app.routes

        def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
            seen.append(event)
            return {}

    monkeypatch.setattr(http_api, "app", Spy())
    rest = {"requestContext": {"resourcePath": "/runs/{run_id}", "httpMethod": "GET"}}
    http_api.handler(rest, None)
    assert seen == [rest] and seen[0] is rest


def test_the_event_names_no_route_so_chalice_alone_could_not_serve_it(storage: Backend) -> None:
    """Why the entry point exists: Chalice looks the view up by the event's
    route, "$default", and finds none (405 for a request it could serve)."""
    assert "$default" not in app_module.app.routes
    app_module.use_storage(storage)
    try:
        result = app_module.app(events.event("GET", "/workflows"), None)
    finally:
        app_module.use_storage(None)
        # Chalice's route table is a defaultdict: the look-up made the entry.
        app_module.app.routes.pop("$default", None)
    assert result["statusCode"] == 405
