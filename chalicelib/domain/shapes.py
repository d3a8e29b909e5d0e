"""The JSON shapes of a workflow and its steps, and of a delegation: what the
API answers and what events carry (chalicelib/domain/events.py), written once
so that the two never drift apart. Every other shape is the API's
(chalicelib/api/representations.py). And the one way the service writes a
shape as JSON text: `json_encoder`."""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _json
from typing import Any

from chalicelib.domain.models import Delegation, Policy, Step, Workflow


def json_encoder(
    ensure_ascii: bool = True, sort_keys: bool = False, separators: tuple[str, str] = (",", ":")
) -> Callable[[Any], str]:
    """What json.JSONEncoder(...).encode with these options returns, from one
    C encoder kept for the process: JSONEncoder.encode builds a new one for
    every call, about a microsecond of each of the two dozen encodes of a
    request's answer, events and rows. Without the circular-reference check:
    what the service encodes is parsed JSON and its own records, never circular."""
    options = json.JSONEncoder(
        ensure_ascii=ensure_ascii, sort_keys=sort_keys, separators=separators
    )
    make = getattr(_json, "c_make_encoder", None)  # typeshed leaves the accelerator out
    if make is None:  # a Python without the json accelerator
        return options.encode
    strings = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    item_separator, key_separator = separators
    # JSONEncoder.iterencode's own call, markers None, skipkeys False, allow_nan True.
    chunks = make(
        None, options.default, strings, None, key_separator, item_separator, sort_keys, False, True
    )

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


def step_shape(step: Step) -> dict[str, Any]:
    deadline = step.deadline
    return {
        "id": step.id,
        "workflow_id": step.workflow_id,
        "name": step.name,
        "step_order": step.step_order,
        "approvers": list(step.approvers),
        "required_approvals": step.required_approvals,
        "deadline_seconds": deadline.seconds if deadline else None,
        "on_deadline": deadline.action if deadline else None,
        "escalate_to": list(deadline.escalate_to) if deadline else [],
        "when": step.when,
    }


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
