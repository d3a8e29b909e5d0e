"""The state a run's history leads to, replayed through the transitions
themselves, against the state stored: GET /runs/{id}/audit's state_valid.

A replay starts where the run started (transitions.started, at the first step
past the skips its history opens with) and applies each entry as the
transitions compute it: a decision by decision.decide (an approval counts
toward its step's quorum, whom it was for with it; the quorum moves the run to
the next step by order, past the skips recorded with it, or completes it; a
rejection or a cancellation ends it; a return sends it back) and the change
transitions.decided makes of that; a resubmit by transitions.resubmitted (the
next round, at the first step past its skips); a rejection by system:deadline
as its step's deadline expiring (deadlines.expiry). Each change must record
what the history holds next (the same kinds of action, at the same steps, in
the same rounds): an entry the transitions would not have recorded there
leads to no state at all, so that every field is a mismatch.

What the transitions cannot compute again is read from the history: which
steps a run skipped, of those that have a condition (the input a round was
decided on is, once a resubmit replaced it, only a digest in the chain, so
the conditions cannot be evaluated again), and what an entry says (its actor,
comment, time, for whom). Who may decide (approvers, policy, delegations, the
returns a workflow allows) is not checked again: the replay is of the state
machine, not of the people. One reading the history cannot tell apart is
allowed: a run stored as completed where the history's last change reached a
step that follows it now (a step appended after the run completed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, assert_never

from chalicelib.domain import audit, deadlines, decision, errors, transitions, versioning
from chalicelib.domain.changes import RunChange
from chalicelib.domain.events import DEADLINE_ACTOR
from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.domain.models import Action, Run, Step, Workflow

# The state a decision reads, which the chain implies: what `state_mismatches`
# compares. The input a decision reads is the chain's own (audit.input_unbound_at).
STATE_FIELDS = (
    "status",
    "current_step_id",
    "current_step_approved_by",
    "current_step_on_behalf_of",
    "approvers",
    "round",
    "head_hash",
)


def state_mismatches(
    run: Run, steps: Sequence[Step], moved_to: Mapping[int, Workflow] = {}
) -> tuple[str, ...]:
    """The fields of STATE_FIELDS whose stored value is not the one the run's
    history, replayed under the `steps` of the version it started on (and
    after each move, the version it names of `moved_to`), leads to."""
    reached = _reached(run, tuple(sorted(steps, key=lambda step: step.step_order)), moved_to)
    ought = _state(reached, audit.recomputed(run)[-1])
    held = _state(run, run.head_hash)
    return tuple(
        name
        for name, value, stored in zip(STATE_FIELDS, ought, held, strict=True)
        if value != stored
    )


def _state(run: Optional[Run], head: Optional[str]) -> tuple[Any, ...]:
    """The values of STATE_FIELDS of `run` (None: of no state), its head `head`."""
    if run is None:
        return (*(None for _ in STATE_FIELDS[:-1]), head)
    return (
        run.status,
        run.current_step_id,
        tuple(run.current_step_approved_by),
        _attributed(run.current_step_on_behalf_of),
        tuple(run.approvers),
        run.round,
        head,
    )


def _attributed(on_behalf_of: Sequence[str]) -> tuple[str, ...]:
    """Whom each approval was for, without the trailing ones for themselves
    (runs stored before delegations keep none)."""
    kept = tuple(on_behalf_of)
    while kept and not kept[-1]:
        kept = kept[:-1]
    return kept


def _reached(run: Run, steps: tuple[Step, ...], moved_to: Mapping[int, Workflow]) -> Optional[Run]:
    """The run as its history leads it from its start; None where an entry is
    not what the transitions would have recorded there."""
    history = run.actions
    workflow = Workflow(
        run.workflow_id,
        "",
        "",
        run.created_at,
        steps,
        run.policy,
        None,
        run.max_returns,
        run.genesis_version or run.workflow_version,
    )
    landing, skipped = _arrival(run, 0, steps, 1, after_a_step=False)
    state = transitions.started(
        workflow, run.id, run.title, run.requested_by, run.created_at, run.input, landing, skipped
    ).run
    at = len(skipped)
    while at < len(history):
        change = _change(state, run, at, workflow, moved_to)
        if change is None or not _as_recorded(change.actions, history[at:]):
            return None
        if change.after.workflow_version != workflow.version:  # moved: its steps from now on
            workflow = moved_to[change.after.workflow_version]
        at += len(change.actions)
        # What was replayed is not read again: a long history replays in linear time.
        state = change.after._replace(actions=(), unread_actions=at)
    return state


def _change(
    state: Run, run: Run, at: int, workflow: Workflow, moved_to: Mapping[int, Workflow]
) -> Optional[RunChange]:
    """The change the transitions make of the history's entry at `at` (from 0)
    on `state`; None where the state machine could not have recorded it."""
    entry = run.actions[at]
    match entry.action:
        case ActionKind.REASSIGN:
            if not decision.decidable(state):
                return None
            listed = entry.approvers or ()
            return versioning.reassign(state, listed, entry.actor, entry.comment, entry.created_at)
        case ActionKind.MOVE:
            target = moved_to.get(entry.workflow_version or 0)
            if not decision.decidable(state) or target is None:
                return None
            try:
                return versioning.move(
                    state, target, entry.step_name, entry.actor, entry.comment, entry.created_at
                )
            except errors.Conflict:
                return None
        case ActionKind.APPROVE | ActionKind.REJECT | ActionKind.RETURN:
            return _decision(state, run, at, workflow.steps)
        case ActionKind.CANCEL:
            if decision.refusal(state, entry.action, entry.actor, frozenset(), True):
                return None
            chosen = decision.decide(
                state, entry.action, entry.actor, entry.comment, None, entry.created_at
            )
            return transitions.decided(state, chosen)
        case ActionKind.RESUBMIT:
            if decision.refusal(state, entry.action, entry.actor, frozenset(), True):
                return None
            landing, skipped = _arrival(run, at + 1, workflow.steps, state.round + 1, False)
            return transitions.resubmitted(
                state,
                workflow,
                entry.actor,
                entry.comment,
                state.input,
                entry.input_digest,
                landing,
                skipped,
                entry.created_at,
            )
        case ActionKind.SKIP:
            return None  # recorded with the arrival that passes its step, never alone
        case _:
            assert_never(entry.action)


def _decision(state: Run, run: Run, at: int, steps: Sequence[Step]) -> Optional[RunChange]:
    """The change a decision of the current step (the entry at `at`) makes."""
    entry = run.actions[at]
    step = state.current_step
    if not decision.decidable(state) or step is None:
        return None
    if entry.actor == DEADLINE_ACTOR:
        # Nobody else is named so: the step's deadline expired, where it rejects.
        rejects = step.deadline is not None and step.deadline.action == OnDeadline.REJECT
        if entry.action != ActionKind.REJECT or not rejects:
            return None
        return transitions.decided(state, deadlines.expiry(entry.created_at))
    following: Sequence[Step] = ()
    landing: Optional[Step] = None
    skipped: tuple[Step, ...] = ()
    if decision.needs_next_step(state, entry.action):
        following = [later for later in steps if later.step_order > step.step_order]
        landing, skipped = _arrival(run, at + 1, following, state.round, after_a_step=True)
    chosen = decision.decide(
        state,
        entry.action,
        entry.actor,
        entry.comment,
        landing,
        entry.created_at,
        entry.on_behalf_of,
    )
    return transitions.decided(state, chosen, skipped, following)


def _arrival(
    run: Run, at: int, following: Sequence[Step], round_: int, after_a_step: bool
) -> tuple[Optional[Step], tuple[Step, ...]]:
    """Where a run arriving at `following` (in order) waits, by its history:
    past the first of them that its entries from `at` on skip, in round
    `round_`, at the next (None: none is left, the run completes)."""
    skipped: list[Step] = []
    for step, entry in zip(following, run.actions[at:], strict=False):
        if entry.action != ActionKind.SKIP or entry.step_id != step.id or entry.round != round_:
            break
        if step.when is None:
            break  # a step that always applies is never skipped
        skipped.append(step)
    rest = following[len(skipped) :]
    landing = rest[0] if rest else None
    ends_history = at + len(skipped) == len(run.actions)
    ended = run.status == RunStatus.COMPLETED and run.current_step is None
    # The step it would wait at may have been appended after the run completed:
    # any step after one it passed may (a run's first step never is).
    if landing is not None and ends_history and ended and (after_a_step or skipped):
        landing = None
    return landing, tuple(skipped)


def _as_recorded(computed: Sequence[Action], recorded: Sequence[Action]) -> bool:
    """Whether the history holds, next, the actions the transitions computed:
    the same kinds at the same steps in the same rounds (what each says, who
    and when, is the entry's own)."""
    return len(recorded) >= len(computed) and all(
        (ought.action, ought.step_id, ought.round) == (held.action, held.step_id, held.round)
        for ought, held in zip(computed, recorded[: len(computed)], strict=True)
    )
