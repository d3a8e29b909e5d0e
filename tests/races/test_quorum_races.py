"""Quorum storms: many distinct approvers (and some rejecters) deciding one run at once.

Whatever the interleaving, every step the run passed holds exactly its
required_approvals approvals by distinct actors, no step is skipped, nothing
is approved after a rejection, and every caller told "decided" is in the
history where it was told. Threads on every backend of RACE_BACKENDS (SQLite,
DynamoDB on the single-request moto server), each with a storage of its own as
separate Lambda containers would have; and processes on one SQLite file.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Run, StepRule, Workflow
from chalicelib.storage import Storage
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from tests.support import chain
from tests.support.races import THREADS, WAIT_SECONDS, Rendezvous, run_together

PROCESSES = 4
TEAM = frozenset({"team"})
# Three steps with quorums: 3 + 2 + 4 approvals complete a run.
QUORUMS = (3, 2, 4)
# A racer gives up after this many attempts: a bound far above what is needed.
ATTEMPTS = 400

Opener = Callable[[], Storage]
# (actor, what the racer was told: a Run, or the error's class name and message)
Attempt = tuple[str, Any]


def quorum_run(storage: Storage, name: str = "Quorum storm") -> tuple[Workflow, Run]:
    steps = [StepRule(f"Step {n}", ("group:team",), quorum) for n, quorum in enumerate(QUORUMS, 1)]
    workflow = engine.create_workflow(storage, name, steps=steps)
    return workflow, engine.start_run(storage, workflow.id, "Storm", requested_by="requester")


def storm(storage: Storage, run_id: int, actor: str, rejects_after: float = -1.0) -> list[Attempt]:
    """Approve the run as `actor` at every step it reaches (or, with rejects_after
    >= 0, reject it once after that many seconds) until it has ended."""
    attempts: list[Attempt] = []
    if rejects_after >= 0:
        time.sleep(rejects_after)
    for _ in range(ATTEMPTS):
        decide = engine.reject if rejects_after >= 0 else engine.approve
        try:
            run = decide(storage, run_id, actor, groups=TEAM)
        except (errors.Conflict, errors.Unavailable) as exc:
            attempts.append((actor, (type(exc).__name__, exc.message)))
            if exc.message == "Run is not in progress":
                return attempts
            time.sleep(random.uniform(0, 0.002))  # approved this step: wait for the next
            continue
        attempts.append((actor, run))
        if rejects_after >= 0 or run.status != "in_progress":
            return attempts
    raise AssertionError(f"{actor} never saw the run end")


def assert_quorums_held(final: Run, workflow: Workflow) -> None:
    """Every step passed has exactly its quorum of distinct approvers, in step
    order, none skipped; nothing follows a rejection; one audit chain."""
    chain.assert_chained(shape(final))
    visited: list[int] = []
    for action in final.actions:
        if not visited or visited[-1] != action.step_id:
            visited.append(action.step_id)
    assert visited == [step.id for step in workflow.steps][: len(visited)], visited
    for step in workflow.steps[: len(visited)]:
        approvals = [
            a.actor
            for a in final.actions
            if a.step_id == step.id and a.action == ActionKind.APPROVE
        ]
        assert len(set(approvals)) == len(approvals), approvals
        passed = step.id != visited[-1] or final.status == RunStatus.COMPLETED
        if passed:
            assert len(approvals) == step.required_approvals, (step.name, approvals)
        else:
            assert len(approvals) < step.required_approvals, (step.name, approvals)
    rejections = [a for a in final.actions if a.action == ActionKind.REJECT]
    if final.status == RunStatus.COMPLETED:
        assert not rejections and len(visited) == len(workflow.steps)
    else:
        assert final.status == RunStatus.REJECTED
        assert rejections == [final.actions[-1]], final.actions


def assert_told_as_recorded(final: Run, attempts: Sequence[Attempt]) -> None:
    """Each caller told "decided" is in the history once, where it was told."""
    wins = [(actor, told) for actor, told in attempts if isinstance(told, Run)]
    assert len(wins) == len(final.actions), (len(wins), len(final.actions))
    for actor, told in wins:
        mine = told.actions[-1]
        assert mine.actor == actor
        assert final.actions[len(told.actions) - 1] == mine
    refusals = {told[1] for _, told in attempts if not isinstance(told, Run)}
    allowed = ("Run is not in progress", "already approved step", "Too many decisions")
    assert all(any(text in refusal for text in allowed) for refusal in refusals), refusals


def test_a_storm_of_distinct_approvers_meets_each_quorum_exactly(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow, run = quorum_run(storage)
    storages = [race_storage_factory() for _ in range(THREADS)]

    outcomes = run_together(
        [partial(storm, s, run.id, f"approver{i}") for i, s in enumerate(storages)],
        warm_up=[partial(s.get_run, run.id) for s in storages],
    )

    attempts = [attempt for outcome in outcomes for attempt in outcome]
    final = storage.get_run(run.id)
    assert final.status == RunStatus.COMPLETED
    assert_quorums_held(final, workflow)
    assert_told_as_recorded(final, attempts)


def test_a_storm_with_rejecters_ends_once_and_approves_nothing_after(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow, run = quorum_run(storage)
    storages = [race_storage_factory() for _ in range(THREADS)]
    rejecters = {3: 0.01, 11: 0.03}

    outcomes = run_together(
        [
            partial(storm, s, run.id, f"racer{i}", rejecters.get(i, -1.0))
            for i, s in enumerate(storages)
        ],
        warm_up=[partial(s.get_run, run.id) for s in storages],
    )

    attempts = [attempt for outcome in outcomes for attempt in outcome]
    final = storage.get_run(run.id)
    assert_quorums_held(final, workflow)
    assert_told_as_recorded(final, attempts)


# -- processes on one SQLite file --------------------------------------------------------


def process_storm(path: str, run_id: int, worker: int, barrier: Any, results: Any) -> None:
    """In a spawned process: several approvers of its own storm the run."""
    reports: list[tuple[str, str, int]] = []
    unexpected: list[str] = []
    try:
        storages = [SQLiteStorage(path) for _ in range(THREADS // PROCESSES)]
        for storage in storages:
            storage.get_run(run_id)  # connect before racing
        barrier.wait(timeout=WAIT_SECONDS)
        outcomes = run_together(
            [partial(storm, s, run_id, f"p{worker}-a{i}") for i, s in enumerate(storages)]
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            for actor, told in outcome:
                if isinstance(told, Run):
                    reports.append((actor, "won", len(told.actions)))
                else:
                    reports.append((actor, told[1], 0))
    except Exception as exc:  # reported to the parent, which asserts there is none
        unexpected.append(repr(exc))
        barrier.abort()
    results.put((reports, unexpected))


def test_a_storm_from_several_processes_meets_each_quorum_exactly(tmp_path: Path) -> None:
    path = str(tmp_path / "storm.sqlite3")
    storage = SQLiteStorage(path)
    workflow, run = quorum_run(storage)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    processes = [
        context.Process(target=process_storm, args=(path, run.id, worker, barrier, results))
        for worker in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    reports = [results.get(timeout=WAIT_SECONDS) for _ in processes]
    for process in processes:
        process.join(WAIT_SECONDS)

    assert [unexpected for _, unexpected in reports] == [[]] * PROCESSES
    final = storage.get_run(run.id)
    assert final.status == RunStatus.COMPLETED
    assert_quorums_held(final, workflow)
    won = sorted((n, actor) for report, _ in reports for actor, told, n in report if told == "won")
    assert won == [(n, action.actor) for n, action in enumerate(final.actions, start=1)]
    storage.close()


@pytest.mark.parametrize("required", [2, 5])
def test_approvals_read_at_once_cannot_both_count_toward_a_quorum(
    race_storage_factory: Opener, required: int
) -> None:
    """Every approver reads the run before any of them writes (a rendezvous
    clock on each racer's first attempt), so each write after the first finds
    the history moved and decides again on what it then reads."""
    storage = race_storage_factory()
    board = StepRule("Board", (), required)
    workflow = engine.create_workflow(storage, f"Board of {required}", steps=[board, "After"])
    run = engine.start_run(storage, workflow.id, "Snapshot")
    racers = required + 2
    storages = [race_storage_factory() for _ in range(racers)]
    rendezvous = Rendezvous(racers)
    first = threading.local()

    def clock() -> str:
        if getattr(first, "passed", False):
            return engine.utc_now()  # a retry must not wait for the others
        first.passed = True
        return rendezvous.clock()

    outcomes = run_together(
        [
            rendezvous.guard(partial(engine.approve, s, run.id, f"m{i}", clock=clock))
            for i, s in enumerate(storages)
        ],
        warm_up=[partial(s.get_run, run.id) for s in storages],
    )

    final = storage.get_run(run.id)
    assert final.status == RunStatus.COMPLETED
    assert_quorums_held(final, workflow)
    # The quorum, then the one approval that completed "After"; the last racer
    # found the run ended (or, under heavy contention, gave up with a 503).
    decided = [outcome for outcome in outcomes if isinstance(outcome, Run)]
    assert len(decided) == required + 1, outcomes
    for outcome in outcomes:
        if not isinstance(outcome, Run):
            assert isinstance(outcome, (errors.Conflict, errors.Unavailable)), outcome
