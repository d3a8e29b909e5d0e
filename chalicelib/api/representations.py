"""What the API answers for each record: its JSON shape, and the ids the
access log notes about it (chalicelib/api/access_log.py).

The records (chalicelib/domain/models.py) know nothing of either. A view
returns a record; `shape` and `about` answer for it by its type.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

from chalicelib.domain.models import (
    ACTIONS,
    Action,
    Awaiting,
    Delegation,
    Event,
    Page,
    Permissions,
    Run,
    RunAudit,
    Step,
    Workflow,
)
from chalicelib.domain.shapes import delegation_shape, step_shape, workflow_shape

if TYPE_CHECKING:
    # What a route returns to be shown; a name for the checker alone (typing's
    # Union costs a cold start about 0.5 million instructions).
    Answer = Union[Workflow, Step, Run, Action, RunAudit, Permissions, Delegation, Page[Any]]


def listed_run(run: Run) -> dict[str, Any]:
    """The run as lists show it: everything but its actions."""
    current = run.current_step
    return {
        "id": run.id,
        "workflow_id": run.workflow_id,
        "title": run.title,
        "input": run.input,
        "round": run.round,
        "requested_by": run.requested_by,
        "status": run.status,
        "current_step_id": run.current_step_id,
        "current_step": step_shape(current) if current else None,
        "current_step_approved_by": list(run.current_step_approved_by),
        "current_step_on_behalf_of": [name or None for name in run.current_step_approved_for],
        "current_step_since": run.current_step_since,
        "current_step_due_at": run.current_step_due_at,
        "current_step_escalated_to": list(run.current_step_escalated_to),
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "head_hash": run.head_hash,
    }


def action_shape(action: Action) -> dict[str, Any]:
    return {
        "id": action.id,
        "run_id": action.run_id,
        "step_id": action.step_id,
        "step_name": action.step_name,
        "action": action.action,
        "actor": action.actor,
        "comment": action.comment,
        "created_at": action.created_at,
        "hash": action.hash,
        "on_behalf_of": action.on_behalf_of,
        "round": action.round,
        "input_digest": action.input_digest,
    }


def run_shape(run: Run) -> dict[str, Any]:
    return {**listed_run(run), "actions": [action_shape(action) for action in run.actions]}


def audit_shape(audit: RunAudit) -> dict[str, Any]:
    return {
        "run_id": audit.run_id,
        "input": audit.input,
        "genesis": audit.genesis,
        "head_hash": audit.head_hash,
        "valid": audit.first_invalid_seq is None,
        "first_invalid_seq": audit.first_invalid_seq,
        "entries": list(audit.entries),
        "state_valid": not audit.state_mismatches,
        "state_mismatches": list(audit.state_mismatches),
    }


def permissions_shape(permissions: Permissions) -> dict[str, Any]:
    behalf = permissions.on_behalf_of or (None,) * len(ACTIONS)
    return {
        "run_id": permissions.run_id,
        "actor": permissions.actor,
        **{
            action: {
                "allowed": refused is None,
                "reason": refused.code if refused else None,
                "message": refused.message if refused else None,
                "on_behalf_of": whom if refused is None else None,
            }
            for action, refused, whom in zip(ACTIONS, permissions.refusals, behalf, strict=True)
        },
    }


def awaiting_shape(awaiting: Awaiting) -> dict[str, Any]:
    """A run in an inbox, as lists show it, and for whom the caller may decide it."""
    return {**listed_run(awaiting.run), "on_behalf_of": awaiting.on_behalf_of}


def listed_event(event: Event) -> dict[str, Any]:
    """The event as it was delivered: its CloudEvent."""
    envelope: dict[str, Any] = json.loads(event.body)
    return envelope


def page_shape(page: Page[Any]) -> dict[str, Any]:
    return {
        "items": [_LISTED[type(item)](item) for item in page.items],
        "next_cursor": page.next_cursor,
    }


# Lists show workflows whole, runs without their actions, events as delivered.
_LISTED: dict[type, Callable[[Any], dict[str, Any]]] = {
    Workflow: workflow_shape,
    Run: listed_run,
    Event: listed_event,
    Awaiting: awaiting_shape,
    Delegation: delegation_shape,
}
_SHAPES: dict[type, Callable[[Any], dict[str, Any]]] = {
    Workflow: workflow_shape,
    Action: action_shape,
    Step: step_shape,
    Run: run_shape,
    RunAudit: audit_shape,
    Permissions: permissions_shape,
    Delegation: delegation_shape,
    Page: page_shape,
}


def shape(answer: Answer) -> dict[str, Any]:
    """The JSON body of a view's answer."""
    return _SHAPES[type(answer)](answer)


def about(answer: Answer) -> dict[str, int]:
    """The ids of what an answer is about, for the access log."""
    if isinstance(answer, Workflow):
        return {"workflow_id": answer.id}
    if isinstance(answer, Step):
        return {"workflow_id": answer.workflow_id}
    if isinstance(answer, Run):
        return {"workflow_id": answer.workflow_id, "run_id": answer.id}
    if isinstance(answer, (RunAudit, Permissions)):
        return {"workflow_id": answer.workflow_id, "run_id": answer.run_id}
    if isinstance(answer, Delegation):
        return {"delegation_id": answer.id}
    return {}
