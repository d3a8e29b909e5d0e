"""An administrator's changes of a run, through chalice.test.Client on every
backend: POST /runs/{id}/reassign (the step awaits others) and /move (the run
continues at a step of a newer version), in the history, the events, the
audit and the permissions; in jwt mode, for the admin group only."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tests.support.shapes import assert_error
from tests.support.tokens import admin_token, as_, claims, hs256

if TYPE_CHECKING:
    from tests.support.api import Api


def step(name: str, *approvers: str, **rules: Any) -> dict[str, Any]:
    return {"name": name, "approvers": [f"user:{who}" for who in approvers], **rules}


def started(api: Api, steps: list[Any], name: str = "Purchase") -> tuple[int, dict[str, Any]]:
    workflow = api.post("/workflows", {"name": name, "steps": steps}).json_body
    run = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "Laptop", "requested_by": "rita"}
    )
    assert run.status_code == 201, run.body
    return workflow["id"], dict(run.json_body)


def event_types(api: Api, run_id: int) -> list[str]:
    page = api.get(f"/runs/{run_id}/events?limit=100").json_body
    return [event["type"].removeprefix("approval.") for event in page["items"]]


def audit_holds(api: Api, run_id: int) -> dict[str, Any]:
    audit = dict(api.get(f"/runs/{run_id}/audit").json_body)
    assert (audit["valid"], audit["state_valid"]) == (True, True), audit
    return audit


# -- reassign ----------------------------------------------------------------------------


def test_reassign_unblocks_a_run_waiting_on_someone_who_left(api: Api) -> None:
    _, run = started(api, [step("Finance", "fay"), step("CFO", "cfo")])
    rid = run["id"]
    assert api.get("/inbox?actor=fay").json_body["items"][0]["id"] == rid

    response = api.post(
        f"/runs/{rid}/reassign",
        {"actor": "ada", "approvers": ["user:gil"], "comment": "Fay left the company"},
    )

    assert response.status_code == 200, response.body
    reassigned = response.json_body
    assert reassigned["current_step"]["approvers"] == ["user:gil"]
    last = reassigned["actions"][-1]
    assert (last["action"], last["actor"], last["step_name"]) == ("reassign", "ada", "Finance")
    assert (last["approvers"], last["comment"]) == (["user:gil"], "Fay left the company")
    # The inboxes follow at once.
    assert api.get("/inbox?actor=fay").json_body["items"] == []
    assert [r["id"] for r in api.get("/inbox?actor=gil").json_body["items"]] == [rid]
    assert api.post(f"/runs/{rid}/approve", {"actor": "fay"}).status_code == 403
    assert api.approve(rid, "gil")["current_step"]["name"] == "CFO"
    assert api.get_run(rid)["current_step"]["approvers"] == ["user:cfo"]
    assert event_types(api, rid)[-3:] == ["run.reassigned", "step.approved", "step.activated"]
    audit = audit_holds(api, rid)
    assert audit["entries"][0]["approvers"] == ["user:gil"]


def test_approvals_given_stay_counted_where_the_new_list_still_names_their_giver(
    api: Api,
) -> None:
    _, run = started(api, [step("Board", "ann", "bob", "cat", required_approvals=2)])
    rid = run["id"]
    api.approve(rid, "ann")

    kept = api.post(
        f"/runs/{rid}/reassign",
        {"actor": "ada", "approvers": ["user:ann", "user:dan"], "comment": "Bob and Cat left"},
    ).json_body
    assert kept["current_step_approved_by"] == ["ann"]
    dropped = api.post(
        f"/runs/{rid}/reassign",
        {"actor": "ada", "approvers": ["user:dan", "user:eve"], "comment": "Ann left too"},
    ).json_body

    assert dropped["current_step_approved_by"] == []
    api.approve(rid, "dan")
    assert api.approve(rid, "eve")["status"] == "completed"
    audit_holds(api, rid)


def test_an_approval_kept_by_a_reassign_counts_toward_the_quorum_after_it(api: Api) -> None:
    _, run = started(api, [step("Board", "ann", "bob", "cat", required_approvals=3)])
    rid = run["id"]
    api.approve(rid, "ann")
    api.post(
        f"/runs/{rid}/reassign",
        {"actor": "ada", "approvers": ["user:ann", "user:bob", "user:dan"], "comment": "Cat left"},
    )

    assert api.approve(rid, "bob")["current_step_approved_by"] == ["ann", "bob"]
    assert api.approve(rid, "dan")["status"] == "completed"
    audit_holds(api, rid)


def test_reassign_needs_its_approvers_and_a_comment_and_a_run_in_progress(api: Api) -> None:
    _, run = started(api, [step("Finance", "fay")])
    rid = run["id"]

    for body in (
        {"actor": "ada", "approvers": ["user:gil"]},
        {"actor": "ada", "approvers": ["user:gil"], "comment": "  "},
        {"actor": "ada", "comment": "why"},
        {"actor": "ada", "approvers": ["gil"], "comment": "not a principal"},
    ):
        assert_error(api.post(f"/runs/{rid}/reassign", body), 400)
    few = {"actor": "ada", "approvers": ["user:gil"], "comment": "one for two"}
    _, quorum = started(api, [step("Board", "ann", "bob", required_approvals=2)], "Board")
    assert_error(api.post(f"/runs/{quorum['id']}/reassign", few), 422)
    api.approve(rid, "fay")
    ended = api.post(
        f"/runs/{rid}/reassign", {"actor": "ada", "approvers": [], "comment": "too late"}
    )
    assert_error(ended, 409)
    assert_error(
        api.post("/runs/999999/reassign", {"actor": "a", "approvers": [], "comment": "x"}), 404
    )


# -- move --------------------------------------------------------------------------------


def test_move_continues_a_run_on_the_named_step_of_a_newer_version(api: Api) -> None:
    wid, run = started(
        api, [step("Manager", "ann", "bob", required_approvals=2), step("CFO", "cfo")]
    )
    rid = run["id"]
    api.approve(rid, "ann")
    published = api.post(
        f"/workflows/{wid}/versions",
        {"steps": [step("Manager", "ann"), step("Legal", "lee"), step("Finance", "fay")]},
    )
    assert published.status_code == 201, published.body

    response = api.post(
        f"/runs/{rid}/move",
        {"actor": "ada", "to_version": 2, "step": "Legal", "comment": "Legal first now"},
    )

    assert response.status_code == 200, response.body
    moved = response.json_body
    assert (moved["workflow_version"], moved["current_step"]["name"]) == (2, "Legal")
    assert moved["current_step_approved_by"] == []  # ann's approval does not carry over
    last = moved["actions"][-1]
    assert (last["action"], last["step_name"], last["workflow_version"]) == ("move", "Legal", 2)
    assert [r["id"] for r in api.get("/inbox?actor=lee").json_body["items"]] == [rid]
    assert api.get("/inbox?actor=bob").json_body["items"] == []
    api.approve(rid, "lee")
    assert api.approve(rid, "fay")["status"] == "completed"  # version 2 has no CFO step
    assert event_types(api, rid)[-6:-4] == ["run.moved", "step.activated"]
    moved_event = api.get(f"/runs/{rid}/events?limit=100").json_body["items"][-6]
    assert (moved_event["data"]["from_version"], moved_event["data"]["to_version"]) == (1, 2)
    audit = audit_holds(api, rid)
    assert "workflow_version" not in audit["genesis"]  # it started on version 1
    assert audit["entries"][1]["workflow_version"] == 2


def test_move_is_refused_for_a_version_not_newer_a_missing_step_or_a_run_not_in_progress(
    api: Api,
) -> None:
    wid, run = started(api, [step("Manager", "ann")])
    rid = run["id"]
    api.post(f"/workflows/{wid}/versions", {"steps": [step("Manager", "ann")]})

    for body in (
        {"actor": "ada", "to_version": 1, "step": "Manager"},
        {"actor": "ada", "to_version": 3, "step": "Manager"},
        {"actor": "ada", "to_version": 2, "step": "Legal"},
    ):
        assert_error(api.post(f"/runs/{rid}/move", body), 409)
    assert_error(api.post(f"/runs/{rid}/move", {"actor": "ada", "to_version": 2}), 400)
    api.approve(rid, "ann")
    ended = api.post(f"/runs/{rid}/move", {"actor": "ada", "to_version": 2, "step": "Manager"})
    assert_error(ended, 409)
    assert api.get_run(rid)["workflow_version"] == 1


def test_move_to_a_step_name_the_seed_s_append_repeated_is_refused(api: Api) -> None:
    wid, run = started(api, [step("Manager", "ann")])
    api.post(f"/workflows/{wid}/versions", {"steps": [step("Legal", "lee")]})
    assert api.post(f"/workflows/{wid}/steps", {"name": "Legal"}).status_code == 201

    moved = api.post(f"/runs/{run['id']}/move", {"actor": "ada", "to_version": 2, "step": "Legal"})

    assert_error(moved, 409)
    assert "2 steps named 'Legal'" in moved.json_body["error"]
    assert api.get_run(run["id"])["workflow_version"] == 1


def test_a_run_started_on_a_later_version_binds_it_in_its_genesis(api: Api) -> None:
    wid, _ = started(api, [step("Manager", "ann")])
    api.post(f"/workflows/{wid}/versions", {"steps": [step("Director", "dora")]})
    run = api.post("/runs", {"workflow_id": wid, "title": "Desk"}).json_body

    audit = audit_holds(api, run["id"])

    assert audit["genesis"]["workflow_version"] == 2


# -- who may ---------------------------------------------------------------------------


def test_permissions_report_reassign_and_move(api: Api) -> None:
    _, run = started(api, [step("Manager", "ann")])

    asked = api.get(f"/runs/{run['id']}/permissions?actor=ann").json_body

    # In none mode anyone may define workflows, so anyone may reassign and move.
    assert (
        asked["reassign"]
        == asked["move"]
        == {
            "allowed": True,
            "reason": None,
            "message": None,
            "on_behalf_of": None,
        }
    )
    api.approve(run["id"], "ann")
    ended = api.get(f"/runs/{run['id']}/permissions?actor=ann").json_body
    assert ended["reassign"]["reason"] == ended["move"]["reason"] == "run_not_in_progress"


def test_in_jwt_mode_only_the_admin_group_publishes_retires_reassigns_and_moves(
    api: Api, secret_mode: None
) -> None:
    admin, maria = admin_token(), hs256(claims("maria"))
    workflow = as_(api, admin, "POST", "/workflows", {"name": "PO", "steps": ["Manager"]})
    wid = workflow.json_body["id"]
    run = as_(api, maria, "POST", "/runs", {"workflow_id": wid, "title": "Laptops"}).json_body
    rid = run["id"]

    refused = [
        as_(api, maria, "POST", f"/workflows/{wid}/versions", {"steps": ["A"]}),
        as_(api, maria, "POST", f"/workflows/{wid}/retire"),
        as_(api, maria, "POST", f"/workflows/{wid}/reinstate"),
        as_(api, maria, "POST", f"/runs/{rid}/reassign", {"approvers": [], "comment": "x"}),
        as_(api, maria, "POST", f"/runs/{rid}/move", {"to_version": 2, "step": "A"}),
    ]
    for response in refused:
        assert_error(response, 403)
    mine = json.loads(as_(api, maria, "GET", f"/runs/{rid}/permissions").body)
    assert mine["reassign"]["reason"] == mine["move"]["reason"] == "not_an_administrator"
    theirs = json.loads(as_(api, admin, "GET", f"/runs/{rid}/permissions").body)
    assert theirs["reassign"]["allowed"] and theirs["move"]["allowed"]

    assert (
        as_(api, admin, "POST", f"/workflows/{wid}/versions", {"steps": ["A"]}).status_code == 201
    )
    moved = as_(api, admin, "POST", f"/runs/{rid}/move", {"to_version": 2, "step": "A"})
    assert moved.status_code == 200, moved.body
    assert moved.json_body["actions"][-1]["actor"] == "ada"
