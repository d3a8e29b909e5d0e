"""Send back for changes, and resubmit: on every backend. A return ends the
round (its approvals stop counting, its deadline pauses); the requester
resubmits (with a new input, held to the schema) and everyone decides again;
max_returns bounds it; every action carries its round, in the chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.test_api_audit import verify_offline
from tests.support import chain
from tests.support.api import Api
from tests.support.shapes import assert_error, assert_run

QUORUM = [{"name": "Board", "required_approvals": 2}, "Sign-off"]


def workflow(api: Api, steps: Any = QUORUM, **more: Any) -> dict[str, Any]:
    body = {"name": f"W{len(api.get('/workflows').json_body['items'])}", "steps": steps, **more}
    response = api.post("/workflows", body)
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def started(api: Api, flow: dict[str, Any], **more: Any) -> dict[str, Any]:
    body = {"workflow_id": flow["id"], "title": "PO-1042", "requested_by": "rita", **more}
    response = api.post("/runs", body)
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def sent_back(api: Api, run_id: int, actor: str = "mo", comment: str = "Add the quote") -> Any:
    return api.post(f"/runs/{run_id}/return", {"actor": actor, "comment": comment})


def resubmitted(api: Api, run_id: int, **body: Any) -> Any:
    return api.post(f"/runs/{run_id}/resubmit", {"actor": "rita", **body})


def test_a_return_ends_the_round_and_a_resubmit_starts_the_next_from_the_first_step(
    api: Api,
) -> None:
    run = started(api, workflow(api))
    api.approve(run["id"], "ann")

    returned = sent_back(api, run["id"])

    assert returned.status_code == 200, returned.body
    body = returned.json_body
    assert (body["status"], body["round"]) == ("returned", 1)
    assert body["current_step"]["name"] == "Board"
    assert (body["current_step_approved_by"], body["current_step_since"]) == ([], None)
    assert [(a["action"], a["actor"], a["round"]) for a in body["actions"]] == [
        ("approve", "ann", 1),
        ("return", "mo", 1),
    ]
    for verb in ("approve", "reject"):
        refused = api.post(f"/runs/{run['id']}/{verb}", {"actor": "bo", "comment": "x"})
        assert_error(refused, 409)
        assert refused.json_body["error"] == "Run is returned for changes"
    assert api.get("/inbox?actor=bo").json_body["items"] == []

    again = resubmitted(api, run["id"], comment="Quote attached")

    assert again.status_code == 200, again.body
    body = again.json_body
    assert_run(body)
    assert (body["status"], body["round"], body["current_step"]["name"]) == (
        "in_progress",
        2,
        "Board",
    )
    assert body["current_step_approved_by"] == []
    assert body["actions"][-1]["action"] == "resubmit" and body["actions"][-1]["round"] == 2
    chain.assert_chained(body)
    assert [item["id"] for item in api.get("/inbox?actor=bo").json_body["items"]] == [run["id"]]
    # ann approved in round 1: her approval no longer counts, and she may approve again.
    assert api.approve(run["id"], "ann")["current_step_approved_by"] == ["ann"]
    assert api.approve(run["id"], "bo")["current_step"]["name"] == "Sign-off"
    done = api.approve(run["id"], "cy")
    assert done["status"] == "completed"
    audit = api.get(f"/runs/{run['id']}/audit").json_body
    assert audit["valid"] and audit["state_valid"], audit
    assert chain.first_broken(audit) is None
    rounds = [entry.get("round", 1) for entry in audit["entries"]]
    assert rounds == [1, 1, 2, 2, 2, 2]


def test_a_resubmit_with_a_new_input_is_held_to_the_schema_and_bound_by_the_chain(
    api: Api, tmp_path: Path
) -> None:
    schema = {
        "type": "object",
        "required": ["amount"],
        "properties": {"amount": {"type": "number"}},
    }
    cfo = {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}
    flow = workflow(api, ["Manager", cfo], input_schema=schema)
    run = started(api, flow, input={"amount": 50000})
    assert sent_back(api, run["id"], comment="Too much: split it").status_code == 200

    refused = resubmitted(api, run["id"], input={"amount": "5000"})
    assert_error(refused, 422)
    assert " at /amount: " in refused.json_body["error"]
    assert api.get_run(run["id"])["status"] == "returned"

    again = resubmitted(api, run["id"], input={"amount": 5000}).json_body
    assert again["input"] == {"amount": 5000}
    done = api.approve(run["id"], "mo")
    assert done["status"] == "completed"  # the CFO's condition no longer holds
    assert [a["action"] for a in done["actions"]][-2:] == ["approve", "skip"]
    audit = api.get(f"/runs/{run['id']}/audit").json_body
    assert audit["valid"] and audit["state_valid"], audit
    assert audit["input"] == {"amount": 5000}
    assert "input_digest" in audit["genesis"]  # the first input's
    assert verify_offline(api, tmp_path, audit).returncode == 0
    forged = verify_offline(api, tmp_path, {**audit, "input": {"amount": 50000}})
    assert forged.returncode == 1


def test_a_run_is_sent_back_at_most_max_returns_times(api: Api) -> None:
    run = started(api, workflow(api, ["Manager"], max_returns=2))
    for _ in range(2):
        assert sent_back(api, run["id"]).status_code == 200
        assert resubmitted(api, run["id"]).status_code == 200

    refused = sent_back(api, run["id"])

    assert_error(refused, 409)
    assert "as often as its workflow allows (2)" in refused.json_body["error"]
    never = started(api, workflow(api, ["Manager"], max_returns=0))
    assert_error(sent_back(api, never["id"]), 409)
    assert api.get("/workflows").json_body["items"][0]["max_returns"] == 2


def test_a_return_needs_a_comment_and_someone_who_may_decide_the_step(api: Api) -> None:
    run = started(api, workflow(api, [{"name": "Finance", "approvers": ["group:finance"]}]))
    assert_error(sent_back(api, run["id"], comment=" "), 400)
    assert_error(api.post(f"/runs/{run['id']}/return", {"actor": "mo"}), 400)
    assert_error(sent_back(api, run["id"], actor="gus"), 403)
    assert_error(sent_back(api, run["id"], actor="rita"), 403)  # the requester
    assert api.get_run(run["id"])["status"] == "in_progress"


def test_only_the_requester_resubmits_and_may_cancel_a_returned_run(api: Api) -> None:
    run = started(api, workflow(api, ["Manager"]))
    assert_error(resubmitted(api, run["id"]), 409)  # not returned
    sent_back(api, run["id"])

    assert_error(api.post(f"/runs/{run['id']}/resubmit", {"actor": "mo"}), 403)
    cancelled = api.post(f"/runs/{run['id']}/cancel", {"actor": "rita", "reason": "Not needed"})

    assert cancelled.status_code == 200, cancelled.body
    assert cancelled.json_body["status"] == "cancelled"
    assert_error(resubmitted(api, run["id"]), 409)


def test_a_decision_seen_in_an_earlier_round_is_refused(api: Api) -> None:
    run = started(api, workflow(api, ["Manager"]))
    step_id = run["current_step_id"]
    sent_back(api, run["id"])
    resubmitted(api, run["id"])

    stale = api.post(
        f"/runs/{run['id']}/approve",
        {"actor": "mo", "expected_step_id": step_id, "expected_round": 1},
    )

    assert stale.status_code == 409
    assert stale.json_body == {
        "error": "Run is in round 2, not in round 1",
        "current_step_id": step_id,
    }
    fresh = {"actor": "mo", "expected_step_id": step_id, "expected_round": 2}
    assert api.post(f"/runs/{run['id']}/approve", fresh).status_code == 200


def test_a_deadline_pauses_while_the_run_is_returned_and_starts_afresh(api: Api) -> None:
    flow = workflow(api, [{"name": "Manager", "deadline_seconds": 3600}])
    run = started(api, flow)
    assert run["current_step_due_at"] is not None

    returned = sent_back(api, run["id"]).json_body
    assert returned["current_step_due_at"] is None
    again = resubmitted(api, run["id"]).json_body

    assert again["current_step_due_at"] is not None
    assert again["current_step_due_at"] > run["current_step_due_at"]


def test_returns_and_resubmits_are_events(api: Api) -> None:
    run = started(api, workflow(api, ["Manager"]))
    sent_back(api, run["id"])
    resubmitted(api, run["id"], comment="Done")

    events = api.get(f"/runs/{run['id']}/events?limit=100").json_body["items"]

    kinds = [event["type"] for event in events]
    assert kinds == [
        "approval.run.started",
        "approval.step.activated",
        "approval.run.returned",
        "approval.run.resubmitted",
        "approval.step.activated",
    ]
    returned, resubmit = events[2]["data"], events[3]["data"]
    assert (returned["actor"], returned["comment"], returned["status"]) == (
        "mo",
        "Add the quote",
        "returned",
    )
    assert (resubmit["actor"], resubmit["round"], resubmit["input"]) == ("rita", 2, {})


@pytest.mark.parametrize("verb", ["return", "resubmit"])
def test_return_and_resubmit_of_a_run_that_does_not_exist_are_404(api: Api, verb: str) -> None:
    assert_error(api.post(f"/runs/999/{verb}", {"actor": "mo", "comment": "x"}), 404)
