"""Prefer: return=minimal (RFC 7240) on the decision routes, on each backend:
the run without its history, and the same decision, chain and events as the
whole answer would have given."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.api import http
from tests.support import chain
from tests.support.api import JSON_HEADERS, Api

MINIMAL = {**JSON_HEADERS, "Prefer": "return=minimal"}


def decide(api: Api, run_id: int, route: str, body: dict[str, Any], prefer: str) -> Any:
    response = api.post(f"/runs/{run_id}/{route}", body, headers={**JSON_HEADERS, "Prefer": prefer})
    assert response.status_code == 200, response.body
    return response


def without_history(run: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in run.items() if name != "actions"}


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("approve", {"actor": "ann", "comment": "ok"}),
        ("reject", {"actor": "bob", "comment": "no"}),
        ("cancel", {"actor": "rita", "reason": "not needed"}),
    ],
)
def test_a_minimal_decision_answers_the_run_without_its_history(
    api: Api, route: str, body: dict[str, Any]
) -> None:
    workflow = api.create_workflow(steps=["Manager", "Finance"])
    run = api._expect(
        201,
        api.post("/runs", {"workflow_id": workflow["id"], "title": "PO", "requested_by": "rita"}),
    )
    api.approve(run["id"], "maria")

    response = decide(api, run["id"], route, body, "return=minimal")

    assert response.headers["Preference-Applied"] == "return=minimal"
    assert "actions" not in response.json_body
    stored = api.get_run(run["id"])
    assert response.json_body == without_history(stored)
    assert [action["actor"] for action in stored["actions"]] == ["maria", body["actor"]]
    chain.assert_chained(stored)
    assert api.get(f"/runs/{run['id']}/audit").json_body["valid"] is True


def test_minimal_and_whole_answers_record_the_same_history(api: Api) -> None:
    steps = ["Manager", "Finance", "CFO"]
    _, whole = api.started_run(steps=steps)
    _, minimal = api.started_run(steps=steps)

    for actor in ("ann", "bob", "cy"):
        answered = decide(api, whole["id"], "approve", {"actor": actor}, "return=representation")
        assert "Preference-Applied" not in answered.headers
        assert answered.json_body == api.get_run(whole["id"])
        decide(api, minimal["id"], "approve", {"actor": actor}, "return=minimal")

    def history(run_id: int) -> list[tuple[Any, ...]]:
        run = api.get_run(run_id)
        chain.assert_chained(run)
        return [(a["step_name"], a["action"], a["actor"]) for a in run["actions"]]

    assert history(minimal["id"]) == history(whole["id"])
    assert api.get_run(minimal["id"])["status"] == "completed"


def test_a_refused_minimal_decision_is_the_same_error(api: Api) -> None:
    _, run = api.started_run(steps=["Manager"])
    decide(api, run["id"], "approve", {"actor": "ann"}, "return=minimal")

    again = api.post(f"/runs/{run['id']}/approve", {"actor": "bob"}, headers=MINIMAL)

    assert again.status_code == 409
    assert "Preference-Applied" not in again.headers
    assert set(again.json_body) == {"error"}


def test_a_minimal_answer_is_replayed_for_its_idempotency_key(api: Api) -> None:
    _, run = api.started_run(steps=["Manager", "Finance"])
    headers = {**MINIMAL, "Idempotency-Key": "approve-once"}

    first = api.post(f"/runs/{run['id']}/approve", {"actor": "ann"}, headers=headers)
    again = api.post(f"/runs/{run['id']}/approve", {"actor": "ann"}, headers=headers)

    assert first.status_code == again.status_code == 200
    assert again.json_body == first.json_body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(api.get_run(run["id"])["actions"]) == 1


def test_other_routes_ignore_the_preference(api: Api) -> None:
    _, run = api.started_run()

    read = api.request("GET", f"/runs/{run['id']}", headers=MINIMAL)

    assert "actions" in read.json_body and "Preference-Applied" not in read.headers


def test_browsers_may_send_the_preference_and_read_that_it_applied(api: Api) -> None:
    _, run = api.started_run()

    answered = api.post(f"/runs/{run['id']}/approve", {"actor": "ann"}, headers=MINIMAL)

    # The CORS headers every answer carries (and API Gateway's preflight repeats).
    allowed = answered.headers["Access-Control-Allow-Headers"].split(",")
    assert "Prefer" in allowed
    assert "Preference-Applied" in answered.headers["Access-Control-Expose-Headers"].split(",")


@pytest.mark.parametrize(
    ("prefer", "minimal"),
    [
        ("return=minimal", True),
        ('RETURN = "Minimal"', True),
        ("respond-async, return=minimal; x=1", True),
        ("return=representation, return=minimal", False),
        ("return=representation", False),
        ("handling=lenient", False),
        ("", False),
        (None, False),
        ("returns=minimal", False),
    ],
)
def test_prefer_header_parsing(prefer: Any, minimal: bool) -> None:
    assert http.prefers_minimal(prefer) is minimal
