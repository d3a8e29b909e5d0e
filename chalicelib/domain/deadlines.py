"""Step deadlines: which one is due, and what applying it records. Pure.

A step may have a deadline (models.Deadline): `seconds` after a run reaches
it, the sweeper (engine.sweep, on a schedule) applies its `on_deadline`:

    remind     step.reminded, once; the run keeps waiting
    escalate   step.escalated; the step's escalate_to principals may decide
               it too (Run.current_step_escalated_to), once
    reject     the run ends rejected by `system:deadline`: step.expired, run.rejected

Each is written with the conditional write of a decision, conditional on
the run being as the sweeper read it: a decision recorded meanwhile wins,
and the sweeper's write is refused (and the other way round).
"""

from __future__ import annotations

from typing import Optional

from chalicelib.domain.events import DEADLINE_ACTOR
from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.domain.models import Decision, Run, Step

EXPIRED_COMMENT = "The step's deadline passed"


def action_due(run: Run, now: str) -> Optional[OnDeadline]:
    """The deadline action due on `run` at `now` (ISO 8601 UTC): remind,
    escalate or reject; None when nothing is due."""
    step = run.current_step
    if run.status != RunStatus.IN_PROGRESS or step is None or step.deadline is None:
        return None
    if run.deadline_passed or run.current_step_due_at is None or run.current_step_due_at > now:
        return None
    return step.deadline.action


def expiry(at: str) -> Decision:
    """The rejection a passed `reject` deadline records."""
    return Decision(
        ActionKind.REJECT, DEADLINE_ACTOR, EXPIRED_COMMENT, RunStatus.REJECTED, None, at
    )


def step_due_at(step: Optional[Step], since: str) -> Optional[str]:
    """When `step`'s deadline passes if a run reaches it at `since` (ISO 8601
    UTC); None when it has no deadline."""
    if step is None or step.deadline is None:
        return None
    from datetime import datetime, timedelta  # only runs of steps with deadlines

    start = datetime.fromisoformat(since.replace("Z", "+00:00"))
    due = start + timedelta(seconds=step.deadline.seconds)
    return due.isoformat(timespec="milliseconds").replace("+00:00", "Z")
