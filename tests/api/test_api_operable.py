"""What integrators and operators rely on: Location, request ids, access logs,
CORS, and acting only on the step one saw (expected_step_id)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.access import access_lines
from tests.support.api import Api


def test_created_resources_answer_with_their_location(api: Api) -> None:
    created = api.post("/workflows", {"name": "Located", "steps": ["a"]})
    assert created.headers["Location"] == f"/workflows/{created.json_body['id']}"
    step = api.post(f"/workflows/{created.json_body['id']}/steps", {"name": "b"})
    assert step.headers["Location"] == f"/workflows/{created.json_body['id']}"
    run = api.post("/runs", {"workflow_id": created.json_body["id"], "title": "t"})
    assert run.headers["Location"] == f"/runs/{run.json_body['id']}"
    assert api.get(run.headers["Location"]).status_code == 200


def test_every_response_carries_a_distinct_request_id(api: Api) -> None:
    answers = [
        api.get("/workflows/1"),
        api.post("/workflows", {"name": "r"}),
        api.post("/workflows", raw=b"{nope"),
        api.request("PUT", "/workflows"),
    ]
    ids = [answer.headers["X-Request-Id"] for answer in answers]
    assert all(ids) and len(set(ids)) == len(ids)


def test_each_request_writes_one_json_log_line_without_bodies(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, run = api.started_run(steps=["Manager"])
    capsys.readouterr()
    response = api.post(
        f"/runs/{run['id']}/approve", {"actor": "alice", "comment": "secret-comment"}
    )
    out = capsys.readouterr().out
    lines = access_lines(out)
    # Beside it, the decision's metric line (docs/stats.md), and nothing else.
    metric_lines = [text for text in out.splitlines() if text.startswith('{"_aws"')]
    assert len(lines) == 1 and len(metric_lines) == 1 and out.count("\n") == 2
    assert "secret-comment" not in out and "alice" not in out
    line: dict[str, Any] = lines[0]
    assert line["request_id"] == response.headers["X-Request-Id"]
    assert (line["method"], line["route"], line["status"]) == (
        "POST",
        "/runs/{run_id}/approve",
        200,
    )
    assert line["run_id"] == run["id"]
    assert line["workflow_id"] == workflow["id"]
    assert isinstance(line["duration_ms"], float)
    assert "secret-comment" not in json.dumps(line) and "alice" not in json.dumps(line)


def test_responses_allow_the_configured_origin(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    assert api.get("/workflows/1").headers["Access-Control-Allow-Origin"] == "*"
    monkeypatch.setenv("WORKFLOW_CORS_ORIGIN", "https://approvals.example.com")
    response = api.get("/workflows/1")
    assert response.headers["Access-Control-Allow-Origin"] == "https://approvals.example.com"
    assert "X-Request-Id" in response.headers["Access-Control-Expose-Headers"]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_decision_on_a_step_the_run_has_left_is_refused(api: Api, decision: str) -> None:
    workflow, run = api.started_run(steps=["Manager", "Finance", "CFO"])
    manager, finance = (step["id"] for step in workflow["steps"][:2])
    api.approve(run["id"])
    stale = api.post(
        f"/runs/{run['id']}/{decision}", {"actor": "late", "expected_step_id": manager}
    )
    assert stale.status_code == 409
    assert stale.json_body["current_step_id"] == finance
    assert isinstance(stale.json_body["error"], str)
    assert len(api.get_run(run["id"])["actions"]) == 1
    fresh = api.post(
        f"/runs/{run['id']}/{decision}", {"actor": "on-time", "expected_step_id": finance}
    )
    assert fresh.status_code == 200
    assert fresh.json_body["actions"][-1]["step_id"] == finance


def test_expected_step_id_on_an_ended_run_says_not_in_progress(api: Api) -> None:
    workflow, run = api.started_run(steps=["Manager"])
    api.reject(run["id"])
    response = api.post(
        f"/runs/{run['id']}/approve", {"actor": "x", "expected_step_id": workflow["steps"][0]["id"]}
    )
    assert response.status_code == 409
    assert response.json_body == {"error": "Run is not in progress"}


@pytest.mark.parametrize("value", ["1", True, 0, -3, 1.5, [1]])
def test_expected_step_id_must_be_a_positive_integer(api: Api, value: Any) -> None:
    _, run = api.started_run()
    response = api.post(f"/runs/{run['id']}/approve", {"actor": "x", "expected_step_id": value})
    assert response.status_code == 400
    assert api.get_run(run["id"])["actions"] == []
