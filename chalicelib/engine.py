"""The use cases of approval workflows, over any storage.

Every function takes the storage and plain, already validated values
(chalicelib/validation.py turns requests into those), and returns models or
raises a domain error from `errors`. No SQL, no boto3, no HTTP; the state
machine itself is chalicelib/decision.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Optional, Union

from chalicelib import audit, deadlines, decision, errors, events
from chalicelib.models import (
    APPROVE,
    REJECT,
    NewStep,
    Page,
    Run,
    RunAudit,
    Slice,
    Step,
    Workflow,
)
from chalicelib.storage import Storage
from chalicelib.validation import MAX_ID

WORKFLOWS = "workflows"
# Attempts of one decision that keeps losing its conditional write (see _decide).
DECISION_ATTEMPTS = 10
RUNS = "runs"
EVENTS = "events"
# Runs whose deadline is due, read per page of a sweep.
SWEEP_PAGE = 100

Clock = Callable[[], str]
Filter = Mapping[str, Any]


def utc_now() -> str:
    """The current time as an ISO 8601 UTC timestamp with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- workflows -------------------------------------------------------------


def create_workflow(
    storage: Storage,
    name: str,
    description: str = "",
    step_names: Sequence[Union[str, NewStep]] = (),
    clock: Clock = utc_now,
) -> Workflow:
    """Define a workflow, optionally with its first steps (names, or names with deadlines)."""
    return storage.create_workflow(name, description, step_names, clock())


def get_workflow(storage: Storage, workflow_id: int) -> Workflow:
    """The workflow with its steps in order."""
    return storage.get_workflow(workflow_id)


def append_step(
    storage: Storage, workflow_id: int, name: Union[str, NewStep], clock: Clock = utc_now
) -> Step:
    """Append a step after the workflow's last one."""
    return storage.append_step(workflow_id, name, clock())


# -- runs ------------------------------------------------------------------


def start_run(
    storage: Storage,
    workflow_id: int,
    title: str,
    requested_by: Optional[str] = None,
    clock: Clock = utc_now,
) -> Run:
    """Start a run of a workflow at its first step, on behalf of `requested_by`."""
    if workflow_id > MAX_ID:
        raise errors.workflow_not_found(workflow_id)
    workflow = storage.get_workflow(workflow_id)
    if not workflow.steps:
        raise errors.Conflict(
            f"Workflow {workflow_id} has no steps; append one before starting a run"
        )
    return storage.create_run(workflow, title, clock(), requested_by)


def get_run(storage: Storage, run_id: int) -> Run:
    """The run's state and its full history."""
    return storage.get_run(run_id)


def audit_run(storage: Storage, run_id: int) -> RunAudit:
    """The run's history as its hash chain, recomputed from the stored values."""
    return audit.audit_of(storage.get_run(run_id))


def approve(
    storage: Storage,
    run_id: int,
    actor: str,
    comment: str = "",
    expected_step_id: Optional[int] = None,
    clock: Clock = utc_now,
) -> Run:
    """Approve the current step: move to the next step, or complete the run."""
    return _decide(storage, run_id, APPROVE, actor, comment, expected_step_id, clock)


def reject(
    storage: Storage,
    run_id: int,
    actor: str,
    comment: str = "",
    expected_step_id: Optional[int] = None,
    clock: Clock = utc_now,
) -> Run:
    """Reject the current step: the run ends as rejected."""
    return _decide(storage, run_id, REJECT, actor, comment, expected_step_id, clock)


def _decide(
    storage: Storage,
    run_id: int,
    action: str,
    actor: str,
    comment: str,
    expected_step_id: Optional[int],
    clock: Clock,
) -> Run:
    """Record the decision on the step the run is at when it is written.

    A decision that loses the conditional write to another one re-reads the run
    and, unless the caller named the step it saw (expected_step_id), decides
    the step the run is at now, rechecking everything: losing an optimistic
    write is the service's business, not the caller's. Every lost write means
    another decision won, so DECISION_ATTEMPTS bounds a run's waiting deciders
    by its remaining steps; past it the answer is 503, and nothing is written.
    """
    for _ in range(DECISION_ATTEMPTS):
        run = storage.get_run(run_id)
        current = decision.step_to_decide(run, expected_step_id)
        next_step = (
            storage.next_step(run.workflow_id, current.step_order) if action == APPROVE else None
        )
        try:
            return storage.record_decision(
                run, decision.decide(action, actor, comment, next_step, clock())
            )
        except errors.StaleRun:
            if expected_step_id is not None:
                # The caller decided on what it saw: say where the run is now,
                # unless it is still there (a deadline's reminder or escalation
                # was written meanwhile), and then decide it again.
                decision.step_to_decide(storage.get_run(run_id), current.id)
    raise errors.Unavailable("Too many decisions on this run at once; retry shortly")


# -- deadlines -----------------------------------------------------------------


def sweep(storage: Storage, clock: Clock = utc_now, page: int = SWEEP_PAGE) -> int:
    """Apply every step deadline that has passed by `clock()` (chalicelib/deadlines.py);
    how many it applied. A run decided meanwhile is left to that decision."""
    now = clock()
    applied = 0
    while True:
        due = storage.due_runs(now, page)
        done = sum(_apply_deadline(storage, run_id, now) for run_id in due)
        applied += done
        if len(due) < page or not done:
            return applied


def _apply_deadline(storage: Storage, run_id: int, now: str) -> bool:
    """Apply the run's due deadline with the conditional write of a decision;
    False if none is due or another write won."""
    run = storage.get_run(run_id)
    action = deadlines.action_due(run, now)
    if action is None:
        return False  # decided meanwhile, or an index that lags the table
    try:
        if action == REJECT:
            storage.record_decision(run, deadlines.expiry(now))
        else:
            storage.record_deadline(run, now)
    except errors.StaleRun:
        return False  # a decision was recorded first: it stands
    return True


# -- lists -------------------------------------------------------------------


def list_workflows(storage: Storage, limit: int, cursor: Optional[str] = None) -> Page:
    """One page of workflows by id ascending."""
    after = _position(cursor, WORKFLOWS, {})
    return _page(storage.list_workflows(after, limit), WORKFLOWS, {})


def list_runs(
    storage: Storage,
    workflow_id: Optional[int],
    status: Optional[str],
    limit: int,
    cursor: Optional[str] = None,
) -> Page:
    """One page of runs newest first, of that workflow and status where given."""
    filters = {"workflow_id": workflow_id, "status": status}
    before = _position(cursor, RUNS, filters)
    if workflow_id is not None and workflow_id > MAX_ID:
        return Page((), None)  # no workflow has such an id
    return _page(storage.list_runs(workflow_id, status, before, limit), RUNS, filters)


def run_events(storage: Storage, run_id: int, limit: int, cursor: Optional[str] = None) -> Page:
    """One page of the run's events, oldest first, as they are delivered."""
    filters = {"run_id": run_id}
    after = _position(cursor, EVENTS, filters)
    found = storage.list_events(events.run_subject(run_id), after, limit)
    if not found.items and after is None:
        storage.get_run(run_id)  # NotFound, unless the run has no events yet
    return _page(found, EVENTS, filters, lambda event: event.sequence)


def _position(cursor: Optional[str], list_name: str, filters: Filter) -> Optional[int]:
    if cursor is None:
        return None
    # Imported here, as below: only list pages need cursors (and their secret).
    from chalicelib import cursors

    return cursors.position(cursor, list_name, filters)


def _page(
    found: Slice[Any],
    list_name: str,
    filters: Filter,
    position: Callable[[Any], int] = lambda item: int(item.id),
) -> Page:
    """The page of `found`, with a cursor that continues after its last item
    (at its `position` in the list: its id, or an event's sequence)."""
    from chalicelib import cursors

    more = found.more and found.items
    return Page(
        found.items, cursors.issue(list_name, filters, position(found.items[-1])) if more else None
    )
