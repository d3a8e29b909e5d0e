"""What a subject's recorded events must say, whatever raced to write them."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain import events
from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import Run, Workflow
from chalicelib.storage import Storage


def stream(storage: Storage, subject: str) -> list[dict[str, Any]]:
    """Every event of `subject`, oldest first, as CloudEvents; gap-free from 1."""
    found = storage.list_events(subject, None, 1000)
    assert not found.more
    bodies = [json.loads(event.body) for event in found.items]
    assert [body["sequence"] for body in bodies] == [f"{n:020d}" for n in range(1, len(bodies) + 1)]
    assert len({body["id"] for body in bodies}) == len(bodies)
    return bodies


def expected_run_types(run: Run, steps: int) -> list[str]:
    """The types a run's history gives, one transition after the other."""
    types = [events.RUN_STARTED, events.STEP_ACTIVATED]
    for number, action in enumerate(run.actions, start=1):
        if action.action == "reject":
            types += [events.STEP_REJECTED, events.RUN_REJECTED]
        elif number < steps:
            types += [events.STEP_APPROVED, events.STEP_ACTIVATED]
        else:
            types += [events.STEP_APPROVED, events.RUN_COMPLETED]
    return types


def assert_run_stream_tells(storage: Storage, run: Run, workflow: Workflow) -> None:
    """The run's events tell its history exactly: one per transition, in order,
    each decision's actor and step as the history has them."""
    bodies = stream(storage, events.run_subject(run.id))
    assert [body["type"] for body in bodies] == expected_run_types(run, len(workflow.steps))
    decided = [
        body for body in bodies if body["type"] in (events.STEP_APPROVED, events.STEP_REJECTED)
    ]
    assert [(body["data"]["actor"], body["data"]["step"]["id"]) for body in decided] == [
        (action.actor, action.step_id) for action in run.actions
    ]
    assert bodies[-1]["data"]["status"] == run.status
    assert run.status in (RunStatus.IN_PROGRESS, RunStatus.COMPLETED, RunStatus.REJECTED)
