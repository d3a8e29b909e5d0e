"""The JSON shapes of a workflow and its steps, and of a delegation: what the
API answers and what events carry (chalicelib/domain/events.py), written once
so that the two never drift apart. Every other shape is the API's
(chalicelib/api/representations.py). And how the service writes JSON text:
`json_encoder` and its two shared encoders, and `step_text`, of which
`step_shape` is the parse."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from chalicelib.domain.models import Delegation, Policy, Step, Workflow


def json_encoder(
    ensure_ascii: bool = True, sort_keys: bool = False, separators: tuple[str, str] = (",", ":")
) -> Callable[[Any], str]:
    """The encode method of one json.JSONEncoder with these options, kept for
    the process. Without the circular-reference check: what the service
    encodes is parsed JSON and its own records, never circular."""
    return json.JSONEncoder(
        ensure_ascii=ensure_ascii,
        sort_keys=sort_keys,
        separators=separators,
        check_circular=False,
    ).encode


# The service's two compact JSON texts, one encoder each for the process:
# ASCII-escaped in answers, as Chalice writes a body it serialises; as typed
# in what is stored (event bodies, SQLite's JSON columns).
compact_ascii = json_encoder()
compact = json_encoder(ensure_ascii=False)
_string_ascii = encode_basestring_ascii
_string = encode_basestring


def step_text(step: Step, ascii: bool = True) -> str:
    """The step's JSON text, compact, ASCII-escaped (as answers are) or not (as
    event bodies are): the one place its fields are listed.

    Written out field by field, as json_encoder would write the dict of them
    (every field's type is fixed): a run's answer and most of its events hold
    its step, and building and encoding a dict for each cost twice as much."""
    string, encode = (_string_ascii, compact_ascii) if ascii else (_string, compact)
    deadline = step.deadline
    approvers = ",".join(map(string, step.approvers))
    notify = ",".join(map(string, step.notify))
    if deadline is None:
        deadline_text = '"deadline_seconds":null,"on_deadline":null,"escalate_to":[]'
    else:
        deadline_text = (
            f'"deadline_seconds":{deadline.seconds},"on_deadline":{string(deadline.action)},'
            f'"escalate_to":[{",".join(map(string, deadline.escalate_to))}]'
        )
    return (
        f'{{"id":{step.id},"workflow_id":{step.workflow_id},"name":{string(step.name)},'
        f'"step_order":{step.step_order},"approvers":[{approvers}],'
        f'"required_approvals":{step.required_approvals},{deadline_text},'
        f'"when":{"null" if step.when is None else encode(step.when)},"notify":[{notify}]}}'
    )


def step_shape(step: Step) -> dict[str, Any]:
    """step_text's shape."""
    shaped: dict[str, Any] = json.loads(step_text(step))
    return shaped


def policy_shape(policy: Policy) -> dict[str, bool]:
    return policy._asdict()


def workflow_shape(workflow: Workflow) -> dict[str, Any]:
    return {
        "id": workflow.id,
        "name": workflow.name,
        "description": workflow.description,
        "created_at": workflow.created_at,
        **policy_shape(workflow.policy),
        "max_returns": workflow.max_returns,
        "input_schema": workflow.input_schema,
        "steps": [step_shape(step) for step in workflow.steps],
        "version": workflow.version,
        "version_created_at": workflow.version_created_at or workflow.created_at,
        "retired": workflow.retired,
    }


def delegation_shape(delegation: Delegation) -> dict[str, Any]:
    return {
        "id": delegation.id,
        "delegator": delegation.delegator,
        "delegate": delegation.delegate,
        "workflow_id": delegation.workflow_id,
        "starts_at": delegation.starts_at,
        "ends_at": delegation.ends_at,
        "reason": delegation.reason,
        "created_at": delegation.created_at,
        "created_by": delegation.created_by,
        "revoked_at": delegation.revoked_at,
        "revoked_by": delegation.revoked_by,
    }
