"""The use cases of approval workflows, over any storage.

Every function takes the storage and plain, already validated values
(chalicelib/validation.py turns requests into those), and returns models or
raises a domain error from `errors`. No SQL, no boto3, no HTTP; the state
machine itself is chalicelib/decision.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Optional

from chalicelib import audit, decision, errors
from chalicelib.models import APPROVE, REJECT, Page, Run, RunAudit, Slice, Step, Workflow
from chalicelib.storage import Storage
from chalicelib.validation import MAX_ID

WORKFLOWS = "workflows"
# Attempts of one decision that keeps losing its conditional write (see _decide).
DECISION_ATTEMPTS = 10
RUNS = "runs"

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
    step_names: Sequence[str] = (),
    clock: Clock = utc_now,
) -> Workflow:
    """Define a workflow, optionally with its first steps."""
    return storage.create_workflow(name, description, step_names, clock())


def get_workflow(storage: Storage, workflow_id: int) -> Workflow:
    """The workflow with its steps in order."""
    return storage.get_workflow(workflow_id)


def append_step(storage: Storage, workflow_id: int, name: str) -> Step:
    """Append a step after the workflow's last one."""
    return storage.append_step(workflow_id, name)


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
    and, unless the caller named the step it saw (expected_step_id) and the run
    has left it, decides the step the run is at now, rechecking everything:
    losing an optimistic write is the service's business, not the caller's.
    Every lost write means another decision (or an append to the workflow) won,
    so DECISION_ATTEMPTS bounds a run's waiting deciders by its remaining steps;
    past it the answer is 503, and nothing is written.
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
                # The caller decided on what it saw; say where the run is now,
                # unless it is still there (what changed was not the run's step:
                # a step appended after it, say), and decide again.
                decision.step_to_decide(storage.get_run(run_id), current.id)
    raise errors.Unavailable("Too many decisions on this run at once; retry shortly")


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


def _position(cursor: Optional[str], list_name: str, filters: Filter) -> Optional[int]:
    if cursor is None:
        return None
    # Imported here, as below: only list pages need cursors (and their secret).
    from chalicelib import cursors

    return cursors.position(cursor, list_name, filters)


def _page(found: Slice[Any], list_name: str, filters: Filter) -> Page:
    """The page of `found`, with a cursor that continues after its last item."""
    from chalicelib import cursors

    position: Optional[int] = found.position
    if position is None and found.items:
        position = found.items[-1].id
    if not found.more or position is None:
        return Page(found.items, None)
    return Page(found.items, cursors.issue(list_name, filters, position))
