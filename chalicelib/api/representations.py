"""What the API answers for each record: its JSON shape, and the ids the
access log notes about it (chalicelib/api/access_log.py).

The records (chalicelib/domain/models.py) know nothing of either. A view
returns a record; `shape` and `about` answer for it by its type, and `text`
writes its shape as the answer's JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any, Optional, Union

from chalicelib.domain.models import (
    Action,
    Awaiting,
    Contact,
    Delegation,
    Event,
    Page,
    Permissions,
    Run,
    RunAudit,
    Step,
    Workflow,
)
from chalicelib.domain.shapes import (
    compact_ascii,
    delegation_shape,
    step_shape,
    step_text,
    workflow_shape,
)

if TYPE_CHECKING:
    # What a route returns to be shown; a name for the checker alone (typing's
    # Union costs a cold start about 0.5 million instructions).
    from chalicelib.domain.stats import Figures, WorkflowStats

    Answer = Union[
        Workflow,
        Step,
        Run,
        Action,
        RunAudit,
        Permissions,
        Delegation,
        Contact,
        Page[Any],
        WorkflowStats,
    ]


# Answers are compact and ASCII-escaped, as Chalice writes a body it serialises.
_encode = compact_ascii
_string = encode_basestring_ascii


def action_text(action: Action) -> str:
    """The action's JSON text in an answer: the one place its fields are listed.

    Written out field by field, as `_encode` would write the dict of them: a
    run's answer holds its whole history, and building a dict per action and
    encoding it cost three times as much (every field's type is fixed)."""
    return (
        f'{{"id":{action.id},"run_id":{action.run_id},"step_id":{action.step_id},'
        f'"step_name":{_string(action.step_name)},"action":{_string(action.action)},'
        f'"actor":{_string(action.actor)},"comment":{_string(action.comment)},'
        f'"created_at":{_string(action.created_at)},"hash":{_optional(action.hash)},'
        f'"on_behalf_of":{_optional(action.on_behalf_of)},"round":{action.round},'
        f'"input_digest":{_optional(action.input_digest)},'
        f'"channel":{_string(action.channel)},'
        f'"approvers":{"null" if action.approvers is None else _strings(action.approvers)},'
        f'"workflow_version":{_number(action.workflow_version)},'
        f'"next_step_digest":{_optional(action.next_step_digest)},'
        f'"definition_digest":{_optional(action.definition_digest)},'
        f'"definition_steps":{_number(action.definition_steps)}}}'
    )


def _number(value: Optional[int]) -> str:
    return "null" if value is None else str(value)


def listed_text(run: Run) -> str:
    """The run's JSON text as lists show it, everything but its actions (and
    the answer to a decision that prefers return=minimal): written out as
    action_text is, for the same reason."""
    current = run.current_step
    return (
        f'{{"id":{run.id},"workflow_id":{run.workflow_id},'
        f'"workflow_version":{run.workflow_version},"title":{_string(run.title)},'
        f'"input":{"{}" if not run.input else _encode(run.input)},"round":{run.round},'
        f'"requested_by":{_optional(run.requested_by)},"status":{_string(run.status)},'
        f'"current_step_id":{"null" if current is None else current.id},'
        f'"current_step":{"null" if current is None else step_text(current)},'
        f'"current_step_approved_by":{_strings(run.current_step_approved_by)},'
        f'"current_step_on_behalf_of":[{",".join(map(_delegator, run.current_step_on_behalf_of))}],'
        f'"current_step_since":{_optional(run.current_step_since)},'
        f'"current_step_due_at":{_optional(run.current_step_due_at)},'
        f'"current_step_escalated_to":{_strings(run.current_step_escalated_to)},'
        f'"created_at":{_string(run.created_at)},"updated_at":{_string(run.updated_at)},'
        f'"head_hash":{_optional(run.head_hash)},'
        f'"definition_digest":{_optional(run.definition_digest)},'
        f'"definition_steps":{_number(run.definition_steps)}}}'
    )


def _optional(text: Optional[str]) -> str:
    return "null" if text is None else _string(text)


def _delegator(name: str) -> str:
    """Whom an approval was given for: null for the approver themselves ("")."""
    return _string(name) if name else "null"


def _strings(names: tuple[str, ...]) -> str:
    return f"[{','.join(map(_string, names))}]"


def run_text(run: Run) -> str:
    """A run's JSON text: listed_text, and its history."""
    return f'{listed_text(run)[:-1]},"actions":[{",".join(map(action_text, run.actions))}]}}'


def _parsed(text: Callable[[Any], str]) -> Callable[[Any], dict[str, Any]]:
    """The shape a written-out text stands for: the text, parsed."""
    return lambda record: json.loads(text(record))


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
        "digest_mismatches": list(audit.digest_mismatches),
    }


def permissions_shape(permissions: Permissions) -> dict[str, Any]:
    from chalicelib.domain.lifecycle import CALLER_ACTIONS

    behalf = permissions.on_behalf_of or (None,) * len(CALLER_ACTIONS)
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
            for action, refused, whom in zip(
                CALLER_ACTIONS, permissions.refusals, behalf, strict=True
            )
        },
    }


def contact_shape(contact: Contact) -> dict[str, Any]:
    return contact._asdict()


def awaiting_text(awaiting: Awaiting) -> str:
    """A run in an inbox, as lists show it, and for whom the caller may decide it."""
    return f'{listed_text(awaiting.run)[:-1]},"on_behalf_of":{_optional(awaiting.on_behalf_of)}}}'


def listed_event(event: Event) -> dict[str, Any]:
    """The event as it was delivered: its CloudEvent."""
    envelope: dict[str, Any] = json.loads(event.body)
    return envelope


def page_text(page: Page[Any]) -> str:
    items = ",".join([_LISTED[type(item)](item) for item in page.items])
    return f'{{"items":[{items}],"next_cursor":{_optional(page.next_cursor)}}}'


# Lists show workflows whole, runs without their actions, events as delivered.
_LISTED: dict[type, Callable[[Any], str]] = {
    Workflow: lambda workflow: _encode(workflow_shape(workflow)),
    Run: listed_text,
    Event: lambda event: _encode(listed_event(event)),
    Awaiting: awaiting_text,
    Delegation: lambda delegation: _encode(delegation_shape(delegation)),
    Contact: lambda contact: _encode(contact_shape(contact)),
}
_SHAPES: dict[type, Callable[[Any], dict[str, Any]]] = {
    Workflow: workflow_shape,
    Action: _parsed(action_text),
    Step: step_shape,
    Run: _parsed(run_text),
    RunAudit: audit_shape,
    Permissions: permissions_shape,
    Delegation: delegation_shape,
    Contact: contact_shape,
    Page: _parsed(page_text),
}


def stats_shape(figures: WorkflowStats) -> dict[str, Any]:
    """GET /workflows/{id}/stats's answer (chalicelib/domain/stats.py)."""
    return {
        "workflow_id": figures.workflow_id,
        "from": figures.window_from,
        "to": figures.window_to,
        "truncated": figures.truncated,
        "runs": figures.runs._asdict(),
        "run_seconds": _durations(figures.run_seconds),
        "steps": [
            {
                "name": step.name,
                "step_order": step.step_order,
                "step_id": step.step_id,
                "decisions": step.decisions,
                "approvals": step.approvals,
                "rejections": step.rejections,
                "returns": step.returns,
                "skips": step.skips,
                "wait_seconds": _durations(step.wait_seconds),
            }
            for step in figures.steps
        ],
        "overdue_runs": list(figures.overdue_runs),
    }


def _durations(figures: Figures) -> dict[str, Any]:
    return {
        "count": figures.total,
        "p50": figures.p50,
        "p90": figures.p90,
        "p99": figures.p99,
        "max": figures.max,
    }


# Shaped by the name of their record's class, whose module this one does not
# import: chalicelib/domain/stats.py loads the lifecycle's enums, which a cold
# start serving a read by id does without.
_SHAPES_BY_NAME: dict[str, Callable[[Any], dict[str, Any]]] = {"WorkflowStats": stats_shape}


def shape(answer: Answer) -> dict[str, Any]:
    """The JSON body of a view's answer."""
    shaper = _SHAPES.get(type(answer)) or _SHAPES_BY_NAME[type(answer).__name__]
    return shaper(answer)


def text(answer: Answer) -> str:
    """The JSON text of a view's answer: its shape, encoded."""
    written = _TEXTS.get(type(answer))
    return written(answer) if written else _encode(shape(answer))


# The answers written out rather than shaped and encoded: those of the hot path.
_TEXTS: dict[type, Callable[[Any], str]] = {Run: run_text, Page: page_text}


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
