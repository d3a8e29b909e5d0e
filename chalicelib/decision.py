"""What an approval or a rejection does to a run: the state machine, pure.

    in_progress --approve (more steps)--> in_progress at the next step
    in_progress --approve (last step)---> completed
    in_progress --reject (any step)-----> rejected

No storage and no clock: the engine reads the run and the step after the
current one, asks these functions what follows, and records the answer with
one conditional write that holds only if the run is still where it was read.
"""

from __future__ import annotations

from typing import Optional

from chalicelib import errors
from chalicelib.models import APPROVE, COMPLETED, IN_PROGRESS, REJECT, REJECTED, Decision, Run, Step


def step_to_decide(run: Run, expected_step_id: Optional[int] = None) -> Step:
    """The step a decision on `run` applies to; Conflict if the run has ended,
    StaleRun if it is not at `expected_step_id` (when the caller names one)."""
    if run.status != IN_PROGRESS or run.current_step is None:
        raise errors.Conflict("Run is not in progress")
    step = run.current_step
    if expected_step_id is not None and step.id != expected_step_id:
        raise errors.StaleRun(
            f"Run is at step {step.name!r} (id {step.id}), not at step {expected_step_id}",
            current_step_id=step.id,
        )
    return step


def decide(action: str, actor: str, comment: str, next_step: Optional[Step], at: str) -> Decision:
    """The decision `action` by `actor`, and where it leads: to `next_step` (the
    step after the current one, None after the last) or to the run's end."""
    if action == REJECT:
        return Decision(REJECT, actor, comment, REJECTED, None, at)
    if action != APPROVE:
        raise ValueError(f"unknown action {action!r}")
    status = IN_PROGRESS if next_step is not None else COMPLETED
    return Decision(APPROVE, actor, comment, status, next_step, at)
