"""What every Storage adapter promises the engine, tested on each backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Run, Slice, StepRule, Workflow
from chalicelib.storage import Storage
from tests.support.stored import (
    LATER,
    NOW,
    decide,
    rules,
    stored_run,
    stored_step,
    stored_workflow,
    workflow_with_steps,
)


def test_ids_and_orders_are_python_ints(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A")
    run = decide(storage, stored_run(storage, workflow, "t", NOW))
    stored = storage.get_run(run.id)

    values = [
        workflow.id,
        workflow.steps[0].id,
        workflow.steps[0].step_order,
        workflow.steps[0].workflow_id,
        stored.id,
        stored.workflow_id,
        stored.actions[0].id,
        stored.actions[0].run_id,
        stored.actions[0].step_id,
    ]
    assert all(type(value) is int for value in values), values


def test_steps_after_follow_step_order_and_are_none_after_the_last(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    c = stored_step(storage, workflow.id, StepRule("C"), NOW)

    assert storage.steps_after(workflow.id, 0) == (*workflow.steps, c)
    assert storage.steps_after(workflow.id, 1) == (workflow.steps[1], c)
    assert storage.steps_after(workflow.id, 2) == (c,)
    assert storage.steps_after(workflow.id, 3) == ()


def test_steps_after_never_cross_into_another_workflow(storage: Storage) -> None:
    first = workflow_with_steps(storage, "A")
    stored_workflow(storage, "Other", "", rules("X", "Y"), NOW)

    assert storage.steps_after(first.id, 1) == ()


def test_losing_create_writes_none_of_its_steps(storage: Storage) -> None:
    winner = workflow_with_steps(storage, "Mine")

    with pytest.raises(errors.Conflict):
        stored_workflow(storage, "Purchase", "other", rules("Theirs", "More"), NOW)

    assert storage.get_workflow(winner.id) == winner


def test_missing_records_raise_not_found(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A")
    run = stored_run(storage, workflow, "t", NOW)

    with pytest.raises(errors.NotFound):
        storage.get_workflow(workflow.id + 1000)
    with pytest.raises(errors.NotFound):
        stored_step(storage, workflow.id + 1000, StepRule("x"), NOW)
    with pytest.raises(errors.NotFound):
        storage.get_run(run.id + 1000)


def test_record_decision_returns_what_get_run_reads_back(storage: Storage) -> None:
    run = stored_run(storage, workflow_with_steps(storage, "A", "B"), "t", NOW)

    moved = decide(storage, run)
    done = decide(storage, moved)

    assert storage.get_run(run.id) == done
    assert done.status == RunStatus.COMPLETED and done.current_step is None


@pytest.mark.parametrize("second", [ActionKind.APPROVE, ActionKind.REJECT])
@pytest.mark.parametrize("first", [ActionKind.APPROVE, ActionKind.REJECT])
def test_decision_on_a_stale_snapshot_is_a_lost_write_and_writes_nothing(
    storage: Storage, first: ActionKind, second: ActionKind
) -> None:
    run = stored_run(storage, workflow_with_steps(storage, "A", "B", "C"), "t", NOW)
    after_first = decide(storage, run, first, "winner")

    with pytest.raises(errors.LostWrite):
        decide(storage, run, second, "loser")

    assert storage.get_run(run.id) == after_first


def test_stale_run_is_a_conflict() -> None:
    assert issubclass(errors.StaleRun, errors.Conflict)


def test_a_lost_write_is_no_caller_s_answer() -> None:
    """Retried by the engine, never turned into a status: not a domain error."""
    assert not issubclass(errors.LostWrite, errors.WorkflowError)


def test_another_storage_on_the_same_data_shares_state_and_refuses_stale_decisions(
    storage: Storage, storage_factory: Callable[[], Storage]
) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    initial = stored_run(storage, workflow, "t", NOW)
    moved = decide(storage, initial)

    other = storage_factory()

    assert other.get_workflow(workflow.id) == workflow
    assert other.get_run(initial.id) == moved
    with pytest.raises(errors.LostWrite):
        decide(other, initial)
    done = decide(other, moved)
    assert storage.get_run(initial.id) == done


def test_a_completion_from_steps_known_before_an_append_elsewhere_is_refused(
    storage: Storage, storage_factory: Callable[[], Storage]
) -> None:
    """Each storage may keep a workflow's steps in memory: the write that
    completes a run still refuses when a step was appended meanwhile, and the
    steps read next include it."""
    workflow = workflow_with_steps(storage, "A")
    run = stored_run(storage, workflow, "t", NOW)
    assert storage.steps_after(workflow.id, 1) == ()  # this storage knows one step
    appended = stored_step(storage_factory(), workflow.id, StepRule("B"), NOW)

    with pytest.raises(errors.LostWrite):
        decide(storage, run)

    assert storage.steps_after(workflow.id, 1) == (appended,)
    moved = decide(storage, storage.get_run(run.id))
    assert moved.status == RunStatus.IN_PROGRESS
    assert moved.current_step == appended


# -- lists ----------------------------------------------------------------------------


def test_empty_store_lists_nothing(storage: Storage) -> None:
    assert storage.list_workflows(None, 10) == Slice((), False)
    assert storage.list_runs(None, None, None, 10) == Slice((), False)
    assert storage.list_runs(1, RunStatus.IN_PROGRESS, 5, 10) == Slice((), False)


def test_list_workflows_gives_them_by_id_as_get_workflow_reads_them(storage: Storage) -> None:
    first = stored_workflow(storage, "First", "one", rules("A", "B"), NOW)
    stored_step(storage, first.id, StepRule("C"), NOW)
    second = stored_workflow(storage, "Second", "", rules(), NOW)
    third = stored_workflow(storage, "Third", "", rules("X"), LATER)
    stored_step(storage, second.id, StepRule("Y"), NOW)

    listed = storage.list_workflows(None, 10)

    assert listed == Slice(
        tuple(
            storage.get_workflow(workflow.id)
            for workflow in sorted((first, second, third), key=lambda workflow: workflow.id)
        ),
        False,
    )
    assert [step.name for step in listed.items[0].steps] == ["A", "B", "C"]


def test_list_workflows_says_more_exactly_when_another_follows(storage: Storage) -> None:
    ids = sorted(stored_workflow(storage, f"W{i}", "", rules(), NOW).id for i in range(3))

    assert [w.id for w in storage.list_workflows(None, 2).items] == ids[:2]
    assert storage.list_workflows(None, 2).more
    assert storage.list_workflows(ids[0], 2) == Slice(
        storage.list_workflows(ids[0], 3).items, False
    )
    assert storage.list_workflows(ids[1], 2).items[0].id == ids[2]
    assert storage.list_workflows(ids[2], 2) == Slice((), False)


def _runs(storage: Storage) -> tuple[Workflow, Workflow, list[Run]]:
    """Two workflows, and runs of them that are in progress, completed and rejected."""
    first = workflow_with_steps(storage, "A", "B")
    second = stored_workflow(storage, "Other", "", rules("X"), NOW)
    runs = []
    for i, (workflow, action) in enumerate(
        [
            (first, None),
            (second, ActionKind.APPROVE),
            (first, ActionKind.REJECT),
            (first, ActionKind.APPROVE),
            (second, None),
            (first, None),
        ]
    ):
        run = stored_run(storage, workflow, f"Run {i}", NOW)
        runs.append(decide(storage, run, action) if action else run)
    return first, second, runs


def test_list_runs_gives_them_newest_first_as_get_run_reads_them_without_actions(
    storage: Storage,
) -> None:
    _, _, runs = _runs(storage)

    listed = storage.list_runs(None, None, None, 10)

    newest_first = sorted(runs, key=lambda run: -run.id)
    assert listed == Slice(
        tuple(storage.get_run(run.id)._replace(actions=()) for run in newest_first), False
    )


@pytest.mark.parametrize(
    "which, status",
    [
        ("first", None),
        ("second", None),
        (None, RunStatus.IN_PROGRESS),
        (None, RunStatus.COMPLETED),
        (None, RunStatus.REJECTED),
        ("first", RunStatus.IN_PROGRESS),
        ("first", RunStatus.REJECTED),
        ("second", RunStatus.COMPLETED),
        ("second", RunStatus.REJECTED),
    ],
)
def test_list_runs_filters_by_workflow_and_status_and_pages_by_id(
    storage: Storage, which: str, status: str
) -> None:
    first, second, runs = _runs(storage)
    workflow_id = {"first": first.id, "second": second.id, None: None}[which]
    expected = [
        run.id
        for run in sorted(runs, key=lambda run: -run.id)
        if workflow_id in (None, run.workflow_id) and status in (None, run.status)
    ]

    everything = storage.list_runs(workflow_id, status, None, 10)
    assert [run.id for run in everything.items] == expected and not everything.more
    first_page = storage.list_runs(workflow_id, status, None, 1)
    assert [run.id for run in first_page.items] == expected[:1]
    assert first_page.more == (len(expected) > 1)
    if expected:
        rest = storage.list_runs(workflow_id, status, expected[0], 10)
        assert [run.id for run in rest.items] == expected[1:] and not rest.more


def test_list_runs_of_a_workflow_without_runs_is_empty(storage: Storage) -> None:
    first, _, _ = _runs(storage)
    idle = stored_workflow(storage, "Idle", "", rules("A"), NOW)

    assert storage.list_runs(idle.id, None, None, 10) == Slice((), False)
    assert storage.list_runs(first.id + 10_000, None, None, 10) == Slice((), False)
    assert storage.list_runs(None, "pending", None, 10) == Slice((), False)
