"""Step deadlines through chalice.test.Client, on each backend: defined on
steps, shown on runs, applied by the sweeper with the clock the test sets."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.storage import Backend
from tests.support.api import Api
from tests.support.shapes import assert_error


def test_steps_take_a_deadline_when_defined_and_appended(api: Api) -> None:
    workflow = api.create_workflow(
        steps=[
            "Manager",
            {"name": "Finance", "deadline_seconds": 3600, "on_deadline": "reject"},
            {"name": "CFO", "deadline_seconds": 60},
        ]
    )
    manager, finance, cfo = workflow["steps"]
    assert (manager["deadline_seconds"], manager["on_deadline"], manager["escalate_to"]) == (
        None,
        None,
        [],
    )
    assert (finance["deadline_seconds"], finance["on_deadline"]) == (3600, "reject")
    assert cfo["on_deadline"] == "remind"  # the default
    added = api._expect(
        201,
        api.post(
            f"/workflows/{workflow['id']}/steps",
            {
                "name": "Board",
                "deadline_seconds": 86400,
                "on_deadline": "escalate",
                "escalate_to": ["group:board", "user:chair"],
            },
        ),
    )
    assert added["escalate_to"] == ["group:board", "user:chair"]
    assert api.get_workflow(workflow["id"])["steps"][3] == added


@pytest.mark.parametrize(
    "step",
    [
        {"name": "x", "deadline_seconds": 0},
        {"name": "x", "deadline_seconds": 31_536_001},
        {"name": "x", "deadline_seconds": 1.5},
        {"name": "x", "deadline_seconds": "60"},
        {"name": "x", "deadline_seconds": True},
        {"name": "x", "on_deadline": "reject"},
        {"name": "x", "deadline_seconds": 60, "on_deadline": "approve"},
        {"name": "x", "deadline_seconds": 60, "on_deadline": "escalate"},
        {"name": "x", "deadline_seconds": 60, "on_deadline": "escalate", "escalate_to": []},
        {
            "name": "x",
            "deadline_seconds": 60,
            "on_deadline": "escalate",
            "escalate_to": ["group:board", "group:board"],
        },
        {"name": "x", "deadline_seconds": 60, "on_deadline": "escalate", "escalate_to": ["bob"]},
        {"name": "x", "deadline_seconds": 60, "on_deadline": "remind", "escalate_to": ["user:a"]},
        {"name": "x", "deadline": 60},
        {"deadline_seconds": 60},
    ],
)
def test_a_bad_deadline_answers_400(api: Api, step: dict[str, Any]) -> None:
    assert_error(api.post("/workflows", {"name": "Bad", "steps": [step]}), 400)
    workflow = api.create_workflow(steps=["A"])
    assert_error(api.post(f"/workflows/{workflow['id']}/steps", step), 400)


def test_a_run_shows_when_its_step_is_due_and_whom_it_escalated_to(
    api: Api, storage: Backend
) -> None:
    workflow = api.create_workflow(
        steps=[
            {
                "name": "Manager",
                "deadline_seconds": 90,
                "on_deadline": "escalate",
                "escalate_to": ["user:boss"],
            }
        ]
    )
    run = api.start_run(workflow["id"])
    created = datetime.fromisoformat(run["created_at"].replace("Z", "+00:00"))
    due = datetime.fromisoformat(run["current_step_due_at"].replace("Z", "+00:00"))
    assert due - created == timedelta(seconds=90)
    assert run["current_step_escalated_to"] == []
    listed = api.get(f"/runs?workflow_id={workflow['id']}").json_body["items"][0]
    assert listed["current_step_due_at"] == run["current_step_due_at"]

    assert engine.sweep(storage, lambda: run["current_step_due_at"]) == 1

    escalated = api.get_run(run["id"])
    assert escalated["current_step_escalated_to"] == ["user:boss"]
    events = api.get(f"/runs/{run['id']}/events").json_body["items"]
    assert events[1]["data"]["due_at"] == run["current_step_due_at"]
    assert events[-1]["type"] == "approval.step.escalated"
    assert events[-1]["data"]["actor"] == "system:deadline"


def test_a_deadline_reject_is_a_decision_by_system_deadline(api: Api, storage: Backend) -> None:
    workflow = api.create_workflow(
        steps=[{"name": "Manager", "deadline_seconds": 1, "on_deadline": "reject"}]
    )
    run = api.start_run(workflow["id"])
    assert engine.sweep(storage, lambda: run["current_step_due_at"]) == 1
    ended = api.get_run(run["id"])
    assert ended["status"] == "rejected" and ended["current_step_due_at"] is None
    assert [(a["action"], a["actor"]) for a in ended["actions"]] == [("reject", "system:deadline")]
    assert api.get(f"/runs/{run['id']}/audit").json_body["valid"] is True
    assert api.post(f"/runs/{run['id']}/approve", {"actor": "late"}).status_code == 409
