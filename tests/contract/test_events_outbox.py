"""The outbox: every write records its events in the same atomic write, on
each backend; a refused write records none; each subject's sequence is gap-free."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.domain import errors, events
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Decision, StepRule
from chalicelib.storage import Storage
from tests.support.stored import (
    LATER,
    NOW,
    decide,
    record,
    rules,
    stored_run,
    stored_step,
    stored_workflow,
    workflow_with_steps,
)


def _stream(storage: Storage, subject: str) -> list[dict[str, Any]]:
    found = storage.list_events(subject, None, 100)
    assert not found.more
    bodies = [json.loads(event.body) for event in found.items]
    assert [f"{event.sequence:020d}" for event in found.items] == [
        body["sequence"] for body in bodies
    ]
    return bodies


def _types(storage: Storage, subject: str) -> list[str]:
    return [body["type"].removeprefix("approval.") for body in _stream(storage, subject)]


def test_a_run_records_an_event_per_transition_in_order(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    run = stored_run(storage, workflow, "t", NOW, "rita")
    run = decide(storage, run)
    decided = decide(storage, run, actor="bob")

    stream = _stream(storage, f"runs/{run.id}")
    assert [body["sequence"] for body in stream] == [f"{n:020d}" for n in range(1, 7)]
    assert [body["type"] for body in stream] == [
        events.RUN_STARTED,
        events.STEP_ACTIVATED,
        events.STEP_APPROVED,
        events.STEP_ACTIVATED,
        events.STEP_APPROVED,
        events.RUN_COMPLETED,
    ]
    assert [body["data"]["step"]["name"] if body["data"]["step"] else None for body in stream] == [
        "A",
        "A",
        "A",
        "B",
        "B",
        None,
    ]
    assert stream[-1]["data"]["head_hash"] == decided.head_hash == storage.get_run(run.id).head_hash
    assert stream[-1]["time"] == LATER and stream[0]["time"] == NOW
    assert {body["subject"] for body in stream} == {f"runs/{run.id}"}
    assert len({body["id"] for body in stream}) == 6


def test_a_rejection_records_the_step_and_the_run_rejected(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    run = decide(storage, stored_run(storage, workflow, "t", NOW), ActionKind.REJECT, "bob")
    assert _types(storage, f"runs/{run.id}") == [
        "run.started",
        "step.activated",
        "step.rejected",
        "run.rejected",
    ]


def test_a_workflow_stream_numbers_creation_and_appended_steps(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    stored_step(storage, workflow.id, StepRule("C"), LATER)
    stored_step(storage, workflow.id, StepRule("D"), LATER)
    empty = stored_workflow(storage, "Empty", "", rules(), NOW)
    stored_step(storage, empty.id, StepRule("X"), LATER)

    stream = _stream(storage, f"workflows/{workflow.id}")
    assert [(body["sequence"], body["type"]) for body in stream] == [
        ("00000000000000000001", events.WORKFLOW_CREATED),
        ("00000000000000000002", events.STEP_ADDED),
        ("00000000000000000003", events.STEP_ADDED),
    ]
    assert [step["name"] for step in stream[0]["data"]["workflow"]["steps"]] == ["A", "B"]
    assert stream[2]["data"]["step"]["name"] == "D" and stream[2]["time"] == LATER
    assert _types(storage, f"workflows/{empty.id}") == ["workflow.created", "workflow.step_added"]


def test_a_refused_decision_records_no_event(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    run = stored_run(storage, workflow, "t", NOW)
    decide(storage, run)
    with pytest.raises(errors.LostWrite):
        # The run as read before the first decision: its write is refused.
        record(
            storage,
            run,
            Decision(
                ActionKind.APPROVE, "eve", "", RunStatus.IN_PROGRESS, workflow.steps[1], LATER
            ),
        )
    assert len(_stream(storage, f"runs/{run.id}")) == 4


def test_a_refused_workflow_records_no_event(storage: Storage) -> None:
    first = workflow_with_steps(storage, "A")
    with pytest.raises(errors.Conflict):
        stored_workflow(storage, first.name, "", rules("x"), NOW)
    assert _stream(storage, f"workflows/{first.id + 1}") == []
    assert len(_stream(storage, f"workflows/{first.id}")) == 1


def test_events_page_from_a_sequence(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B", "C")
    run = decide(storage, decide(storage, stored_run(storage, workflow, "t", NOW)))
    subject = f"runs/{run.id}"

    first = storage.list_events(subject, None, 4)
    rest = storage.list_events(subject, 4, 4)
    assert ([e.sequence for e in first.items], first.more) == ([1, 2, 3, 4], True)
    assert ([e.sequence for e in rest.items], rest.more) == ([5, 6], False)
    assert storage.list_events("runs/999", None, 10).items == ()
