"""Races of a workflow's versions (chalicelib/versions.py), free running, on
every race backend with one storage shared by all threads: concurrent
publishes get gap-free numbers, a run started during a publish is on one
whole version, and a reassign racing approvals records each change once."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from chalicelib import engine, versions
from chalicelib.domain import errors
from chalicelib.domain.models import Run, StepRule, Workflow
from chalicelib.storage import Storage
from tests.support.races import run_together

PUBLISHES = 20
STARTS = 20

Opener = Callable[[], Storage]


def definition(*steps: StepRule) -> versions.Definition:
    return versions.Definition("", steps)


def test_twenty_concurrent_publishes_give_twenty_consecutive_versions(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(storage, "Publishes", steps=["First"])
    publish = partial(versions.publish_version, storage, workflow.id)

    outcomes = run_together(
        [partial(publish, definition(StepRule(f"Step {n}"))) for n in range(PUBLISHES)]
    )

    assert all(isinstance(outcome, Workflow) for outcome in outcomes), outcomes
    assert sorted(outcome.version for outcome in outcomes) == list(range(2, PUBLISHES + 2))
    listed = versions.list_versions(storage, workflow.id, 100).items
    assert [version.version for version in listed] == list(range(1, PUBLISHES + 2))
    # Each version is the definition one publish gave, whole.
    published = {outcome.version: outcome.steps[0].name for outcome in outcomes}
    assert {v.version: v.steps[0].name for v in listed[1:]} == published
    assert engine.get_workflow(storage, workflow.id).version == PUBLISHES + 1


def test_of_publishes_naming_the_same_version_one_wins_and_the_others_are_409(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(storage, "Editors", steps=["First"])
    publish = partial(versions.publish_version, storage, workflow.id, expected_version=1)

    outcomes = run_together([partial(publish, definition(StepRule("Edited"))) for _ in range(8)])

    assert sum(isinstance(outcome, Workflow) for outcome in outcomes) == 1
    assert all(isinstance(outcome, (Workflow, errors.Conflict)) for outcome in outcomes), outcomes
    assert engine.get_workflow(storage, workflow.id).version == 2


def test_a_publish_racing_twenty_starts_leaves_every_run_on_one_whole_version(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(
        storage, "Starts", steps=[StepRule("Manager", ("user:ann",)), StepRule("CFO")]
    )
    newer = definition(StepRule("Legal", ("user:lee",)), StepRule("Finance", ("user:fay",)))
    tasks: list[Callable[[], Any]] = [
        partial(engine.start_run, storage, workflow.id, f"Run {n}") for n in range(STARTS)
    ]
    tasks.insert(STARTS // 2, partial(versions.publish_version, storage, workflow.id, newer))

    outcomes = run_together(tasks)

    runs = [outcome for outcome in outcomes if isinstance(outcome, Run)]
    assert len(runs) == STARTS, outcomes
    first_steps = {
        1: versions.get_workflow_version(storage, workflow.id, 1).steps[0],
        2: versions.get_workflow_version(storage, workflow.id, 2).steps[0],
    }
    for started in runs:
        run = engine.get_run(storage, started.id)
        assert run.workflow_version in first_steps
        # Its step, with that step's rules, is its own version's first.
        assert run.current_step == first_steps[run.workflow_version]
        assert engine.audit_run(storage, run.id).state_mismatches == ()


def test_a_reassign_racing_approvals_records_each_once(race_storage_factory: Opener) -> None:
    storage = race_storage_factory()
    board = StepRule("Board", ("user:ann", "user:bob", "user:cat", "user:dan"), 3)
    workflow = engine.create_workflow(storage, "Board", steps=[board, StepRule("After")])
    run = engine.start_run(storage, workflow.id, "Racing")
    tasks: list[Callable[[], Any]] = [
        partial(engine.approve, storage, run.id, actor) for actor in ("ann", "bob", "cat")
    ]
    tasks.append(
        partial(
            versions.reassign,
            storage,
            run.id,
            "ada",
            ("user:ann", "user:bob", "user:eve"),
            "Cat and Dan left",
            admin=True,
        )
    )

    outcomes = run_together(tasks)

    assert all(isinstance(outcome, (Run, errors.WorkflowError)) for outcome in outcomes), outcomes
    history = engine.get_run(storage, run.id).actions
    recorded = [(action.action, action.actor) for action in history]
    # Every change that succeeded is in the history once; none that failed is.
    for task_outcome, who in zip(outcomes, ("ann", "bob", "cat", "ada"), strict=True):
        expected = 0 if isinstance(task_outcome, errors.WorkflowError) else 1
        assert sum(actor == who for _, actor in recorded) == expected, (recorded, outcomes)
    audit = engine.audit_run(storage, run.id)
    assert (audit.first_invalid_seq, audit.state_mismatches) == (None, ())
