"""Records written straight through a storage adapter, as the engine would:
each change computed by the rules (chalicelib/domain/transitions.py), then
handed to the storage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from chalicelib.domain import errors, transitions
from chalicelib.domain.lifecycle import ActionKind
from chalicelib.domain.models import (
    DEFAULT_POLICY,
    Decision,
    Pending,
    Policy,
    Run,
    Step,
    StepRule,
    Workflow,
)
from chalicelib.storage import Storage
from chalicelib.storage.protocols import Outbox

NOW = "2030-01-02T03:04:05.000Z"
LATER = "2030-01-02T03:04:06.000Z"


def rules(*names: str) -> list[StepRule]:
    """Steps that anyone may decide with one approval, as the storage takes them."""
    return [StepRule(name) for name in names]


def stored_workflow(
    storage: Storage,
    name: str,
    description: str,
    steps: Sequence[StepRule],
    now: str,
    policy: Policy = DEFAULT_POLICY,
) -> Workflow:
    """The workflow `storage` stores for this definition."""
    return storage.create_workflow(
        transitions.define_workflow(name, description, steps, policy, now)
    )


def stored_step(storage: Storage, workflow_id: int, step: StepRule, now: str) -> Step:
    """The step `storage` appends to the workflow as read now (to one that does
    not exist, as if it had no steps: the storage answers NotFound)."""
    try:
        workflow = storage.get_workflow(workflow_id)
    except errors.NotFound:
        workflow = Workflow(workflow_id, "gone", "", now, ())
    return storage.append_step(transitions.append_step(workflow, step, now))


def stored_run(
    storage: Storage, workflow: Workflow, title: str, now: str, requested_by: Optional[str] = None
) -> Run:
    """The run of `workflow` that `storage` starts."""
    return storage.create_run(transitions.start_run(workflow, title, requested_by, now))


def workflow_with_steps(storage: Storage, *names: str) -> Workflow:
    return stored_workflow(storage, "Purchase", "", rules(*names), NOW)


def decide(
    storage: Storage, run: Run, action: ActionKind = ActionKind.APPROVE, actor: str = "alice"
) -> Run:
    """`action` by `actor` on the run as read, with no rule checked (as the
    engine checks them): what the storage writes of it."""
    assert run.current_step is not None
    following = (
        storage.steps_after(run.workflow_id, run.current_step.step_order)
        if action == ActionKind.APPROVE
        else ()
    )
    return storage.record_change(transitions.decide(run, action, actor, "", following, LATER))


def record(storage: Storage, run: Run, decision: Decision) -> Run:
    """`decision` on the run as read, as the storage writes it."""
    following = () if decision.next_step is None else (decision.next_step,)
    change = transitions.decide(
        run, decision.action, decision.actor, decision.comment, following, decision.at
    )
    return storage.record_change(change)


def first_pending(storage: Outbox, subject: str) -> Optional[Pending]:
    """The subject's first event not delivered yet: the head of its next batch."""
    batch = storage.pending_batch(subject)
    return batch[0] if batch else None
