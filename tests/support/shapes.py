"""Assertions on the exact JSON shapes of the API's contract."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any, Optional

STEP_FIELDS = {
    "id",
    "workflow_id",
    "name",
    "step_order",
    "approvers",
    "required_approvals",
    "deadline_seconds",
    "on_deadline",
    "escalate_to",
    "when",
    "notify",
}
POLICY_FIELDS = {"allow_self_approval", "distinct_approvers", "reject_requires_comment"}
WORKFLOW_FIELDS = {
    "id",
    "name",
    "description",
    "created_at",
    "steps",
    "input_schema",
    "max_returns",
    *POLICY_FIELDS,
    "version",
    "version_created_at",
    "retired",
}
ACTION_FIELDS = {
    "id",
    "run_id",
    "step_id",
    "step_name",
    "action",
    "actor",
    "comment",
    "created_at",
    "hash",
    "on_behalf_of",
    "round",
    "input_digest",
    "channel",
    "approvers",
    "workflow_version",
    "next_step_digest",
    "definition_digest",
    "definition_steps",
}
RUN_FIELDS = {
    "id",
    "workflow_id",
    "workflow_version",
    "title",
    "input",
    "round",
    "requested_by",
    "status",
    "current_step_id",
    "current_step",
    "current_step_approved_by",
    "current_step_on_behalf_of",
    "current_step_since",
    "created_at",
    "updated_at",
    "head_hash",
    "current_step_due_at",
    "current_step_escalated_to",
    "definition_digest",
    "definition_steps",
    "actions",
}
RUN_STATUSES = {"in_progress", "completed", "rejected", "cancelled", "returned"}
HASH = re.compile(r"[0-9a-f]{64}")


def assert_id(value: Any) -> None:
    # bool is an int subclass in Python, and JSON true is no id.
    assert type(value) is int, f"id {value!r} is not a JSON integer"
    assert value >= 1, f"id {value!r} is not positive"


def assert_utc_timestamp(value: Any) -> datetime:
    assert isinstance(value, str), f"timestamp {value!r} is not a string"
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.utcoffset() == timedelta(0), f"timestamp {value!r} is not in UTC"
    return parsed


def assert_hash(value: Any) -> None:
    """A SHA-256 digest in lowercase hex: every run and action the API writes has one."""
    assert isinstance(value, str) and HASH.fullmatch(value), f"hash {value!r}"


def assert_step(step: Any, workflow_id: Optional[int] = None) -> None:
    assert isinstance(step, dict) and set(step) == STEP_FIELDS, step
    assert_id(step["id"])
    assert_id(step["workflow_id"])
    assert isinstance(step["name"], str) and step["name"]
    assert type(step["step_order"]) is int and step["step_order"] >= 1
    assert isinstance(step["approvers"], list) and all(
        isinstance(p, str) and p.startswith(("user:", "group:")) for p in step["approvers"]
    ), step
    assert type(step["required_approvals"]) is int and 1 <= step["required_approvals"] <= 20
    assert step["when"] is None or isinstance(step["when"], dict), step
    assert isinstance(step["notify"], list) and all(
        isinstance(p, str) and p.startswith(("user:", "group:")) for p in step["notify"]
    ), step
    if workflow_id is not None:
        assert step["workflow_id"] == workflow_id


def assert_workflow(workflow: Any) -> None:
    assert isinstance(workflow, dict) and set(workflow) == WORKFLOW_FIELDS, workflow
    assert_id(workflow["id"])
    assert isinstance(workflow["name"], str) and workflow["name"]
    assert isinstance(workflow["description"], str)
    assert all(type(workflow[flag]) is bool for flag in POLICY_FIELDS), workflow
    schema = workflow["input_schema"]
    assert schema is None or (isinstance(schema, dict) and schema["type"] == "object"), workflow
    assert_utc_timestamp(workflow["created_at"])
    assert isinstance(workflow["steps"], list)
    for step in workflow["steps"]:
        assert_step(step, workflow["id"])
    orders = [step["step_order"] for step in workflow["steps"]]
    assert orders == sorted(orders) and len(set(orders)) == len(orders), orders


def assert_action(action: Any, run_id: int) -> None:
    assert isinstance(action, dict) and set(action) == ACTION_FIELDS, action
    assert_id(action["id"])
    assert action["run_id"] == run_id
    assert_id(action["step_id"])
    assert isinstance(action["step_name"], str) and action["step_name"]
    assert action["action"] in {"approve", "reject", "cancel", "skip", "return", "resubmit"}
    assert type(action["round"]) is int and action["round"] >= 1
    assert isinstance(action["actor"], str) and action["actor"]
    assert isinstance(action["comment"], str)
    assert_utc_timestamp(action["created_at"])
    assert_hash(action["hash"])


def assert_run(run: Any) -> None:
    assert isinstance(run, dict) and set(run) == RUN_FIELDS, run
    assert_id(run["id"])
    assert_id(run["workflow_id"])
    assert isinstance(run["title"], str) and run["title"]
    assert isinstance(run["input"], dict), run
    assert run["requested_by"] is None or (
        isinstance(run["requested_by"], str) and run["requested_by"]
    )
    assert run["status"] in RUN_STATUSES, run["status"]
    approved_by = run["current_step_approved_by"]
    assert isinstance(approved_by, list) and len(set(approved_by)) == len(approved_by), run
    if run["status"] == "in_progress":
        assert_step(run["current_step"], run["workflow_id"])
        assert run["current_step_id"] == run["current_step"]["id"]
        assert len(approved_by) < run["current_step"]["required_approvals"], run
        assert_utc_timestamp(run["current_step_since"])
    else:
        assert run["current_step_id"] is None and run["current_step"] is None, run
        assert approved_by == [] and run["current_step_since"] is None, run
    assert_utc_timestamp(run["created_at"])
    assert_utc_timestamp(run["updated_at"])
    assert_hash(run["head_hash"])
    assert isinstance(run["actions"], list)
    for action in run["actions"]:
        assert_action(action, run["id"])
    # Oldest first is checked against the order the tests acted in, not against
    # the ids: ids only have to be unique, not increasing across processes.
    ids = [action["id"] for action in run["actions"]]
    assert len(set(ids)) == len(ids), f"duplicate action ids: {ids}"


def assert_error(response: Any, status: int, message: Optional[str] = None) -> None:
    """The response is `status` with exactly {"error": "<non-empty message>"}."""
    assert response.status_code == status, (response.status_code, response.body)
    body = json.loads(response.body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    assert isinstance(body["error"], str) and body["error"].strip(), body
    if message is not None:
        assert body["error"] == message, body


# Path ids that are not positive integers (or not ones JSON can carry exactly):
# each names nothing, and answers 404 (never 400, never 500).
BAD_PATH_IDS = [
    "abc",
    "0",
    "-1",
    "1.5",
    "1e3",
    "0x1",
    "99999999999999999999999",
    "9007199254740992",
]
# A well-formed id that no test creates (the largest id JSON numbers carry exactly).
MISSING_ID = 2**53 - 1

# Request bodies that are not a JSON object, as raw bytes.
NOT_JSON_BODIES = [b"not json", b"{", b'{"name": "x",}', b"\xff\xfe", b""]
NOT_OBJECT_BODIES = [b"[]", b'["name"]', b'"name"', b"3", b"null", b"true"]
