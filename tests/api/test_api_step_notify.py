"""A step's `notify` (whom else it tells, docs/notifications.md) on every
backend: given when a workflow is defined, a step appended or a version
published; shown by the workflow, its versions and a run at the step; refused
with what is wrong, writing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Api
from tests.support.shapes import assert_error, assert_step

WATCHED = {"name": "Finance", "approvers": ["group:finance"], "notify": ["user:cy", "group:audit"]}


def test_a_steps_notify_is_stored_where_it_is_given_and_shown_everywhere(api: Api) -> None:
    created = api.post("/workflows", {"name": "PO", "steps": [WATCHED, "Legal"]})
    assert created.status_code == 201, created.body
    workflow = created.json_body
    for step in workflow["steps"]:
        assert_step(step, workflow["id"])
    assert [step["notify"] for step in workflow["steps"]] == [["user:cy", "group:audit"], []]
    appended = api.post(
        f"/workflows/{workflow['id']}/steps", {"name": "Anyone", "notify": ["user:dave"]}
    )
    assert appended.status_code == 201, appended.body
    assert appended.json_body["notify"] == ["user:dave"]
    steps = api.get_workflow(workflow["id"])["steps"]
    assert [step["notify"] for step in steps] == [["user:cy", "group:audit"], [], ["user:dave"]]
    published = api.post(
        f"/workflows/{workflow['id']}/versions",
        {"steps": [{"name": "Finance", "notify": ["group:audit"]}, "Legal"]},
    )
    assert published.status_code == 201, published.body
    assert [s["notify"] for s in published.json_body["steps"]] == [["group:audit"], []]
    first = api.get(f"/workflows/{workflow['id']}/versions/1").json_body["steps"]
    assert [step["notify"] for step in first] == [["user:cy", "group:audit"], [], ["user:dave"]]


def test_a_run_shows_its_steps_notify_and_none_once_at_a_step_without(api: Api) -> None:
    flow = api.post("/workflows", {"name": "PO", "steps": [WATCHED, "Legal"]}).json_body
    run = api.start_run(flow["id"])
    assert run["current_step"]["notify"] == ["user:cy", "group:audit"]
    assert api.get(f"/runs/{run['id']}").json_body["current_step"]["notify"] == [
        "user:cy",
        "group:audit",
    ]
    body = {"actor": "fin", "groups": ["finance"]}
    assert api.post(f"/runs/{run['id']}/approve", body).status_code == 200
    moved = api.get(f"/runs/{run['id']}").json_body
    assert moved["current_step"]["name"] == "Legal" and moved["current_step"]["notify"] == []


@pytest.mark.parametrize(
    "notify, status",
    [
        ("user:cy", 400),
        (["cy"], 400),
        ([7], 400),
        (["user:cy", "user:cy"], 400),
        ([f"user:u{n}" for n in range(21)], 400),
        (["user:cy", "user:Cy "], 422),  # one person, two spellings
    ],
)
def test_a_notify_list_that_is_not_distinct_principals_is_refused(
    api: Api, notify: Any, status: int
) -> None:
    flow = api.post("/workflows", {"name": "PO", "steps": ["Manager"]}).json_body
    step = {"name": "Finance", "notify": notify}
    assert_error(api.post("/workflows", {"name": "Other", "steps": [step]}), status)
    assert_error(api.post(f"/workflows/{flow['id']}/steps", step), status)
    assert_error(api.post(f"/workflows/{flow['id']}/versions", {"steps": [step]}), status)
    after = api.get_workflow(flow["id"])
    assert (after["version"], len(after["steps"])) == (1, 1)
    assert api.get("/workflows").json_body["items"] == [after]
