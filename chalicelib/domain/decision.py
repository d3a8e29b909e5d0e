"""What a decision does to a run, and who may make it: the rules, pure.

    in_progress --approve (quorum not met)--> in_progress at the same step
    in_progress --approve (more steps)------> in_progress at the next step
    in_progress --approve (last step)-------> completed
    in_progress --reject (any step)---------> rejected
    in_progress --cancel (any step)---------> cancelled
    in_progress --return (any step)---------> returned: its round's approvals stop counting
    returned ----resubmit-------------------> in_progress at the first step, the next round
    returned ----cancel---------------------> cancelled

A decision is made by its actor for themselves, or for a delegator whose
rights a delegation lends them (chalicelib/domain/models.py's Delegation): the
rules then hold over both people, each counted once.

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
from typing import Optional, assert_never

from chalicelib.domain import audit, errors
from chalicelib.domain.changes import RunChange
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import (
    ANYONE,
    GROUP_PREFIX,
    USER_PREFIX,
    Action,
    Decision,
    Delegation,
    Refusal,
    Run,
    Step,
)
from chalicelib.domain.names import canonical, canonical_principal, is_blank, same
from chalicelib.domain.record import Record

NOT_IN_PROGRESS = "Run is not in progress"
IS_RETURNED = "Run is returned for changes"


def step_to_decide(
    run: Run, expected_step_id: Optional[int] = None, expected_round: Optional[int] = None
) -> Step:
    """The step a decision on `run` applies to; Conflict if the run has ended
    or is returned for changes, StaleRun if it is not in `expected_round` or
    not at `expected_step_id` (where the caller names them: a page of an
    earlier round names the same step ids)."""
    refused = _waiting_refusal(run)
    if refused is not None:
        raise refused.error()
    step = run.current_step
    assert step is not None
    if expected_round is not None and run.round != expected_round:
        raise errors.StaleRun(
            f"Run is in round {run.round}, not in round {expected_round}",
            current_step_id=step.id,
        )
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


def approved_another_step(run: Run, person: str) -> bool:
    """Whether `person` approved a step of `run` in its round other than the
    current one, as themselves or for someone (approving the current one
    twice is refused anyway)."""
    return approved(run.approvers, person) and not approved(seated(run), person)


def seated(run: Run) -> tuple[str, ...]:
    """Everyone who fills a seat of the current step's quorum: who approved
    it, and for whom."""
    return (*run.current_step_approved_by, *filter(None, run.current_step_on_behalf_of))


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
RUN_RETURNED = "run_returned"
RUN_NOT_RETURNED = "run_not_returned"
RETURNS_EXHAUSTED = "returns_exhausted"
DELEGATION_NOT_ACTIVE = "delegation_not_active"
NOT_AN_ADMINISTRATOR = "not_an_administrator"
REASONS = (
    RUN_NOT_IN_PROGRESS,
    NOT_AN_APPROVER,
    REQUESTER_MAY_NOT_DECIDE,
    ALREADY_APPROVED_THIS_STEP,
    APPROVED_ANOTHER_STEP,
    NOT_THE_REQUESTER,
    RUN_RETURNED,
    RUN_NOT_RETURNED,
    RETURNS_EXHAUSTED,
    DELEGATION_NOT_ACTIVE,
    NOT_AN_ADMINISTRATOR,
)


class Capacity(Record):
    """In what capacity a caller may act: for themselves (on_behalf_of None)
    or for a delegator; or why they may not (refused)."""

    refused: Optional[Refusal]
    on_behalf_of: Optional[str] = None


def refusal(
    run: Run,
    action: ActionKind,
    actor: str,
    groups: frozenset[str],
    admin: bool = False,
    delegations: Sequence[Delegation] = (),
    on_behalf_of: Optional[str] = None,
    at: str = "",
) -> Optional[Refusal]:
    """Why `actor` (a member of `groups`, an administrator or not, holding
    `delegations`) may not `action` the run now under its rules; None if they
    may. The one rule the decision routes, the inbox and the permissions
    answer all apply."""
    return capacity(run, action, actor, groups, admin, delegations, on_behalf_of, at).refused


def capacity(
    run: Run,
    action: ActionKind,
    actor: str,
    groups: frozenset[str],
    admin: bool = False,
    delegations: Sequence[Delegation] = (),
    on_behalf_of: Optional[str] = None,
    at: str = "",
) -> Capacity:
    """Whether and for whom `actor` may `action` the run now: for themselves
    where they may, else for the first delegator (by name) of `delegations`
    active at `at` whose rights allow it; or, where the caller names
    `on_behalf_of`, for that delegator only. A delegated right is the
    delegator's own right as a named user (their groups are the caller's to
    know only): it adds rights and removes none, and is not lent again."""
    match action:
        case ActionKind.RESUBMIT:
            return Capacity(_resubmit_refusal(run, actor, admin))
        case ActionKind.CANCEL:
            return Capacity(_cancel_refusal(run, actor, admin))
        case ActionKind.APPROVE | ActionKind.REJECT | ActionKind.RETURN:
            return _deciders_capacity(run, action, actor, groups, delegations, on_behalf_of, at)
        case ActionKind.REASSIGN | ActionKind.MOVE:
            return Capacity(_waiting_refusal(run) or _administrators_refusal(admin))
        case ActionKind.SKIP:
            raise ValueError("a skip is the service's, no caller's")
        case _:
            assert_never(action)


def _deciders_capacity(
    run: Run,
    action: ActionKind,
    actor: str,
    groups: frozenset[str],
    delegations: Sequence[Delegation],
    on_behalf_of: Optional[str],
    at: str,
) -> Capacity:
    """capacity for a decision of the current step, by its approvers' rights."""
    state = _state_refusal(run, action)
    if state is not None:
        return Capacity(state)
    own = _person_refusal(run, action, actor, groups, None)
    if on_behalf_of is None:
        if own is None:
            return Capacity(None)
        delegators = sorted({d.delegator for d in _lending(run, delegations, at)}, key=canonical)
        lent = [(d, _person_refusal(run, action, actor, frozenset(), d)) for d in delegators]
        for delegator, refused in lent:
            if refused is None:
                return Capacity(None, delegator)
        # Not an approver themselves, but for a delegator: why not for them says more.
        held = [refused for _, refused in lent if refused and refused.code != NOT_AN_APPROVER]
        return Capacity(held[0] if held and own.code == NOT_AN_APPROVER else own)
    if not any(same(d.delegator, on_behalf_of) for d in _lending(run, delegations, at)):
        return Capacity(
            Refusal(
                DELEGATION_NOT_ACTIVE,
                f"{actor!r} holds no delegation from {on_behalf_of!r} active now for this "
                "run's workflow",
            )
        )
    return Capacity(_person_refusal(run, action, actor, frozenset(), on_behalf_of), on_behalf_of)


def _lending(run: Run, delegations: Sequence[Delegation], at: str) -> list[Delegation]:
    return [d for d in delegations if d.active_at(at) and d.covers(run.workflow_id)]


def decidable(run: Run) -> bool:
    """Whether the run waits for a decision of its current step."""
    return _waiting_refusal(run) is None


def _waiting_refusal(run: Run) -> Optional[Refusal]:
    """Why the run waits for no decision of a step now (None: it waits for one)."""
    match run.status:
        case RunStatus.IN_PROGRESS if run.current_step is not None:
            return None
        case RunStatus.RETURNED:
            return Refusal(RUN_RETURNED, IS_RETURNED, conflict=True)
        case RunStatus.IN_PROGRESS | RunStatus.COMPLETED | RunStatus.REJECTED | RunStatus.CANCELLED:
            return Refusal(RUN_NOT_IN_PROGRESS, NOT_IN_PROGRESS, conflict=True)
        case _:
            assert_never(run.status)


def _state_refusal(run: Run, action: ActionKind) -> Optional[Refusal]:
    """Why the run's state admits no decision of its current step now."""
    waiting = _waiting_refusal(run)
    if waiting is not None:
        return waiting
    if action == ActionKind.RETURN and returns_made(run) >= run.max_returns:
        return Refusal(
            RETURNS_EXHAUSTED,
            f"Run was sent back for changes {returns_made(run)} times, as often as its "
            f"workflow allows ({run.max_returns})",
            conflict=True,
        )
    return None


def returns_made(run: Run) -> int:
    """How many times the run was sent back: one per round after the first,
    and the one it is returned for now."""
    return run.round - 1 + (run.status == RunStatus.RETURNED)


def still_eligible(approvers: Sequence[str], person: str) -> bool:
    """Whether an approval by (or for) `person` stays counted once its step
    awaits `approvers`: a list that names nobody (anyone may decide), or names
    the person as a user (the groups they had when they approved are not kept)."""
    return not approvers or any(
        approver.startswith(USER_PREFIX) and same(approver[len(USER_PREFIX) :], person)
        for approver in approvers
    )


def _administrators_refusal(admin: bool) -> Optional[Refusal]:
    """Reassign, move: an administrator's (in jwt mode, WORKFLOW_ADMIN_GROUP's)."""
    if admin:
        return None
    return Refusal(NOT_AN_ADMINISTRATOR, "Only an administrator may reassign or move a run")


def _cancel_refusal(run: Run, actor: str, admin: bool) -> Optional[Refusal]:
    if run.status not in (RunStatus.IN_PROGRESS, RunStatus.RETURNED):
        return Refusal(RUN_NOT_IN_PROGRESS, NOT_IN_PROGRESS, conflict=True)
    if run.requested_by is not None and not same(actor, run.requested_by) and not admin:
        return Refusal(
            NOT_THE_REQUESTER,
            f"Only the run's requester ({run.requested_by!r}) or an administrator may cancel it",
        )
    return None


def _resubmit_refusal(run: Run, actor: str, admin: bool) -> Optional[Refusal]:
    if run.status != RunStatus.RETURNED:
        return Refusal(RUN_NOT_RETURNED, "Run is not returned for changes", conflict=True)
    if run.requested_by is not None and not same(actor, run.requested_by) and not admin:
        return Refusal(
            NOT_THE_REQUESTER,
            f"Only the run's requester ({run.requested_by!r}) or an administrator may resubmit it",
        )
    return None


def _person_refusal(
    run: Run, action: ActionKind, actor: str, groups: frozenset[str], delegator: Optional[str]
) -> Optional[Refusal]:
    """Why `actor` may not `action` the current step for `delegator` (None:
    for themselves, with `groups`), every human counted once."""
    step = run.current_step
    assert step is not None
    escalated_to = run.current_step_escalated_to
    holder = delegator if delegator is not None else actor
    if not admits(step, holder, groups, escalated_to):
        who = ", ".join((*step.approvers, *escalated_to))
        whose = f"{actor!r} for {delegator!r}" if delegator is not None else repr(actor)
        return Refusal(
            NOT_AN_APPROVER, f"{whose} may not decide step {step.name!r}: only {who} may"
        )
    people = (actor,) if delegator is None else (actor, delegator)
    if not run.policy.allow_self_approval and any(same(p, run.requested_by) for p in people):
        if same(actor, run.requested_by):
            why = f"{actor!r} requested this run and may not approve or reject it"
        else:
            why = f"{actor!r} may not decide for {delegator!r}, who requested this run"
        return Refusal(
            REQUESTER_MAY_NOT_DECIDE, f"{why}: its workflow does not allow self-approval"
        )
    if action != ActionKind.APPROVE:
        return None
    if run.policy.distinct_approvers:
        for person in people:
            if approved_another_step(run, person):
                return Refusal(
                    APPROVED_ANOTHER_STEP,
                    f"{person!r} already approved another step of this run: its workflow "
                    "requires distinct approvers",
                )
    for person in people:
        if approved(seated(run), person):
            return Refusal(
                ALREADY_APPROVED_THIS_STEP,
                f"{person!r} already approved step {step.name!r} of this run",
                conflict=True,
            )
    return None


def check_decider(
    run: Run,
    action: ActionKind,
    actor: str,
    groups: frozenset[str],
    comment: str = "",
    delegations: Sequence[Delegation] = (),
    on_behalf_of: Optional[str] = None,
    at: str = "",
    held: Optional[Capacity] = None,
) -> Optional[str]:
    """For whom `actor` (a member of `groups`, holding `delegations`) may
    `action` the run's current step under its rules (None: themselves), or
    Forbidden; Unprocessable for a rejection without the reason its workflow
    requires and a return without one; Conflict for an approval given twice.
    `held` is their capacity where the caller already found it (`capacity`
    of the same run, action and caller)."""
    assert run.current_step is not None, "step_to_decide comes first"
    if held is None:
        held = capacity(run, action, actor, groups, False, delegations, on_behalf_of, at)
    if held.refused is not None:
        raise held.refused.error()
    if action == ActionKind.REJECT and run.policy.reject_requires_comment and is_blank(comment):
        raise errors.Unprocessable("This workflow requires a comment that says why it is rejected")
    return held.on_behalf_of


def awaits(
    run: Run,
    actor: str,
    groups: frozenset[str],
    delegations: Sequence[Delegation] = (),
    at: str = "",
) -> bool:
    """Whether `run` waits for a decision `actor` may make now (for themselves
    or a delegator: capacity says which): the inbox's rule."""
    approve = ActionKind.APPROVE
    return capacity(run, approve, actor, groups, False, delegations, None, at).refused is None


def awaited_by(run: Run) -> tuple[str, ...]:
    """The principals whose inboxes hold `run` while it waits at its current
    step: its approvers and those its deadline escalated it to, or ANYONE for a
    step that names none; nobody once it has ended. Who among them may decide
    it now is `awaits`'s to say."""
    step = run.current_step
    if run.status != RunStatus.IN_PROGRESS or step is None:
        return ()
    if not step.approvers:
        return (ANYONE,)
    principals = (*step.approvers, *run.current_step_escalated_to)
    return tuple(dict.fromkeys(canonical_principal(principal) for principal in principals))


def inbox_keys(
    actor: str, groups: frozenset[str], delegators: Sequence[str] = ()
) -> tuple[str, ...]:
    """The inbox keys whose runs may wait for `actor`, a member of `groups`
    holding delegations from `delegators`: the user's own, each group's and
    ANYONE's, then each delegator's own, by canonical name."""
    named = sorted({canonical(group) for group in groups})
    lent = sorted({canonical(name) for name in delegators} - {canonical(actor)})
    return (
        USER_PREFIX + canonical(actor),
        *(GROUP_PREFIX + group for group in named),
        ANYONE,
        *(USER_PREFIX + name for name in lent),
    )


# The last actions a decision reads where it reads the whole history: the
# last one's values are proven by its hash, which the one before gives.
PROVING_TAIL = 2
# Reassigns of a step read with the approvals they keep (a step reassigned more
# often between its approvals keeps fewer of those before: never more).
PROVING_REASSIGNS = 2


def proving_actions(run: Run) -> int:
    """How many of the run's last actions prove the approvals its current step
    holds (`proven`), where the history is not read whole: one more than the
    most that can precede its quorum."""
    step = run.current_step
    if step is None or step.required_approvals == 1:
        return 0
    return step.required_approvals + PROVING_REASSIGNS


def proven(run: Run, last: Sequence[Action]) -> Run:
    """The run with the approvals of its current step (by whom, for whom) and
    its round as its chained history holds them, not as its stored state
    says: `last` are its last actions in history order (proving_actions of
    them, or PROVING_TAIL and more where the history was read). Only actions
    whose entries chain to the stored head count (audit.tail_holds): an
    approval written into the state alone, or an action edited, counts for
    nothing, and so does every approval of a run whose head was removed; a
    round set by hand is the last action's (every action is recorded in the
    round the run is in, a resubmit in the one it starts). Where no action is
    proven (none read, or the tail does not hold), the round is the stored one."""
    step = run.current_step
    if step is None:
        return run
    countable: Sequence[Action] = ()
    if audit.tail_holds(run, last):
        # The first of `last` proves the others; it counts only as the history's first.
        countable = last if len(last) == run.history_length else last[1:]
    round_ = countable[-1].round if countable else run.round
    approved: list[Action] = []
    # The lists of the reassigns after the approvals walked: an approval counts
    # only where each of them still names whom it was given by, or for.
    since: list[tuple[str, ...]] = []
    for action in reversed(countable):
        if action.step_id != step.id or action.round != round_:
            break
        if action.action == ActionKind.REASSIGN:
            since.append(action.approvers or ())
            continue
        if action.action != ActionKind.APPROVE:
            break
        person = action.on_behalf_of or action.actor
        if all(still_eligible(listed, person) for listed in since):
            approved.append(action)
    approved.reverse()
    approved_by = tuple(action.actor for action in approved)
    approved_for = tuple(action.on_behalf_of or "" for action in approved)
    if (
        approved_by == run.current_step_approved_by
        and approved_for == run.current_step_on_behalf_of
        and round_ == run.round
    ):
        return run  # as stored: most runs, every step of a quorum of one
    return run._replace(
        current_step_approved_by=approved_by,
        current_step_on_behalf_of=approved_for,
        round=round_,
    )


def against(change: RunChange, stored: Run) -> RunChange:
    """`change`, computed from the run as proven, to be written against the run
    as stored: what the history proved otherwise is written back in line."""
    if change.before is stored:
        return change
    before = change.before._replace(
        current_step_approved_by=stored.current_step_approved_by,
        current_step_on_behalf_of=stored.current_step_on_behalf_of,
        round=stored.round,
    )
    return change._replace(before=before)


def check_requesters_action(run: Run, action: ActionKind, actor: str, admin: bool) -> None:
    """Cancel (while in progress or returned) and resubmit (while returned):
    Conflict if the run's state allows neither; Forbidden unless `actor`
    requested it, or nobody is named as its requester, or the caller is an
    administrator."""
    refused = refusal(run, action, actor, frozenset(), admin)
    if refused is not None:
        raise refused.error()


def needs_next_step(run: Run, action: ActionKind) -> bool:
    """Whether `action` moves the run past its current step (so the step after
    it must be known): an approval that completes the quorum."""
    step = run.current_step
    assert step is not None
    return (
        action == ActionKind.APPROVE
        and len(run.current_step_approved_by) + 1 >= step.required_approvals
    )


def decide(
    run: Run,
    action: ActionKind,
    actor: str,
    comment: str,
    next_step: Optional[Step],
    at: str,
    on_behalf_of: Optional[str] = None,
) -> Decision:
    """The decision `action` by `actor` (for `on_behalf_of`, or themselves) on
    the run's current step, and where it leads: `next_step` is the step after
    the current one (None after the last; read only where needs_next_step
    says so). A return leaves the run at its step, returned."""
    match action:
        case ActionKind.REJECT:
            return Decision(action, actor, comment, RunStatus.REJECTED, None, at, (), on_behalf_of)
        case ActionKind.CANCEL:
            return Decision(action, actor, comment, RunStatus.CANCELLED, None, at)
        case ActionKind.RETURN:
            returned = RunStatus.RETURNED
            return Decision(
                action, actor, comment, returned, run.current_step, at, (), on_behalf_of
            )
        case ActionKind.APPROVE:
            return _approval(run, actor, comment, next_step, at, on_behalf_of)
        case ActionKind.SKIP | ActionKind.RESUBMIT | ActionKind.REASSIGN | ActionKind.MOVE:
            raise ValueError(f"{action!r} decides no step: transitions record it")
        case _:
            assert_never(action)


def _approval(
    run: Run,
    actor: str,
    comment: str,
    next_step: Optional[Step],
    at: str,
    on_behalf_of: Optional[str],
) -> Decision:
    """An approval, and where it leads: the same step short of its quorum, else the next."""
    approve = ActionKind.APPROVE
    if not needs_next_step(run, approve):
        approved_by = (*run.current_step_approved_by, actor)
        approved_for = (*run.current_step_on_behalf_of, on_behalf_of or "")
        return Decision(
            approve,
            actor,
            comment,
            RunStatus.IN_PROGRESS,
            run.current_step,
            at,
            approved_by,
            on_behalf_of,
            approved_for,
        )
    status = RunStatus.IN_PROGRESS if next_step is not None else RunStatus.COMPLETED
    return Decision(approve, actor, comment, status, next_step, at, (), on_behalf_of)
