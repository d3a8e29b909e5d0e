"""Records written straight through a storage adapter, as the engine would."""

from __future__ import annotations

from chalicelib.domain.models import (
    APPROVE,
    COMPLETED,
    IN_PROGRESS,
    REJECT,
    REJECTED,
    Decision,
    Run,
    StepRule,
    Workflow,
)
from chalicelib.storage import Storage

NOW = "2030-01-02T03:04:05.000Z"
LATER = "2030-01-02T03:04:06.000Z"


def rules(*names: str) -> list[StepRule]:
    """Steps that anyone may decide with one approval, as the storage takes them."""
    return [StepRule(name) for name in names]


def workflow_with_steps(storage: Storage, *names: str) -> Workflow:
    return storage.create_workflow("Purchase", "", rules(*names), NOW)


def decide(storage: Storage, run: Run, action: str = APPROVE, actor: str = "alice") -> Run:
    assert run.current_step is not None
    if action == REJECT:
        return storage.record_decision(run, Decision(REJECT, actor, "", REJECTED, None, LATER))
    following = storage.next_step(run.workflow_id, run.current_step.step_order)
    status = IN_PROGRESS if following else COMPLETED
    return storage.record_decision(run, Decision(APPROVE, actor, "", status, following, LATER))
