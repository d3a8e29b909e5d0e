"""The use cases of a workflow's life, over any storage (as chalicelib/engine.py's
are of defining it and of its runs): publish a new version of its definition,
read its versions, retire it and reinstate it. Runs keep the version they
started on (docs/versions.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

from chalicelib import engine
from chalicelib.domain import errors
from chalicelib.domain.models import (
    DEFAULT_MAX_RETURNS,
    DEFAULT_POLICY,
    Page,
    Policy,
    Run,
    Slice,
    StepRule,
    Workflow,
)
from chalicelib.domain.record import Record

if TYPE_CHECKING:
    from chalicelib.domain.changes import RunChange
    from chalicelib.domain.lifecycle import ActionKind
    from chalicelib.storage import Storage

VERSIONS = "versions"


class Definition(Record):
    """A whole definition of a workflow's version: what POST /workflows takes but its name."""

    description: str
    steps: Sequence[StepRule]
    policy: Policy = DEFAULT_POLICY
    input_schema: Optional[dict[str, Any]] = None
    max_returns: int = DEFAULT_MAX_RETURNS


def list_workflows(
    storage: Storage, limit: int, cursor: Optional[str] = None, retired: Optional[bool] = None
) -> Page[Workflow]:
    """One page of workflows by id ascending (engine.list_workflows); retired
    ones only, or those not retired, where `retired` says: read on, as the
    inbox does, until the page is full and it is known whether more follow."""
    if retired is None:
        return engine.list_workflows(storage, limit, cursor)
    filters = {"retired": retired}
    after = engine.cursor_position(cursor, engine.WORKFLOWS, filters)
    kept: list[Workflow] = []
    for _ in range(engine.INBOX_READS):
        found = storage.list_workflows(after, limit + 1 - len(kept))
        kept += [workflow for workflow in found.items if workflow.retired == retired]
        if len(kept) > limit:
            return engine.page_of(Slice(tuple(kept[:limit]), True), engine.WORKFLOWS, filters)
        if not found.more or not found.items:
            return Page(tuple(kept), None)
        after = found.items[-1].id
    return engine.page_of(Slice(tuple(kept), True, after), engine.WORKFLOWS, filters)


def publish_version(
    storage: Storage,
    workflow_id: int,
    definition: Definition,
    expected_version: Optional[int] = None,
    clock: engine.Clock = engine.utc_now,
) -> Workflow:
    """Publish `definition` as the workflow's next version; runs started from
    now on run on it, those in progress keep theirs. Conflict where the
    caller's `expected_version` is not the newest (a stale editor)."""
    from chalicelib.domain import versioning

    # Another publish that came first means reading it again: the next number
    # is then one more (or, for an editor that named the version it read, 409).
    def attempt(n: int) -> Workflow:
        if n:
            _back_off(n)
        workflow = storage.get_workflow(workflow_id)
        publish = versioning.publish_version(
            workflow,
            definition.description,
            definition.steps,
            definition.policy,
            clock(),
            definition.input_schema,
            definition.max_returns,
            expected_version,
        )
        return storage.publish_version(publish)

    crowded = errors.Unavailable("Too many versions are being published at once; retry shortly")
    return errors.until_written(engine.APPEND_ATTEMPTS, attempt, crowded)


def _back_off(attempt: int) -> None:
    """Wait a little, at random, before publishing again: publishers that lost
    to one another spread out rather than all losing again to the next."""
    import random
    import time

    time.sleep(random.uniform(0, 0.06 * min(attempt, 8)))


def get_workflow_version(storage: Storage, workflow_id: int, version: int) -> Workflow:
    """The workflow as it stands at `version`, with that version's steps."""
    return storage.get_workflow_version(workflow_id, version)


def list_versions(
    storage: Storage, workflow_id: int, limit: int, cursor: Optional[str] = None
) -> Page[Workflow]:
    """One page of the workflow's versions, oldest first."""
    filters = {"workflow_id": workflow_id}
    after = engine.cursor_position(cursor, VERSIONS, filters)
    found = storage.list_versions(workflow_id, after, limit)
    return engine.page_of(found, VERSIONS, filters, lambda workflow: workflow.version)


def set_retired(
    storage: Storage, workflow_id: int, retired: bool, clock: engine.Clock = engine.utc_now
) -> Workflow:
    """Retire the workflow (no new run starts; runs in progress go on), or
    reinstate it; Conflict where it is so already."""
    from chalicelib.domain import versioning

    def attempt(_: int) -> Workflow:
        workflow = storage.get_workflow(workflow_id)
        return storage.set_retired(versioning.retirement(workflow, retired, clock()))

    crowded = errors.Unavailable("Too many changes of this workflow at once; retry shortly")
    return errors.until_written(engine.DECISION_ATTEMPTS, attempt, crowded)


# -- an administrator's changes of a run ---------------------------------------------


def reassign(
    storage: Storage,
    run_id: int,
    actor: str,
    approvers: Sequence[str],
    comment: str,
    admin: bool,
    clock: engine.Clock = engine.utc_now,
    history: bool = True,
) -> Run:
    """The run's current step awaits `approvers` from now on (versioning.reassign):
    an administrator's change, recorded in its history."""
    from chalicelib.domain import versioning

    def change(run: Run) -> RunChange:
        return versioning.reassign(run, approvers, actor, comment, clock())

    from chalicelib.domain.lifecycle import ActionKind

    return _administered(storage, run_id, ActionKind.REASSIGN, actor, admin, change, history)


def move(
    storage: Storage,
    run_id: int,
    actor: str,
    to_version: int,
    step: str,
    comment: str,
    admin: bool,
    clock: engine.Clock = engine.utc_now,
    history: bool = True,
) -> Run:
    """The run continues at `step` of version `to_version` of its workflow
    (versioning.move): an administrator's change, recorded in its history;
    Conflict for a version that does not exist."""
    from chalicelib.domain import versioning

    def change(run: Run) -> RunChange:
        try:
            target = storage.get_version(run.workflow_id, to_version)
        except errors.NotFound as exc:
            raise errors.Conflict(
                f"Workflow {run.workflow_id} has no version {to_version} to move the run to"
            ) from exc
        return versioning.move(run, target, step, actor, comment, clock())

    from chalicelib.domain.lifecycle import ActionKind

    return _administered(storage, run_id, ActionKind.MOVE, actor, admin, change, history)


def _administered(
    storage: Storage,
    run_id: int,
    action: ActionKind,
    actor: str,
    admin: bool,
    change: Callable[[Run], RunChange],
    history: bool,
) -> Run:
    """Record `change` of the run as read, if `actor` may `action` it
    (decision.capacity), on the conditional write of a decision."""
    from chalicelib.domain import decision

    def attempt(_: int) -> Run:
        stored = storage.get_run(run_id, history)
        run = engine.as_proven(storage, stored)
        refused = decision.refusal(run, action, actor, frozenset(), admin)
        if refused is not None:
            raise refused.error()
        return storage.record_change(decision.against(change(run), stored))

    crowded = errors.Unavailable("Too many changes of this run at once; retry shortly")
    return errors.until_written(engine.DECISION_ATTEMPTS, attempt, crowded)
