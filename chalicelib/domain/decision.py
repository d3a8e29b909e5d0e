"""What a decision does to a run, and who may make it: the rules, pure.

    in_progress --approve (quorum not met)--> in_progress at the same step
    in_progress --approve (more steps)------> in_progress at the next step
    in_progress --approve (last step)-------> completed
    in_progress --reject (any step)---------> rejected
    in_progress --cancel (any step)---------> cancelled

No storage and no clock: the engine reads the run (with its current step's
rules and its workflow's policy flags), asks these functions whether the caller
may decide and what follows, and chalicelib/domain/transitions.py turns the
answer into the change the storage writes, with one conditional write that
holds only if the run is still as it was read, so two approvals read at once
cannot both count.

Who awaits a run is decided here once, in two parts: `awaited_by` names the
principals whose inboxes hold a run waiting at its step (the storage keeps
those keys and reads by them), and `awaits` is the rule that has the last word
on each run read: the decision rule itself, so the inbox and the decision
routes cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from chalicelib.domain import audit, errors
from chalicelib.domain.models import (
    ANYONE,
    APPROVE,
    CANCEL,
    CANCELLED,
    COMPLETED,
    GROUP_PREFIX,
    IN_PROGRESS,
    REJECT,
    REJECTED,
    USER_PREFIX,
    Action,
    Decision,
    Refusal,
    Run,
    Step,
)
from chalicelib.domain.names import canonical, canonical_principal, is_blank, same

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


def admits(
    step: Step, actor: str, groups: frozenset[str], escalated_to: tuple[str, ...] = ()
) -> bool:
    """Whether `actor`, a member of `groups`, may decide `step` (its approvers,
    and those it was escalated to once its deadline passed), names compared
    by their canonical keys."""
    if not step.approvers:
        return True
    principals = {canonical_principal(principal) for principal in (*step.approvers, *escalated_to)}
    return USER_PREFIX + canonical(actor) in principals or any(
        GROUP_PREFIX + canonical(group) in principals for group in groups
    )


def approved_another_step(run: Run, actor: str) -> bool:
    """Whether `actor` approved a step of `run` other than the current one
    (one visit per step: approving the current one twice is refused anyway)."""
    return approved(run.approvers, actor) and not approved(run.current_step_approved_by, actor)


def approved(names: Sequence[str], actor: str) -> bool:
    """Whether `actor` is one of `names`, as one person (names.canonical)."""
    key = canonical(actor)
    return any(canonical(name) == key for name in names)


RUN_NOT_IN_PROGRESS = "run_not_in_progress"
NOT_AN_APPROVER = "not_an_approver"
REQUESTER_MAY_NOT_DECIDE = "requester_may_not_decide"
ALREADY_APPROVED_THIS_STEP = "already_approved_this_step"
APPROVED_ANOTHER_STEP = "approved_another_step"
NOT_THE_REQUESTER = "not_the_requester"
REASONS = (
    RUN_NOT_IN_PROGRESS,
    NOT_AN_APPROVER,
    REQUESTER_MAY_NOT_DECIDE,
    ALREADY_APPROVED_THIS_STEP,
    APPROVED_ANOTHER_STEP,
    NOT_THE_REQUESTER,
)
# What GET /runs/{id}/permissions answers for, in its order.
ACTIONS = (APPROVE, REJECT, CANCEL)


def refusal(
    run: Run, action: str, actor: str, groups: frozenset[str], admin: bool = False
) -> Optional[Refusal]:
    """Why `actor` (a member of `groups`, an administrator or not) may not
    `action` the run now under its rules; None if they may. The one rule the
    decision routes, the inbox and the permissions answer all apply."""
    step = run.current_step
    if run.status != IN_PROGRESS or step is None:
        return Refusal(RUN_NOT_IN_PROGRESS, NOT_IN_PROGRESS, conflict=True)
    if action == CANCEL:
        if run.requested_by is not None and not same(actor, run.requested_by) and not admin:
            return Refusal(
                NOT_THE_REQUESTER,
                f"Only the run's requester ({run.requested_by!r}) or an administrator may "
                "cancel it",
            )
        return None
    escalated_to = run.current_step_escalated_to
    if not admits(step, actor, groups, escalated_to):
        who = ", ".join((*step.approvers, *escalated_to))
        return Refusal(
            NOT_AN_APPROVER, f"{actor!r} may not decide step {step.name!r}: only {who} may"
        )
    if not run.policy.allow_self_approval and same(actor, run.requested_by):
        return Refusal(
            REQUESTER_MAY_NOT_DECIDE,
            f"{actor!r} requested this run and may not approve or reject it: its workflow "
            "does not allow self-approval",
        )
    if action != APPROVE:
        return None
    if run.policy.distinct_approvers and approved_another_step(run, actor):
        return Refusal(
            APPROVED_ANOTHER_STEP,
            f"{actor!r} already approved another step of this run: its workflow requires "
            "distinct approvers",
        )
    if approved(run.current_step_approved_by, actor):
        return Refusal(
            ALREADY_APPROVED_THIS_STEP,
            f"{actor!r} already approved step {step.name!r} of this run",
            conflict=True,
        )
    return None


def check_decider(
    run: Run, action: str, actor: str, groups: frozenset[str], comment: str = ""
) -> None:
    """Forbidden unless `actor` (a member of `groups`) may `action` the run's
    current step under its rules; Unprocessable for a rejection without the
    reason its workflow requires; Conflict for an approval given twice."""
    assert run.current_step is not None, "step_to_decide comes first"
    refused = refusal(run, action, actor, groups)
    if refused is not None:
        raise refused.error()
    if action == REJECT and run.policy.reject_requires_comment and is_blank(comment):
        raise errors.Unprocessable("This workflow requires a comment that says why it is rejected")


def awaits(run: Run, actor: str, groups: frozenset[str]) -> bool:
    """Whether `run` waits for a decision `actor` may make now: the inbox's rule."""
    return refusal(run, APPROVE, actor, groups) is None


def awaited_by(run: Run) -> tuple[str, ...]:
    """The principals whose inboxes hold `run` while it waits at its current
    step: its approvers and those its deadline escalated it to, or ANYONE for a
    step that names none; nobody once it has ended. Who among them may decide
    it now is `awaits`'s to say."""
    step = run.current_step
    if run.status != IN_PROGRESS or step is None:
        return ()
    if not step.approvers:
        return (ANYONE,)
    principals = (*step.approvers, *run.current_step_escalated_to)
    return tuple(dict.fromkeys(canonical_principal(principal) for principal in principals))


def inbox_keys(actor: str, groups: frozenset[str]) -> tuple[str, ...]:
    """The inbox keys whose runs may wait for `actor`, a member of `groups`: the
    user's own, each group's and ANYONE's, in that order, by canonical name."""
    named = sorted({canonical(group) for group in groups})
    return (USER_PREFIX + canonical(actor), *(GROUP_PREFIX + group for group in named), ANYONE)


def proving_actions(run: Run) -> int:
    """How many of the run's last actions prove the approvals its current step
    holds (`proven`): one more than the most that can precede its quorum."""
    step = run.current_step
    return step.required_approvals if step is not None and step.required_approvals > 1 else 0


def proven(run: Run, last: Sequence[Action]) -> Run:
    """The run with the approvals of its current step as its chained history
    holds them, not as its stored state says: `last` are its last actions in
    history order (proving_actions of them). Only approvals whose entries
    chain to the stored head count (audit.tail_holds): an approval written
    into the state alone, or an action edited, counts for nothing. History
    from before the chain (no head yet) is taken as stored."""
    step = run.current_step
    if step is None:
        return run
    approved: list[str] = []
    if run.head_hash is None or audit.tail_holds(run, last):
        # The first of `last` proves the others; it counts only as the history's first.
        countable = last if len(last) == run.history_length else last[1:]
        for action in reversed(countable):
            if action.action != APPROVE or action.step_id != step.id:
                break
            approved.append(action.actor)
    return run._replace(current_step_approved_by=tuple(reversed(approved)))


def check_canceller(run: Run, actor: str, admin: bool) -> None:
    """Conflict if the run has ended; Forbidden unless `actor` requested it, or
    nobody is named as its requester, or the caller is an administrator."""
    step_to_decide(run)
    refused = refusal(run, CANCEL, actor, frozenset(), admin)
    if refused is not None:
        raise refused.error()


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
