"""The engine's use cases, called directly on SQLite, with a fixed clock.

SQLite only: the engine is pure over the Storage protocol, and what it needs
from storage is pinned on every backend by test_storage_contract.py and the API
tests (tests/conftest.py says which suite runs where).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors
from chalicelib.domain.models import Run, Step, Workflow
from chalicelib.storage import Storage
from tests.support.backends import sqlite_backend
from tests.support.shapes import assert_run, assert_utc_timestamp, assert_workflow

T0 = "2030-01-02T03:04:05.000Z"
T1 = "2030-01-02T03:05:00.250Z"
T2 = "2030-01-02T04:00:00.999Z"


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[Storage]:
    with sqlite_backend(tmp_path) as open_storage:
        yield open_storage()


def fixed(instant: str) -> Callable[[], str]:
    return lambda: instant


def define(
    storage: Storage,
    name: str = "Purchase",
    steps: tuple[str, ...] = ("Manager", "Finance", "Legal"),
) -> Workflow:
    return engine.create_workflow(storage, name, "", steps, clock=fixed(T0))


def start(storage: Storage, workflow: Workflow, title: str = "Laptop") -> Run:
    return engine.start_run(storage, workflow.id, title, clock=fixed(T0))


def approve(
    storage: Storage, run: Run, actor: str = "alice", comment: Any = None, at: str = T1
) -> Run:
    return engine.approve(storage, run.id, actor, comment or "", clock=fixed(at))


def reject(storage: Storage, run: Run, actor: str = "bob", at: str = T1) -> Run:
    return engine.reject(storage, run.id, actor, clock=fixed(at))


def trail(run: Run) -> list[tuple[str, str, str]]:
    return [(a.action, a.step_name, a.actor) for a in run.actions]


# -- clock and timestamps --------------------------------------------------------


def test_utc_now_is_iso_8601_utc_with_milliseconds() -> None:
    now = engine.utc_now()

    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now), now
    assert_utc_timestamp(now)


def test_create_workflow_stamps_created_at_from_the_clock(storage: Storage) -> None:
    workflow = define(storage)

    assert workflow.created_at == T0
    assert engine.get_workflow(storage, workflow.id).created_at == T0


def test_start_run_stamps_created_and_updated_at_from_the_clock(storage: Storage) -> None:
    run = start(storage, define(storage))

    assert (run.created_at, run.updated_at) == (T0, T0)
    stored = engine.get_run(storage, run.id)
    assert (stored.created_at, stored.updated_at) == (T0, T0)


def test_decisions_stamp_the_action_and_updated_at_but_keep_created_at(storage: Storage) -> None:
    run = start(storage, define(storage))

    after_approve = approve(storage, run, at=T1)
    after_reject = reject(storage, after_approve, at=T2)

    assert (after_approve.created_at, after_approve.updated_at) == (T0, T1)
    assert (after_reject.created_at, after_reject.updated_at) == (T0, T2)
    assert [a.created_at for a in after_reject.actions] == [T1, T2]
    assert engine.get_run(storage, run.id) == after_reject


# -- workflows -------------------------------------------------------------------


def test_create_workflow_returns_the_stored_workflow_with_numbered_steps(storage: Storage) -> None:
    workflow = define(storage, steps=("Manager", "Finance"))

    assert isinstance(workflow, Workflow)
    assert [(s.step_order, s.name, s.workflow_id) for s in workflow.steps] == [
        (1, "Manager", workflow.id),
        (2, "Finance", workflow.id),
    ]
    assert engine.get_workflow(storage, workflow.id) == workflow
    assert_workflow(shape(workflow))


def test_create_workflow_accepts_up_to_50_initial_steps(storage: Storage) -> None:
    names = [f"Step {n}" for n in range(1, 51)]

    workflow = engine.create_workflow(storage, "Fifty", steps=names)

    assert [s.step_order for s in workflow.steps] == list(range(1, 51))


def test_create_workflow_with_taken_name_raises_conflict(storage: Storage) -> None:
    original = define(storage, "Taken", steps=("One",))

    with pytest.raises(errors.Conflict):
        define(storage, "Taken", steps=("Two", "Three"))

    assert engine.get_workflow(storage, original.id) == original


def test_append_step_returns_the_step_after_the_last_one(storage: Storage) -> None:
    workflow = define(storage, steps=("Manager", "Finance"))

    step = engine.append_step(storage, workflow.id, "Legal")

    assert isinstance(step, Step)
    assert (step.workflow_id, step.name, step.step_order) == (workflow.id, "Legal", 3)
    assert engine.get_workflow(storage, workflow.id).steps == (*workflow.steps, step)


def test_missing_workflow_raises_not_found(storage: Storage) -> None:
    workflow = define(storage)
    missing = workflow.id + 1000

    with pytest.raises(errors.NotFound):
        engine.get_workflow(storage, missing)
    with pytest.raises(errors.NotFound):
        engine.append_step(storage, missing, "x")


# -- runs ------------------------------------------------------------------------


def test_start_run_begins_in_progress_at_the_lowest_step(storage: Storage) -> None:
    workflow = define(storage)

    run = start(storage, workflow, "Laptop")

    assert isinstance(run, Run)
    assert (run.workflow_id, run.title, run.status) == (workflow.id, "Laptop", "in_progress")
    assert run.current_step == workflow.steps[0]
    assert run.actions == ()
    assert engine.get_run(storage, run.id) == run


def test_start_run_of_workflow_without_steps_raises_conflict(storage: Storage) -> None:
    workflow = define(storage, steps=())

    with pytest.raises(errors.Conflict):
        start(storage, workflow)


@pytest.mark.parametrize("workflow_id", [10**6, 2**53, 2**64, 10**30])
def test_start_run_of_missing_workflow_raises_not_found(storage: Storage, workflow_id: int) -> None:
    define(storage)

    with pytest.raises(errors.NotFound):
        engine.start_run(storage, workflow_id, "x")


def test_approve_advances_then_completes(storage: Storage) -> None:
    workflow = define(storage, steps=("Manager", "Finance"))
    run = start(storage, workflow)

    moved = approve(storage, run, "alice", "ok")
    done = approve(storage, moved, "carol")

    assert (moved.status, moved.current_step) == ("in_progress", workflow.steps[1])
    assert (done.status, done.current_step, done.current_step_id) == ("completed", None, None)
    assert trail(done) == [("approve", "Manager", "alice"), ("approve", "Finance", "carol")]
    assert [a.comment for a in done.actions] == ["ok", ""]
    assert [a.step_id for a in done.actions] == [s.id for s in workflow.steps]
    assert engine.get_run(storage, run.id) == done
    assert_run(shape(done))


@pytest.mark.parametrize("approvals", [0, 1, 2], ids=["first", "middle", "last"])
def test_reject_at_any_step_ends_the_run(storage: Storage, approvals: int) -> None:
    workflow = define(storage)
    run = start(storage, workflow)
    for _ in range(approvals):
        run = approve(storage, run)

    rejected = reject(storage, run)

    assert (rejected.status, rejected.current_step) == ("rejected", None)
    assert rejected.actions[-1].step_id == workflow.steps[approvals].id
    assert rejected.actions[-1].action == "reject"
    assert len(rejected.actions) == approvals + 1
    assert engine.get_run(storage, run.id) == rejected


@pytest.mark.parametrize("ending", ["completed", "rejected"])
@pytest.mark.parametrize("decide", [engine.approve, engine.reject], ids=["approve", "reject"])
def test_decision_on_finished_run_raises_conflict_and_writes_nothing(
    storage: Storage, ending: str, decide: Any
) -> None:
    run = start(storage, define(storage, steps=("Only",)))
    finished = approve(storage, run) if ending == "completed" else reject(storage, run)

    with pytest.raises(errors.Conflict, match=r"^Run is not in progress$"):
        decide(storage, run.id, "mallory", clock=fixed(T2))

    assert engine.get_run(storage, run.id) == finished


def test_step_appended_during_a_run_is_on_its_remaining_path(storage: Storage) -> None:
    workflow = define(storage, steps=("Manager",))
    run = start(storage, workflow)

    late = engine.append_step(storage, workflow.id, "Late")
    moved = approve(storage, run)

    assert (moved.status, moved.current_step) == ("in_progress", late)


def test_step_appended_before_a_run_reaches_it_keeps_step_order(storage: Storage) -> None:
    workflow = define(storage, steps=("A", "B"))
    run = start(storage, workflow)
    run = approve(storage, run)
    engine.append_step(storage, workflow.id, "C")
    engine.append_step(storage, workflow.id, "D")

    while run.status == "in_progress":
        run = approve(storage, run)

    assert [a.step_name for a in run.actions] == ["A", "B", "C", "D"]
