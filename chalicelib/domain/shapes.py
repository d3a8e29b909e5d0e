"""The JSON shapes of a workflow and its steps, and of a delegation: what the
API answers and what events carry (chalicelib/domain/events.py), written once
so that the two never drift apart. Every other shape is the API's
(chalicelib/api/representations.py)."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.models import Delegation, Policy, Step, Workflow


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
