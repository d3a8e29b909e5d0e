"""Step deadlines on each backend: the sweeper (engine.sweep) applies each
passed deadline once, with a clock the test sets; decisions win over it."""

from __future__ import annotations

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors, events
from chalicelib.domain.lifecycle import OnDeadline, RunStatus
from chalicelib.domain.models import Deadline, Run, StepRule
from chalicelib.storage import Backend
from tests.support.event_stream import stream

T0 = "2030-01-02T03:04:05.000Z"
JUST_BEFORE = "2030-01-02T03:05:04.999Z"
DUE = "2030-01-02T03:05:05.000Z"
LATER = "2030-01-02T04:00:00.000Z"


def started(storage: Backend, deadline: Deadline, *more: StepRule) -> Run:
    workflow = engine.create_workflow(
        storage,
        f"Deadline {deadline.action}",
        "",
        [StepRule("A", deadline=deadline), *more],
        lambda: T0,
    )
    return engine.start_run(storage, workflow.id, "t", "rita", lambda: T0)


def types(storage: Backend, run: Run) -> list[str]:
    return [body["type"] for body in stream(storage, events.run_subject(run.id))]


def test_a_reject_deadline_ends_the_run_once_it_passed(storage: Backend) -> None:
    run = started(storage, Deadline(60, OnDeadline.REJECT))
    assert run.current_step_due_at == DUE
    assert storage.get_run(run.id).current_step_due_at == DUE

    assert engine.sweep(storage, lambda: JUST_BEFORE) == 0
    assert engine.sweep(storage, lambda: DUE) == 1
    assert engine.sweep(storage, lambda: LATER) == 0

    ended = storage.get_run(run.id)
    assert (ended.status, ended.current_step, ended.current_step_due_at) == (
        RunStatus.REJECTED,
        None,
        None,
    )
    (action,) = ended.actions
    assert (action.action, action.actor, action.created_at) == ("reject", "system:deadline", DUE)
    assert types(storage, run)[-2:] == [events.STEP_EXPIRED, events.RUN_REJECTED]
    assert stream(storage, events.run_subject(run.id))[-1]["data"]["actor"] == "system:deadline"


def test_a_remind_deadline_reminds_once_and_the_run_waits(storage: Backend) -> None:
    run = started(
        storage,
        Deadline(60, OnDeadline.REMIND),
        StepRule("B", deadline=Deadline(30, OnDeadline.REMIND)),
    )
    assert engine.sweep(storage, lambda: DUE) == 1
    assert engine.sweep(storage, lambda: LATER) == 0
    waiting = storage.get_run(run.id)
    assert waiting.status == RunStatus.IN_PROGRESS and waiting.deadline_passed
    assert waiting.current_step_due_at == DUE and waiting.actions == ()
    reminded = stream(storage, events.run_subject(run.id))[-1]
    assert reminded["type"] == events.STEP_REMINDED
    assert reminded["data"]["due_at"] == DUE and reminded["data"]["step"]["name"] == "A"

    # A decision moves the run on: the next step's deadline counts from then.
    moved = engine.approve(storage, run.id, "maria", clock=lambda: LATER)
    assert moved.current_step_due_at == "2030-01-02T04:00:30.000Z" and not moved.deadline_passed
    assert storage.get_run(run.id).current_step_due_at == moved.current_step_due_at
    assert engine.sweep(storage, lambda: "2030-01-02T04:00:29.000Z") == 0
    assert engine.sweep(storage, lambda: "2030-01-02T04:00:30.000Z") == 1
    assert types(storage, run).count(events.STEP_REMINDED) == 2


def test_an_escalate_deadline_lets_its_principals_decide_too(storage: Backend) -> None:
    run = started(storage, Deadline(60, OnDeadline.ESCALATE, ("user:boss", "group:finance")))
    assert storage.get_run(run.id).current_step_escalated_to == ()
    assert engine.sweep(storage, lambda: DUE) == 1
    escalated = storage.get_run(run.id)
    assert escalated.current_step_escalated_to == ("user:boss", "group:finance")
    assert shape(escalated)["current_step_escalated_to"] == ["user:boss", "group:finance"]
    last = stream(storage, events.run_subject(run.id))[-1]
    assert last["type"] == events.STEP_ESCALATED
    assert last["data"]["escalated_to"] == ["user:boss", "group:finance"]
    assert last["data"]["step"]["escalate_to"] == ["user:boss", "group:finance"]
    # Deciding after the escalation, on the step the caller saw, still works.
    step_id = escalated.current_step_id
    done = engine.approve(storage, run.id, "boss", expected_step_id=step_id, clock=lambda: LATER)
    assert done.status == RunStatus.COMPLETED and done.current_step_escalated_to == ()


def test_a_run_decided_before_its_deadline_is_not_swept(storage: Backend) -> None:
    run = started(storage, Deadline(60, OnDeadline.REJECT), StepRule("B"))
    engine.approve(storage, run.id, "maria", clock=lambda: JUST_BEFORE)
    assert engine.sweep(storage, lambda: LATER) == 0
    assert storage.get_run(run.id).current_step_due_at is None


def test_a_stale_sweep_loses_to_the_decision_recorded_first(storage: Backend) -> None:
    run = started(storage, Deadline(60, OnDeadline.REJECT))
    seen = storage.get_run(run.id)  # what a sweeper read
    engine.approve(storage, run.id, "maria", clock=lambda: DUE)
    from chalicelib.domain import transitions

    expiry = transitions.deadline_passed(seen, DUE)
    assert expiry is not None
    with pytest.raises(errors.LostWrite):
        storage.record_change(expiry)
    final = storage.get_run(run.id)
    assert [a.actor for a in final.actions] == ["maria"] and final.status == RunStatus.COMPLETED


def test_steps_without_deadlines_show_none(storage: Backend) -> None:
    workflow = engine.create_workflow(storage, "Plain", "", ["A"], lambda: T0)
    assert shape(workflow.steps[0])["deadline_seconds"] is None
    run = engine.start_run(storage, workflow.id, "t", None, lambda: T0)
    assert run.current_step_due_at is None
    assert engine.sweep(storage, lambda: LATER) == 0
    added = engine.append_step(
        storage, workflow.id, StepRule("B", deadline=Deadline(5, OnDeadline.REMIND))
    )
    assert storage.get_workflow(workflow.id).steps[1] == added
    assert added.deadline == Deadline(5, OnDeadline.REMIND)
