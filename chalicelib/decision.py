"""What a decision does to a run, and who may make it: the rules, pure.

    in_progress --approve (quorum not met)--> in_progress at the same step
    in_progress --approve (more steps)------> in_progress at the next step
    in_progress --approve (last step)-------> completed
    in_progress --reject (any step)---------> rejected
    in_progress --cancel (any step)---------> cancelled

No storage and no clock: the engine reads the run (with its current step's
rules and its workflow's policy flags), asks these functions whether the caller
may decide and what follows, and records the answer with one conditional write
that holds only if the run is still as it was read (the adapters condition on
its history's head), so two approvals read at once cannot both count.
"""

from __future__ import annotations

from typing import Optional

from chalicelib import errors
from chalicelib.models import (
    APPROVE,
    CANCEL,
    CANCELLED,
    COMPLETED,
    IN_PROGRESS,
    REJECT,
    REJECTED,
    Decision,
    Run,
    Step,
)
from chalicelib.validation import is_blank

NOT_IN_PROGRESS = "Run is not in progress"


def step_to_decide(run: Run, expected_step_id: Optional[int] = None) -> Step:
    """The step a decision on `run` applies to; Conflict if the run has ended,
    StaleRun if it is not at `expected_step_id` (when the caller names one)."""
    if run.status != IN_PROGRESS or run.current_step is None:
        raise errors.Conflict(NOT_IN_PROGRESS)
    step = run.current_step
    if expected_step_id is not None and step.id != expected_step_id:
        raise errors.StaleRun(
            f"Run is at step {step.name!r} (id {step.id}), not at step {expected_step_id}",
            current_step_id=step.id,
        )
    return step


def check_decider(
    run: Run, action: str, actor: str, groups: frozenset[str], comment: str = ""
) -> None:
    """Forbidden unless `actor` (a member of `groups`) may `action` the run's
    current step under its rules; Unprocessable for a rejection without the
    reason its workflow requires; Conflict for an approval given twice."""
    step = run.current_step
    assert step is not None, "step_to_decide comes first"
    escalated_to = run.current_step_escalated_to
    if not step.admits(actor, groups, escalated_to):
        who = ", ".join((*step.approvers, *escalated_to))
        raise errors.Forbidden(f"{actor!r} may not decide step {step.name!r}: only {who} may")
    if not run.policy.allow_self_approval and actor == run.requested_by:
        raise errors.Forbidden(
            f"{actor!r} requested this run and may not approve or reject it: its workflow "
            "does not allow self-approval"
        )
    if action == APPROVE and run.policy.distinct_approvers and run.approved_another_step(actor):
        raise errors.Forbidden(
            f"{actor!r} already approved another step of this run: its workflow requires "
            "distinct approvers"
        )
    if action == REJECT and run.policy.reject_requires_comment and is_blank(comment):
        raise errors.Unprocessable("This workflow requires a comment that says why it is rejected")
    if action == APPROVE and actor in run.current_step_approved_by:
        raise errors.Conflict(f"{actor!r} already approved step {step.name!r} of this run")


def awaits(run: Run, actor: str, groups: frozenset[str]) -> bool:
    """Whether `run` waits for a decision `actor` may make now: the inbox's rule."""
    if run.status != IN_PROGRESS or run.current_step is None:
        return False
    try:
        check_decider(run, APPROVE, actor, groups)
    except (errors.Forbidden, errors.Conflict):
        return False
    return True


def check_canceller(run: Run, actor: str, admin: bool) -> None:
    """Conflict if the run has ended; Forbidden unless `actor` requested it, or
    nobody is named as its requester, or the caller is an administrator."""
    step_to_decide(run)
    if run.requested_by is not None and actor != run.requested_by and not admin:
        raise errors.Forbidden(
            f"Only the run's requester ({run.requested_by!r}) or an administrator may cancel it"
        )


def needs_next_step(run: Run, action: str) -> bool:
    """Whether `action` moves the run past its current step (so the step after
    it must be known): an approval that completes the quorum."""
    step = run.current_step
    assert step is not None
    return action == APPROVE and len(run.current_step_approved_by) + 1 >= step.required_approvals


def decide(
    run: Run, action: str, actor: str, comment: str, next_step: Optional[Step], at: str
) -> Decision:
    """The decision `action` by `actor` on the run's current step, and where it
    leads: `next_step` is the step after the current one (None after the last;
    read only where needs_next_step says so)."""
    if action == REJECT:
        return Decision(REJECT, actor, comment, REJECTED, None, at)
    if action == CANCEL:
        return Decision(CANCEL, actor, comment, CANCELLED, None, at)
    if action != APPROVE:
        raise ValueError(f"unknown action {action!r}")
    if not needs_next_step(run, action):
        approved_by = (*run.current_step_approved_by, actor)
        return Decision(APPROVE, actor, comment, IN_PROGRESS, run.current_step, at, approved_by)
    status = IN_PROGRESS if next_step is not None else COMPLETED
    return Decision(APPROVE, actor, comment, status, next_step, at)
