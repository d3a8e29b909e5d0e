"""Approver rules over HTTP, on every backend and in both auth modes: the exact
status of each rule, and that a refused request writes nothing."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.support import openapi_contract
from tests.support.api import Api
from tests.support.shapes import assert_error, assert_run, assert_workflow
from tests.support.tokens import admin_token, as_, claims, hs256

FINANCE_STEPS = [
    "Manager",
    {"name": "Finance", "approvers": ["group:finance", "user:cfo"], "required_approvals": 2},
]


def purchase(api: Api, **flags: Any) -> dict[str, Any]:
    return api._expect(
        201, api.post("/workflows", {"name": "Purchase", "steps": FINANCE_STEPS, **flags})
    )


def start(api: Api, workflow: dict[str, Any], requested_by: str = "ann") -> dict[str, Any]:
    body = {"workflow_id": workflow["id"], "title": "Laptop", "requested_by": requested_by}
    return api._expect(201, api.post("/runs", body))


def at_finance(api: Api, **flags: Any) -> dict[str, Any]:
    run = start(api, purchase(api, **flags))
    return api.approve(run["id"], "mo")


def decide(api: Api, run_id: int, verb: str, **body: Any) -> Any:
    return api.post(f"/runs/{run_id}/{verb}", body)


def test_a_workflow_shows_its_step_rules_and_flags(api: Api) -> None:
    workflow = purchase(api, distinct_approvers=True)
    assert_workflow(workflow)
    assert (
        workflow["allow_self_approval"],
        workflow["distinct_approvers"],
        workflow["reject_requires_comment"],
    ) == (False, True, False)
    assert [(s["name"], s["approvers"], s["required_approvals"]) for s in workflow["steps"]] == [
        ("Manager", [], 1),
        ("Finance", ["group:finance", "user:cfo"], 2),
    ]
    step = api._expect(
        201,
        api.post(
            f"/workflows/{workflow['id']}/steps",
            {"name": "CFO", "approvers": ["user:cfo"], "required_approvals": 1},
        ),
    )
    assert (step["approvers"], step["required_approvals"]) == (["user:cfo"], 1)
    assert api.get_workflow(workflow["id"])["steps"][-1] == step


@pytest.mark.parametrize(
    "step",
    [
        {"name": "X", "approvers": ["bob"]},
        {"name": "X", "approvers": ["user:a", "user:a"]},
        {"name": "X", "required_approvals": 0},
    ],
)
def test_a_step_rule_that_breaks_a_rule_is_400_and_writes_nothing(
    api: Api, step: dict[str, Any]
) -> None:
    with pytest.raises(jsonschema.ValidationError):  # the document says so too
        openapi_contract._validate(step, "components", "schemas", "NewStep")
    assert_error(api.post("/workflows", {"name": "Bad", "steps": [step]}), 400)
    workflow = api.create_workflow("Target")
    assert_error(api.post(f"/workflows/{workflow['id']}/steps", step), 400)
    assert api.get("/workflows").json_body["items"] == [workflow]


@pytest.mark.parametrize(
    "step",
    [
        {"name": "X", "approvers": ["user:a"], "required_approvals": 2},
        {"name": "X", "approvers": ["user:a", "user: a"]},
        {"name": "X", "approvers": ["user:a", "user:a "]},
        {
            "name": "X",
            "deadline_seconds": 60,
            "on_deadline": "escalate",
            "escalate_to": ["group:caf\u00e9", "group:cafe\u0301"],
        },
    ],
)
def test_a_step_valid_by_the_schema_that_breaks_a_rule_no_schema_states_is_422(
    api: Api, step: dict[str, Any]
) -> None:
    """A quorum no approver list can meet, and a principal named twice once
    trimmed and NFC-normalised: the document's schema admits both, so they are
    refused as unprocessable, not as malformed, and nothing is written."""
    openapi_contract._validate(step, "components", "schemas", "NewStep")
    assert_error(api.post("/workflows", {"name": "Bad", "steps": [step]}), 422)
    workflow = api.create_workflow("Target")
    assert_error(api.post(f"/workflows/{workflow['id']}/steps", step), 422)
    assert api.get("/workflows").json_body["items"] == [workflow]


def test_a_2_of_3_step_waits_for_two_distinct_approvers(api: Api) -> None:
    run = at_finance(api)
    assert run["current_step_approved_by"] == []

    once = decide(api, run["id"], "approve", actor="fay", groups=["finance"])
    assert once.status_code == 200
    assert_run(once.json_body)
    assert once.json_body["current_step_approved_by"] == ["fay"]
    assert once.json_body["current_step"]["name"] == "Finance"

    again = decide(api, run["id"], "approve", actor="fay", groups=["finance"])
    assert_error(again, 409, "'fay' already approved step 'Finance' of this run")

    done = decide(api, run["id"], "approve", actor="cfo")
    assert (done.status_code, done.json_body["status"]) == (200, "completed")
    assert [a["actor"] for a in api.get_run(run["id"])["actions"]] == ["mo", "fay", "cfo"]


def test_the_refusals_say_which_rule_and_write_nothing(api: Api) -> None:
    run = at_finance(api, reject_requires_comment=True)
    before = api.get_run(run["id"])
    refusals = [
        (decide(api, run["id"], "approve", actor="gus"), 403, "may not decide step 'Finance'"),
        (decide(api, run["id"], "approve", actor="ann", groups=["finance"]), 403, "self-approval"),
        (decide(api, run["id"], "reject", actor="ann", groups=["finance"]), 403, "self-approval"),
        (decide(api, run["id"], "reject", actor="fay", groups=["finance"]), 422, "comment"),
        (api.post(f"/runs/{run['id']}/cancel", {"actor": "fay"}), 403, "requester"),
    ]
    for response, status, words in refusals:
        assert_error(response, status)
        assert words in response.json_body["error"]
    assert api.get_run(run["id"]) == before


def test_an_ended_run_is_409_for_everyone_before_any_403(api: Api) -> None:
    run = at_finance(api)
    decide(api, run["id"], "reject", actor="cfo")
    for actor in ("gus", "ann", "cfo"):
        assert_error(decide(api, run["id"], "approve", actor=actor), 409, "Run is not in progress")
    assert_error(api.post(f"/runs/{run['id']}/cancel", {"actor": "ann"}), 409)


def test_distinct_approvers_is_403_on_a_second_step(api: Api) -> None:
    workflow = api._expect(
        201,
        api.post("/workflows", {"name": "Two", "steps": ["A", "B"], "distinct_approvers": True}),
    )
    run = start(api, workflow)
    api.approve(run["id"], "mo")
    assert_error(decide(api, run["id"], "approve", actor="mo"), 403)
    assert api.approve(run["id"], "lee")["status"] == "completed"


def test_the_requester_cancels_with_a_reason(api: Api) -> None:
    run = at_finance(api)
    response = api.post(f"/runs/{run['id']}/cancel", {"actor": "ann", "reason": "found cheaper"})
    assert response.status_code == 200
    cancelled = response.json_body
    assert_run(cancelled)
    assert (cancelled["status"], cancelled["current_step_id"]) == ("cancelled", None)
    last = cancelled["actions"][-1]
    assert (last["action"], last["step_name"], last["comment"]) == (
        "cancel",
        "Finance",
        "found cheaper",
    )
    listed = api.get("/runs?status=cancelled").json_body["items"]
    assert [r["id"] for r in listed] == [run["id"]]
    assert api.get(f"/runs/{run['id']}/audit").json_body["valid"] is True


@pytest.mark.parametrize(
    "body", [{}, {"actor": "ann", "reason": "x" * 5001}, {"actor": "ann", "why": "x"}]
)
def test_a_bad_cancel_is_400(api: Api, body: dict[str, Any]) -> None:
    run = at_finance(api)
    assert_error(api.post(f"/runs/{run['id']}/cancel", body), 400)
    assert api.get_run(run["id"])["status"] == "in_progress"


def test_the_inbox_in_none_mode(api: Api) -> None:
    run = at_finance(api)
    other = start(api, purchase_named(api, "Other"))

    page = api.get("/inbox?actor=fay&group=finance&group=board")
    assert page.status_code == 200
    # run reached Finance before other was started
    assert [r["id"] for r in page.json_body["items"]] == [run["id"], other["id"]]
    for listed in page.json_body["items"]:
        assert set(listed) == set(run) - {"actions"} | {"on_behalf_of"}
        assert listed["on_behalf_of"] is None
    assert [r["id"] for r in api.get("/inbox?actor=fay").json_body["items"]] == [other["id"]]
    assert api.get("/inbox?actor=ann").json_body == {"items": [], "next_cursor": None}

    first = api.get("/inbox?actor=fay&group=finance&limit=1").json_body
    assert [r["id"] for r in first["items"]] == [run["id"]]
    rest = api.get(f"/inbox?actor=fay&group=finance&limit=1&cursor={first['next_cursor']}")
    assert [r["id"] for r in rest.json_body["items"]] == [other["id"]]


def purchase_named(api: Api, name: str) -> dict[str, Any]:
    return api._expect(201, api.post("/workflows", {"name": name, "steps": FINANCE_STEPS}))


@pytest.mark.parametrize(
    "query",
    ["", "?group=finance", "?actor=", "?actor=a&actor=b", "?actor=a&limit=0", "?actor=a&x=1"],
)
def test_a_bad_inbox_query_is_400(api: Api, query: str) -> None:
    assert_error(api.get(f"/inbox{query}"), 400)


# -- verified callers ---------------------------------------------------------------


def token(actor: str, *groups: str) -> str:
    return hs256(claims(actor, groups=list(groups)))


def test_in_jwt_mode_groups_come_from_the_token(api: Api, secret_mode: None) -> None:
    workflow = as_(
        api, admin_token(), "POST", "/workflows", {"name": "Purchase", "steps": FINANCE_STEPS}
    )
    run = as_(
        api, token("ann"), "POST", "/runs", {"workflow_id": workflow.json_body["id"], "title": "T"}
    )
    run_id = run.json_body["id"]
    assert as_(api, token("mo"), "POST", f"/runs/{run_id}/approve", {}).status_code == 200

    assert_error(as_(api, token("fay"), "POST", f"/runs/{run_id}/approve", {}), 403)
    asserted = as_(api, token("fay"), "POST", f"/runs/{run_id}/approve", {"groups": ["finance"]})
    assert_error(asserted, 400)
    assert_error(as_(api, token("ann", "finance"), "POST", f"/runs/{run_id}/approve", {}), 403)

    inbox = as_(api, token("fay", "finance"), "GET", "/inbox")
    assert [r["id"] for r in inbox.json_body["items"]] == [run_id]
    assert_error(as_(api, token("fay", "finance"), "GET", "/inbox?actor=fay"), 400)
    assert_error(as_(api, token("fay", "finance"), "GET", "/inbox?group=finance"), 400)

    decided = as_(api, token("fay", "finance"), "POST", f"/runs/{run_id}/approve", {})
    assert decided.json_body["current_step_approved_by"] == ["fay"]
    assert as_(api, token("fay", "finance"), "GET", "/inbox").json_body["items"] == []


def test_in_jwt_mode_the_requester_or_an_admin_cancels(api: Api, secret_mode: None) -> None:
    workflow = as_(api, admin_token(), "POST", "/workflows", {"name": "W", "steps": ["A"]})
    runs = [
        as_(
            api,
            token("ann"),
            "POST",
            "/runs",
            {"workflow_id": workflow.json_body["id"], "title": t},
        ).json_body["id"]
        for t in ("one", "two")
    ]
    assert_error(as_(api, token("mo"), "POST", f"/runs/{runs[0]}/cancel", {}), 403)
    assert_error(as_(api, token("mo"), "POST", f"/runs/{runs[0]}/cancel", {"actor": "ann"}), 403)
    assert as_(api, token("ann"), "POST", f"/runs/{runs[0]}/cancel", {}).status_code == 200
    by_admin = as_(api, admin_token(), "POST", f"/runs/{runs[1]}/cancel", {"reason": "dup"})
    assert by_admin.status_code == 200
    assert by_admin.json_body["actions"][-1]["actor"] == "ada"
