"""What every state change tells other systems: CloudEvents 1.0, JSON structured mode.

Each transition's storage write records its events in the same atomic write
(the outbox: a table on SQLite, items in the same TransactWriteItems on
DynamoDB); chalicelib/delivery/dispatch.py sends them on. This module is pure: it
turns a transition (the models before and after it) into drafts, and a draft
into the envelope that is delivered, written but for its place in its
subject's stream (models.EventDraft), which the storage fills in.

Streams: a run's events have the subject `runs/<id>`, a workflow's
`workflows/<id>`; each stream numbers its events from 1, gap-free, in the
extension attribute `sequence`, which the storage assigns inside the write:
as the CloudEvents Sequence extension defines it, a string that sorts as
text, the number zero-padded to 20 digits (models.sequence_text).

    transition                      events, in order
    POST /workflows                 workflow.created
    POST /workflows/{id}/steps      workflow.step_added
    POST /workflows/{id}/versions   workflow.version_published
    POST /workflows/{id}/retire     workflow.retired (reinstate: workflow.reinstated)
    reassign                        run.reassigned
    move                            run.moved, step.activated (the step it continues at)
    POST /runs                      run.started, step.activated (the first step)
    approve (more steps)            step.approved, step.activated (the next step)
    approve (the last step)         step.approved, run.completed
    a step whose condition fails    step.skipped, between the above (actor system:conditions)
    approve (below the quorum)      step.approved
    reject                          step.rejected, run.rejected
    cancel                          run.cancelled
    deadline: remind                step.reminded
    deadline: escalate              step.escalated
    deadline: reject                step.expired, run.rejected (actor system:deadline)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any, Optional, assert_never

from chalicelib.domain import conditions
from chalicelib.domain.audit import input_digest
from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.domain.models import (
    Decision,
    Delegation,
    Event,
    EventDraft,
    Run,
    Step,
    Workflow,
)
from chalicelib.domain.record import Record
from chalicelib.domain.shapes import (
    compact,
    delegation_shape,
    step_shape,
    step_text,
    workflow_shape,
)

PREFIX = "approval."
WORKFLOW_CREATED = "approval.workflow.created"
STEP_ADDED = "approval.workflow.step_added"
VERSION_PUBLISHED = "approval.workflow.version_published"
WORKFLOW_RETIRED = "approval.workflow.retired"
WORKFLOW_REINSTATED = "approval.workflow.reinstated"
RUN_STARTED = "approval.run.started"
STEP_ACTIVATED = "approval.step.activated"
STEP_APPROVED = "approval.step.approved"
STEP_REJECTED = "approval.step.rejected"
RUN_COMPLETED = "approval.run.completed"
RUN_REJECTED = "approval.run.rejected"
RUN_CANCELLED = "approval.run.cancelled"
STEP_REMINDED = "approval.step.reminded"
STEP_ESCALATED = "approval.step.escalated"
STEP_EXPIRED = "approval.step.expired"
STEP_SKIPPED = "approval.step.skipped"
RUN_RETURNED = "approval.run.returned"
RUN_RESUBMITTED = "approval.run.resubmitted"
RUN_REASSIGNED = "approval.run.reassigned"
RUN_MOVED = "approval.run.moved"
DELEGATION_CREATED = "approval.delegation.created"
DELEGATION_REVOKED = "approval.delegation.revoked"
TYPES = (
    WORKFLOW_CREATED,
    STEP_ADDED,
    VERSION_PUBLISHED,
    WORKFLOW_RETIRED,
    WORKFLOW_REINSTATED,
    RUN_STARTED,
    STEP_ACTIVATED,
    STEP_APPROVED,
    STEP_REJECTED,
    RUN_COMPLETED,
    RUN_REJECTED,
    RUN_CANCELLED,
    STEP_REMINDED,
    STEP_ESCALATED,
    STEP_EXPIRED,
    STEP_SKIPPED,
    RUN_RETURNED,
    RUN_RESUBMITTED,
    RUN_REASSIGNED,
    RUN_MOVED,
    DELEGATION_CREATED,
    DELEGATION_REVOKED,
)

# Who acts when nobody does: the deadline sweeper, and the conditions of steps.
DEADLINE_ACTOR = "system:deadline"
CONDITIONS_ACTOR = "system:conditions"
# The run's status after a transition -> the event that says the run ended so.
_RUN_ENDED = {
    RunStatus.COMPLETED: RUN_COMPLETED,
    RunStatus.REJECTED: RUN_REJECTED,
    RunStatus.CANCELLED: RUN_CANCELLED,
}
STAGE_VARIABLE = "WORKFLOW_STAGE"
# Bodies are compact and not ASCII-escaped.
_encode = compact
# What _encode writes for a string.
_string = encode_basestring
DEFAULT_STAGE = "dev"


class Draft(Record):
    """An event before the storage gives it its place: type, stream, time, data."""

    type: str
    subject: str
    time: str
    # A run's events carry their data as its text already (RunData).
    data: Mapping[str, Any]


class RunData(Mapping[str, Any]):
    """The data of a run's event as the JSON text its body holds, written by
    _run_data; read as a mapping (by tests, by tools), it is that text parsed.

    A run's start and each decision make two events or more, each with the
    run's fields and its step: writing the text once costs a third of building
    a dict for it and encoding that."""

    __slots__ = ("_parsed", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._parsed: Optional[dict[str, Any]] = None

    def _mapping(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = json.loads(self.text)
        return self._parsed

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def __repr__(self) -> str:
        return f"RunData({self.text})"


def run_subject(run_id: int) -> str:
    return f"runs/{run_id}"


def workflow_subject(workflow_id: int) -> str:
    return f"workflows/{workflow_id}"


def source() -> str:
    """`/approval-workflows/<stage>`: the stage WORKFLOW_STAGE names (the local
    server and the packaged functions set it), `dev` when unset."""
    stage = os.environ.get(STAGE_VARIABLE, "").strip() or DEFAULT_STAGE
    return f"/approval-workflows/{stage}"


def prepared(draft: Draft, new_id: Optional[Callable[[], str]] = None) -> EventDraft:
    """`draft` as a CloudEvent with a new unique id, serialised once but for its
    sequence, which the storage gives it in the write that records it."""
    return _enveloped(draft, new_id() if new_id else _uuid(), _string(source()))


def prepared_all(drafts: Sequence[Draft]) -> tuple[EventDraft, ...]:
    """Each of one change's `drafts` prepared, their source read once."""
    origin = _string(source())
    return tuple([_enveloped(draft, _uuid(), origin) for draft in drafts])


def _enveloped(draft: Draft, event_id: str, origin: str) -> EventDraft:
    # The text _encode gives the envelope, its strings each encoded as _encode
    # encodes them (the C function it calls), cut where the sequence goes:
    # without building the envelope's dict and walking it.
    head = (
        f'{{"specversion":"1.0","id":{_string(event_id)},"source":{origin},'
        f'"type":{_string(draft.type)},"subject":{_string(draft.subject)},'
        f'"time":{_string(draft.time)},"datacontenttype":"application/json","sequence":'
    )
    data = draft.data
    tail = f',"data":{data.text if type(data) is RunData else _encode(data)}}}'
    return EventDraft(event_id, draft.subject, draft.type, draft.time, head, tail)


def recorded(draft: Draft, sequence: int, new_id: Optional[Callable[[], str]] = None) -> Event:
    """`draft` as the `sequence`th event of its subject, with a new unique id:
    what is stored is what is delivered."""
    return prepared(draft, new_id).numbered(sequence)


def _uuid() -> str:
    """A random (version 4) UUID as str(uuid.uuid4()) spells it, from 16 random
    bytes: without importing uuid (not on every cold start's path) or making a
    UUID object for each of a decision's events."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# -- workflows ---------------------------------------------------------------


def workflow_created(workflow: Workflow) -> list[Draft]:
    """A workflow was defined (its first steps with it: no step_added for them)."""
    data = _workflow_data(workflow.id, None)
    data["workflow"] = workflow_shape(workflow)
    return [Draft(WORKFLOW_CREATED, workflow_subject(workflow.id), workflow.created_at, data)]


def step_added(step: Step, at: str) -> list[Draft]:
    """A step was appended to its workflow."""
    data = _workflow_data(step.workflow_id, step)
    return [Draft(STEP_ADDED, workflow_subject(step.workflow_id), at, data)]


def version_published(workflow: Workflow, at: str) -> list[Draft]:
    """A new version of a workflow was published: the workflow at it, whole."""
    data = _workflow_data(workflow.id, None)
    data["workflow"] = workflow_shape(workflow)
    return [Draft(VERSION_PUBLISHED, workflow_subject(workflow.id), at, data)]


def retirement(workflow: Workflow, at: str) -> list[Draft]:
    """A workflow was retired (no new runs) or reinstated, as `workflow` now is."""
    kind = WORKFLOW_RETIRED if workflow.retired else WORKFLOW_REINSTATED
    data = _workflow_data(workflow.id, None)
    data["version"] = workflow.version
    return [Draft(kind, workflow_subject(workflow.id), at, data)]


def _workflow_data(workflow_id: int, step: Optional[Step]) -> dict[str, Any]:
    return {
        "workflow_id": workflow_id,
        "run_id": None,
        "status": None,
        "step": step_shape(step) if step else None,
        "actor": None,
    }


# -- runs --------------------------------------------------------------------


def run_started(run: Run, skipped: Sequence[Step] = ()) -> list[Draft]:
    """A run began, with its input: run.started, a step.skipped for each first
    step whose condition does not hold, then the step it waits at activated
    (or run.completed, when none was left)."""
    subject = run_subject(run.id)
    first = skipped[0] if skipped else run.current_step
    started = _run_data(run, first, run.requested_by, "", input=run.input)
    return [
        Draft(RUN_STARTED, subject, run.created_at, started),
        *_skipped(run, skipped, run.created_at),
        _activated(run, run.created_at)
        if run.status == RunStatus.IN_PROGRESS
        else Draft(RUN_COMPLETED, subject, run.created_at, _run_data(run, None, None, "")),
    ]


def decided(
    before: Run, decision: Decision, after: Run, skipped: Sequence[Step] = ()
) -> list[Draft]:
    """A decision on `before`'s current step left the run as `after`, past the
    `skipped` steps. A reject by the deadline sweeper is the step's expiry,
    not a person's rejection."""
    at = decision.at
    behalf = {"on_behalf_of": decision.on_behalf_of, "channel": decision.channel}
    actor, comment = decision.actor, decision.comment
    match decision.action:
        case ActionKind.CANCEL:
            return cancelled(before, after, actor, comment, at)
        case ActionKind.RETURN:
            data = _run_data(after, before.current_step, actor, comment, **behalf)
            return [Draft(RUN_RETURNED, run_subject(after.id), at, data)]
        case ActionKind.APPROVE:
            step_type = STEP_APPROVED
        case ActionKind.REJECT:
            step_type = STEP_EXPIRED if actor == DEADLINE_ACTOR else STEP_REJECTED
        case ActionKind.SKIP | ActionKind.RESUBMIT | ActionKind.REASSIGN | ActionKind.MOVE:
            raise ValueError(f"{decision.action!r} is no decision")
        case _:
            assert_never(decision.action)
    return transition(before, after, step_type, actor, comment, at, skipped, **behalf)


def resubmitted(
    before: Run, after: Run, actor: str, comment: str, skipped: Sequence[Step], at: str
) -> list[Draft]:
    """The requester resubmitted the returned run, with its input (as it is
    now): run.resubmitted, a step.skipped for each first step whose condition
    does not hold, then the step it waits at activated (or run.completed)."""
    subject = run_subject(after.id)
    data = _run_data(after, before.current_step, actor, comment, input=after.input)
    return [
        Draft(RUN_RESUBMITTED, subject, at, data),
        *_skipped(after, skipped, at),
        _activated(after, at)
        if after.status == RunStatus.IN_PROGRESS
        else Draft(RUN_COMPLETED, subject, at, _run_data(after, None, actor, comment)),
    ]


def reassigned(before: Run, after: Run, actor: str, comment: str, at: str) -> list[Draft]:
    """An administrator reassigned the run's current step: run.reassigned, the
    step as it is now (whom it awaits) and whom it awaited before."""
    assert before.current_step is not None and after.current_step is not None
    data = _run_data(
        after,
        after.current_step,
        actor,
        comment,
        previous_approvers=list(before.current_step.approvers),
    )
    return [Draft(RUN_REASSIGNED, run_subject(after.id), at, data)]


def moved(before: Run, after: Run, actor: str, comment: str, at: str) -> list[Draft]:
    """An administrator moved the run to a newer version of its workflow:
    run.moved, about the step it left, then the step it continues at activated."""
    versions = {"from_version": before.workflow_version, "to_version": after.workflow_version}
    return transition(before, after, RUN_MOVED, actor, comment, at, (), **versions)


def delegation_changed(delegation: Delegation, revoked: bool) -> list[Draft]:
    """A delegation was made, or revoked: its own subject's event."""
    kind = DELEGATION_REVOKED if revoked else DELEGATION_CREATED
    at = delegation.revoked_at if revoked and delegation.revoked_at else delegation.created_at
    return [Draft(kind, delegation_subject(delegation.id), at, delegation_data(delegation))]


def delegation_subject(delegation_id: int) -> str:
    return f"delegations/{delegation_id}"


def delegation_data(delegation: Delegation) -> dict[str, Any]:
    return {
        "delegation_id": delegation.id,
        "run_id": None,
        "workflow_id": delegation.workflow_id,
        "status": None,
        "step": None,
        "actor": delegation.revoked_by or delegation.created_by,
        "delegation": delegation_shape(delegation),
    }


def cancelled(before: Run, after: Run, actor: str, reason: str, at: str) -> list[Draft]:
    """The requester withdrew the run: run.cancelled."""
    return transition(before, after, None, actor, reason, at)


def deadline_passed(before: Run, after: Run, at: str) -> list[Draft]:
    """The current step's deadline passed while the run waited: step.reminded,
    or step.escalated (naming who may decide it now besides its approvers).
    A deadline that rejects is a decision (see `decided`)."""
    step = before.current_step
    assert step is not None and step.deadline is not None, "only a step with a deadline"
    due_at = before.current_step_due_at
    match step.deadline.action:
        case OnDeadline.ESCALATE:
            escalated = list(after.current_step_escalated_to)
            return transition(
                before,
                after,
                STEP_ESCALATED,
                DEADLINE_ACTOR,
                "",
                at,
                due_at=due_at,
                escalated_to=escalated,
            )
        case OnDeadline.REMIND:
            return transition(before, after, STEP_REMINDED, DEADLINE_ACTOR, "", at, due_at=due_at)
        case OnDeadline.REJECT:
            raise ValueError("a deadline that rejects is a decision (see `decided`)")
        case _:
            assert_never(step.deadline.action)


def transition(
    before: Run,
    after: Run,
    step_type: Optional[str],
    actor: Optional[str],
    comment: str,
    at: str,
    skipped: Sequence[Step] = (),
    **extra: Any,
) -> list[Draft]:
    """The events of one transition from `before` to `after`: `step_type` about
    the step `before` was at (if given), a step.skipped for each step passed
    as its condition does not hold, then what follows from where the run is
    now: its next step activated, or its end."""
    subject = run_subject(after.id)
    drafts = []
    if step_type is not None:
        data = _run_data(after, before.current_step, actor, comment, **extra)
        drafts.append(Draft(step_type, subject, at, data))
    drafts += _skipped(after, skipped, at)
    if after.status == RunStatus.IN_PROGRESS:
        if after.current_step_id != before.current_step_id:
            drafts.append(_activated(after, at))
    elif after.status != before.status:
        drafts.append(
            Draft(_RUN_ENDED[after.status], subject, at, _run_data(after, None, actor, comment))
        )
    return drafts


def _skipped(run: Run, steps: Sequence[Step], at: str) -> list[Draft]:
    """A step.skipped for each of `steps`, passed as its condition does not hold."""
    return [
        Draft(
            STEP_SKIPPED,
            run_subject(run.id),
            at,
            _run_data(run, step, CONDITIONS_ACTOR, conditions.text(step.when)),
        )
        for step in steps
    ]


def _activated(run: Run, at: str) -> Draft:
    """The run reached its current step: who may decide it should hear of it,
    and by when (due_at: null without a deadline)."""
    data = _run_data(run, run.current_step, None, "", due_at=run.current_step_due_at)
    return Draft(STEP_ACTIVATED, run_subject(run.id), at, data)


def _run_data(
    run: Run, step: Optional[Step], actor: Optional[str], comment: str, **extra: Any
) -> RunData:
    """The data of a run's event: the run, the step it is about, who acted (and
    why, where they said), then `extra`, in that order."""
    # What is being approved, bound: run.started carries the input itself.
    digest = input_digest(run.input)
    text = (
        f'{{"run_id":{run.id},"workflow_id":{run.workflow_id},"title":{_string(run.title)},'
        f'"requested_by":{_optional(run.requested_by)},"status":{_string(run.status)},'
        f'"step":{"null" if step is None else step_text(step, ascii=False)},'
        f'"actor":{_optional(actor)},"head_hash":{_optional(run.head_hash)},'
        f'"input_digest":{_optional(digest)},"round":{run.round}'
    )
    if comment:
        text += f',"comment":{_string(comment)}'
    for name, value in extra.items():
        text += f",{_string(name)}:{_member(value)}"
    return RunData(text + "}")


def _member(value: Any) -> str:
    """A value of `extra` as _encode writes it: most are a name, a time or null."""
    if value is None:
        return "null"
    return _string(value) if type(value) is str else _encode(value)


def _optional(text: Optional[str]) -> str:
    return "null" if text is None else _string(text)
