"""The audit's replay runs the transitions themselves (chalicelib/domain/replay.py):
a history they recorded leads back to the state they left, and an entry they
would not have recorded there leads to none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.domain import audit, replay, shapes, transitions
from chalicelib.domain.events import DEADLINE_ACTOR
from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.domain.models import Deadline, Run, Step, StepRule, Workflow

AT = "2030-01-02T03:04:05.000Z"
LATER = "2030-01-02T03:05:00.000Z"
# A day after: every deadline below has passed.
NEXT_DAY = "2030-01-03T03:05:00.000Z"
RULES = (
    StepRule("Board", required_approvals=2),
    StepRule("CFO", when={">": [{"var": "amount"}, 10]}),
    StepRule("Legal", deadline=Deadline(60, OnDeadline.REJECT)),
)
STEPS = tuple(rule.stored(i, 1, i) for i, rule in enumerate(RULES, start=1))
WORKFLOW = Workflow(1, "W", "", AT, STEPS)
# What an ended run's history leads to when it leads to no state: every field
# but its step (it has none either way) and its head (the chain's own).
NO_STATE = ("status", "current_step_approved_by", "current_step_on_behalf_of", "approvers", "round")


def decided(run: Run, *changes: Callable[[Run], Run]) -> Run:
    for change in changes:
        run = change(run)
    return run


def approve(actor: str, steps: tuple[Step, ...] = STEPS) -> Callable[[Run], Run]:
    def change(run: Run) -> Run:
        assert run.current_step is not None
        later = steps[run.current_step.step_order :]
        return transitions.decide(run, ActionKind.APPROVE, actor, "", later, LATER).after

    return change


def every_transition() -> Run:
    """Round 1 at 50 reaches the CFO step and is sent back at Legal; round 2 at
    5 skips the CFO step, and Legal's deadline rejects it."""
    run = transitions.start_run(WORKFLOW, "PO", "rita", AT, {"amount": 50}).made(7).run
    return decided(
        run,
        approve("ann"),
        approve("bob"),
        approve("cfo"),
        lambda r: transitions.decide(r, ActionKind.RETURN, "lee", "Split it", (), LATER).after,
        lambda r: transitions.resubmit(r, WORKFLOW, "rita", "", {"amount": 5}, LATER).after,
        approve("ann"),
        approve("bob"),
        lambda r: _expired(r),
    )


def _expired(run: Run) -> Run:
    change = transitions.deadline_passed(run, NEXT_DAY)
    assert change is not None
    return change.after


def test_a_history_of_every_transition_leads_to_the_state_they_left() -> None:
    run = every_transition()
    kinds = [(action.action, action.step_id, action.round) for action in run.actions]
    assert (ActionKind.SKIP, 2, 2) in kinds and (ActionKind.APPROVE, 2, 1) in kinds
    assert (run.status, run.round, run.actions[-1].actor) == (RunStatus.REJECTED, 2, DEADLINE_ACTOR)

    # The skips are the history's: by round 2's input the CFO step had been skipped in round 1 too.
    assert replay.state_mismatches(run, STEPS) == ()


def test_a_step_appended_after_the_run_completed_leaves_it_completed() -> None:
    short = WORKFLOW._replace(steps=STEPS[:1])
    run = transitions.start_run(short, "PO", None, AT).made(8).run
    done = decided(run, approve("ann", short.steps), approve("bob", short.steps))
    assert done.status == RunStatus.COMPLETED

    assert replay.state_mismatches(done, STEPS) == ()


def with_last(run: Run, **changed: Any) -> Run:
    """`run` with its last action changed, and chained again: a history that
    verifies, which the state machine could not have recorded."""
    last = run.actions[-1]._replace(**changed)
    head = run.actions[-2].hash
    assert head is not None
    rechained = audit.chained(last, len(run.actions), head)
    return run._replace(actions=(*run.actions[:-1], rechained), head_hash=rechained.hash)


@pytest.mark.parametrize(
    "changed",
    [
        # A rejection by the deadline of a step whose deadline does not reject.
        {"step_id": 1},
        # A skip with no arrival before it.
        {"action": ActionKind.SKIP},
        # A decision in a round the run was not in.
        {"round": 1},
        # A resubmit of a run that was not returned.
        {"action": ActionKind.RESUBMIT},
    ],
    ids=["expiry-without-deadline", "lone-skip", "wrong-round", "resubmit-in-progress"],
)
def test_an_entry_the_transitions_would_not_record_there_leads_to_no_state(
    changed: dict[str, Any],
) -> None:
    run = with_last(every_transition(), **changed)

    assert audit.audit_of(run, (), {1: shapes.workflow_shape(WORKFLOW)}).first_invalid_seq is None
    assert replay.state_mismatches(run, STEPS) == NO_STATE


def test_an_approval_that_completes_no_quorum_cannot_move_the_run_on() -> None:
    run = decided(transitions.start_run(WORKFLOW, "PO", None, AT).made(9).run, approve("ann"))
    moved = run._replace(current_step=STEPS[1], current_step_approved_by=())

    assert replay.state_mismatches(moved, STEPS) == ("current_step_id", "current_step_approved_by")
    assert replay.state_mismatches(run, STEPS) == ()


def test_a_long_history_replays_to_its_state() -> None:
    steps = tuple(StepRule(f"s{i}").stored(i, 1, i) for i in range(1, 401))
    workflow = Workflow(1, "Long", "", AT, steps)
    run = transitions.start_run(workflow, "PO", None, AT).made(10).run
    for i in range(400):
        run = transitions.decide(run, ActionKind.APPROVE, f"p{i}", "", steps[i + 1 :], LATER).after
    assert (len(run.actions), run.status) == (400, RunStatus.COMPLETED)

    assert replay.state_mismatches(run, steps) == ()
    assert replay.state_mismatches(run._replace(approvers=run.approvers[1:]), steps) == (
        "approvers",
    )
