"""The audit proves the definition a run runs under, through chalice.test.Client
on every backend: a run's genesis binds its version's definition as it stood
at the start, the action that brings it to a step appended later binds that
step, a move binds the version moved to; a stored version's step edited
behind the service's back (SQLite: its row; DynamoDB: the VERSION item) shows
in GET /runs/{id}/audit and to every offline verifier.

The digests are recomputed here from docs/audit.md's definition with the
rfc8785 package (tests/support/chain.py), never through chalicelib."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage import Backend
from tests.support import chain, tamper, verifiers
from tests.support.api import Api

SCHEMA = {"type": "object", "properties": {"amount": {"type": "number"}}}


def version_answer(api: Api, workflow_id: int, version: int) -> dict[str, Any]:
    response = api.get(f"/workflows/{workflow_id}/versions/{version}")
    assert response.status_code == 200, response.body
    return dict(response.json_body)


def audit_of(api: Api, run_id: int) -> dict[str, Any]:
    response = api.get(f"/runs/{run_id}/audit")
    assert response.status_code == 200, response.body
    return dict(response.json_body)


def agree(api: Api, tmp_path: Path, answer: dict[str, Any]) -> None:
    """Every offline verifier concludes what the service did, given the
    versions the chain binds as GET /workflows/{id}/versions/{n} answers now."""
    workflow_id = answer["genesis"]["workflow_id"]
    versions = [version_answer(api, workflow_id, n) for n in verifiers.bound_versions(answer)]
    verifiers.assert_agree(tmp_path, answer, versions=versions)


def purchase(api: Api) -> tuple[int, int]:
    """A workflow of Manager, then Finance (fay) when the amount is over 1,000,
    and a run of 5,000 waiting at Manager."""
    finance = {
        "name": "Finance",
        "approvers": ["user:fay"],
        "when": {">": [{"var": "amount"}, 1000]},
    }
    body = {"name": "PO", "steps": ["Manager", finance], "input_schema": SCHEMA}
    workflow = api.post("/workflows", body).json_body
    run = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "PO", "input": {"amount": 5000}}
    )
    assert run.status_code == 201, run.body
    return workflow["id"], run.json_body["id"]


def test_a_runs_genesis_binds_its_versions_definition_as_its_answer_shows_it(
    api: Api, tmp_path: Path
) -> None:
    workflow_id, run_id = purchase(api)
    version = version_answer(api, workflow_id, 1)

    answer = audit_of(api, run_id)

    genesis = answer["genesis"]
    assert genesis["definition_steps"] == 2
    assert genesis["definition_digest"] == chain.definition_digest(version, 2)
    assert api.get_run(run_id)["definition_digest"] == genesis["definition_digest"]
    assert genesis["hash"] == chain.genesis_of(genesis)
    assert (answer["valid"], answer["digest_mismatches"]) == (True, [])
    agree(api, tmp_path, answer)
    # An auditor who is not given the version cannot confirm what the chain binds.
    assert set(verifiers.verdicts(tmp_path, answer).values()) == {False}


def test_a_step_appended_after_the_start_is_bound_by_the_approval_that_reaches_it(
    api: Api, storage: Backend, tmp_path: Path
) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    run = api.start_run(workflow["id"])
    appended = api.post(
        f"/workflows/{workflow['id']}/steps", {"name": "Legal", "approvers": ["user:lee"]}
    )
    assert appended.status_code == 201, appended.body
    approved = api.approve(run["id"], "maria")
    assert approved["current_step"]["name"] == "Legal"
    shown = version_answer(api, workflow["id"], 1)

    answer = audit_of(api, run["id"])

    assert answer["genesis"]["definition_steps"] == 1
    assert answer["entries"][0]["next_step_digest"] == chain.step_digest(shown["steps"][1])
    assert approved["actions"][0]["next_step_digest"] == answer["entries"][0]["next_step_digest"]
    chain.assert_chained(approved)
    assert (answer["valid"], answer["state_valid"]) == (True, True)
    agree(api, tmp_path, answer)

    tamper.edit_version_step(storage, workflow["id"], 1, 2, approvers=["user:mallory"])

    edited = audit_of(api, run["id"])
    assert edited["digest_mismatches"] == [
        {"seq": 1, "field": "next_step_digest", "workflow_version": 1}
    ]
    assert (edited["valid"], edited["first_invalid_seq"]) == (False, 1)
    agree(api, tmp_path, edited)


@pytest.mark.parametrize(
    "rule",
    [{"approvers": ["user:mallory"]}, {"when": {">": [{"var": "amount"}, 100000]}}],
    ids=["approvers", "condition"],
)
def test_a_stored_versions_step_edited_for_a_run_in_progress_is_evident_in_its_audit(
    api: Api, storage: Backend, tmp_path: Path, rule: dict[str, Any]
) -> None:
    workflow_id, run_id = purchase(api)

    tamper.edit_version_step(storage, workflow_id, 1, 2, **rule)

    answer = audit_of(api, run_id)
    assert answer["digest_mismatches"] == [
        {"seq": 0, "field": "definition_digest", "workflow_version": 1}
    ]
    assert (answer["valid"], answer["first_invalid_seq"]) == (False, 1)
    agree(api, tmp_path, answer)


def test_a_move_binds_the_definition_of_the_version_it_moves_to(
    api: Api, storage: Backend, tmp_path: Path
) -> None:
    workflow_id, run_id = purchase(api)
    newer = {"steps": ["Legal", {"name": "CFO", "approvers": ["user:cy"]}]}
    assert api.post(f"/workflows/{workflow_id}/versions", newer).status_code == 201
    moved = api.post(f"/runs/{run_id}/move", {"actor": "ada", "to_version": 2, "step": "CFO"})
    assert moved.status_code == 200, moved.body

    answer = audit_of(api, run_id)

    entry = answer["entries"][-1]
    assert (entry["action"], entry["workflow_version"], entry["definition_steps"]) == ("move", 2, 2)
    assert entry["definition_digest"] == chain.definition_digest(
        version_answer(api, workflow_id, 2), 2
    )
    assert (answer["valid"], answer["state_valid"]) == (True, True)
    agree(api, tmp_path, answer)

    tamper.edit_version_step(storage, workflow_id, 2, 2, approvers=["user:mallory"])

    edited = audit_of(api, run_id)
    assert edited["digest_mismatches"] == [
        {"seq": 1, "field": "definition_digest", "workflow_version": 2}
    ]
    assert (edited["valid"], edited["first_invalid_seq"]) == (False, 1)
    agree(api, tmp_path, edited)
