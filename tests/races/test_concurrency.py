"""Races: concurrent decisions never both advance a run; appends and creates stay consistent.

Two kinds of race:
- *Same snapshot*: the engine reads the clock after it has read the run and
  just before the conditional write, so a clock that waits on a Barrier holds
  every racer there until all of them have decided on the same state. Then
  exactly one may win each round; this is deterministic.
- *Free running*: racers loop until the run is finished, with no rendezvous,
  so reads and writes interleave however the scheduler and the backend let them.

Every thread race runs on each backend of RACE_BACKENDS, once with one storage
object shared by all threads and once with a storage per thread (opened by
`race_storage_factory`, as separate Lambda containers would have).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors, limits
from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import Run, Step, Workflow
from chalicelib.storage import Storage
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from tests.support import chain
from tests.support.event_stream import assert_run_stream_tells, stream
from tests.support.races import (
    THREADS,
    WAIT_SECONDS,
    Outcome,
    Rendezvous,
    rendezvous_clock,
    run_together,
)

PROCESSES = 4
STEPS = 5
FREE_RUNNING_RUNS = 3

Opener = Callable[[], Storage]
Attempts = list[tuple[str, Outcome]]

SHARING = pytest.mark.parametrize(
    "per_thread", [False, True], ids=["one-shared-storage", "storage-per-thread"]
)


# -- helpers -------------------------------------------------------------------------


def storages_for_threads(open_storage: Opener, first: Storage, per_thread: bool) -> list[Storage]:
    return [open_storage() if per_thread else first for _ in range(THREADS)]


def new_run(storage: Storage, steps: int = STEPS, name: str = "Race") -> tuple[Workflow, Run]:
    workflow = engine.create_workflow(
        storage, name, steps=[f"Step {n}" for n in range(1, steps + 1)]
    )
    return workflow, engine.start_run(storage, workflow.id, "Race")


def decide_on_same_snapshot(
    storage: Storage,
    storages: Sequence[Storage],
    run: Run,
    decision_of: Callable[[int], Callable[..., Run]],
) -> list[Attempts]:
    """Round after round until the run ends, every thread decides on the same state,
    naming the step it saw (a decision without expected_step_id would retry on
    the next step instead of losing)."""
    rounds: list[Attempts] = []
    for round_no in range(STEPS):
        seen = engine.get_run(storage, run.id)
        if seen.status != RunStatus.IN_PROGRESS:
            break
        rendezvous = Rendezvous(len(storages))
        actors = [f"round{round_no}-thread{i}" for i in range(len(storages))]
        tasks = [
            rendezvous.guard(
                partial(
                    decision_of(i),
                    s,
                    run.id,
                    actor,
                    expected_step_id=seen.current_step_id,
                    clock=rendezvous.clock,
                )
            )
            for i, (s, actor) in enumerate(zip(storages, actors, strict=True))
        ]
        warm_up = [partial(s.get_run, run.id) for s in storages]
        rounds.append(list(zip(actors, run_together(tasks, warm_up), strict=True)))
    return rounds


def approve_until_finished(storage: Storage, run_ids: Sequence[int], racer: str) -> Attempts:
    """Approve each run again and again until it is finished; every attempt's outcome."""
    attempts: Attempts = []
    for run_id in run_ids:
        for attempt in range(10 * STEPS * THREADS):  # a bound, far above what is needed
            actor = f"{racer}-run{run_id}-attempt{attempt}"
            try:
                run = engine.approve(storage, run_id, actor)
            except errors.StaleRun as exc:  # another racer moved it: try its next step
                attempts.append((actor, exc))
                continue
            except errors.Conflict as exc:  # the run is finished
                attempts.append((actor, exc))
                break
            attempts.append((actor, run))
            if run.status != RunStatus.IN_PROGRESS:
                break
    return attempts


def assert_every_attempt_won_or_conflicted(attempts: Attempts) -> None:
    unexpected = [
        (actor, outcome)
        for actor, outcome in attempts
        if not isinstance(outcome, (Run, errors.Conflict))
    ]
    assert not unexpected, unexpected


def assert_approved_once_per_step_in_order(final: Run, workflow: Workflow) -> None:
    assert final.status == RunStatus.COMPLETED and final.current_step is None
    assert [a.step_id for a in final.actions] == [s.id for s in workflow.steps]
    assert [a.action for a in final.actions] == ["approve"] * len(workflow.steps)


def assert_winners_match_history(final: Run, attempts: Attempts) -> None:
    """Every success is in the history exactly once, at the place its caller was
    told, and the history is one audit chain: no two winners extended one head."""
    chain.assert_chained(shape(final))
    wins = {actor: outcome for actor, outcome in attempts if isinstance(outcome, Run)}
    assert len(wins) == len(final.actions), (len(wins), len(final.actions))
    assert {action.actor for action in final.actions} == set(wins)
    for actor, told in wins.items():
        mine = told.actions[-1]
        assert mine.actor == actor
        assert final.actions[len(told.actions) - 1] == mine


# -- (a) concurrent approvals of one run, threads --------------------------------------


@SHARING
def test_approvals_on_the_same_snapshot_let_exactly_one_through_per_round(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    storage = race_storage_factory()
    workflow, run = new_run(storage)
    storages = storages_for_threads(race_storage_factory, storage, per_thread)

    rounds = decide_on_same_snapshot(storage, storages, run, lambda i: engine.approve)

    attempts = [attempt for round_ in rounds for attempt in round_]
    assert_every_attempt_won_or_conflicted(attempts)
    assert [sum(isinstance(o, Run) for _, o in round_) for round_ in rounds] == [1] * STEPS
    final = engine.get_run(storage, run.id)
    assert_approved_once_per_step_in_order(final, workflow)
    assert_winners_match_history(final, attempts)
    assert_run_stream_tells(storage, final, workflow)


@SHARING
def test_free_running_approvals_record_exactly_one_approval_per_step_in_order(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    storage = race_storage_factory()
    runs = [new_run(storage, name=f"Race {n}") for n in range(FREE_RUNNING_RUNS)]
    run_ids = [run.id for _, run in runs]
    storages = storages_for_threads(race_storage_factory, storage, per_thread)

    outcomes = run_together(
        [partial(approve_until_finished, s, run_ids, f"thread{i}") for i, s in enumerate(storages)],
        warm_up=[partial(s.get_run, run_ids[0]) for s in storages],
    )

    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes
    attempts = [attempt for per_thread_attempts in outcomes for attempt in per_thread_attempts]
    assert_every_attempt_won_or_conflicted(attempts)
    for workflow, run in runs:
        final = engine.get_run(storage, run.id)
        assert_approved_once_per_step_in_order(final, workflow)
        assert_winners_match_history(
            final, [(actor, o) for actor, o in attempts if f"-run{run.id}-" in actor]
        )
        assert_run_stream_tells(storage, final, workflow)


@SHARING
def test_approvals_and_rejections_on_the_same_snapshot_end_the_run_without_skipping_a_step(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    storage = race_storage_factory()
    workflow, run = new_run(storage)
    storages = storages_for_threads(race_storage_factory, storage, per_thread)

    # Three approvers for each rejecter, so that runs tend to get past the first step.
    rounds = decide_on_same_snapshot(
        storage, storages, run, lambda i: engine.reject if i % 4 == 0 else engine.approve
    )

    attempts = [attempt for round_ in rounds for attempt in round_]
    assert_every_attempt_won_or_conflicted(attempts)
    assert [sum(isinstance(o, Run) for _, o in round_) for round_ in rounds] == [1] * len(rounds)
    final = engine.get_run(storage, run.id)
    assert final.status in (RunStatus.COMPLETED, RunStatus.REJECTED) and final.current_step is None
    assert [a.step_id for a in final.actions] == [s.id for s in workflow.steps][
        : len(final.actions)
    ]
    kinds = [a.action for a in final.actions]
    if final.status == RunStatus.REJECTED:
        assert kinds == ["approve"] * (len(kinds) - 1) + ["reject"]
    else:
        assert kinds == ["approve"] * STEPS
    assert_winners_match_history(final, attempts)
    assert_run_stream_tells(storage, final, workflow)


@SHARING
def test_concurrent_approvals_of_different_runs_all_succeed(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    storage = race_storage_factory()
    workflow, _ = new_run(storage, steps=2)
    runs = [engine.start_run(storage, workflow.id, f"Run {i}") for i in range(THREADS)]
    storages = storages_for_threads(race_storage_factory, storage, per_thread)
    rendezvous = Rendezvous(THREADS)

    outcomes = run_together(
        [
            rendezvous.guard(partial(engine.approve, s, r.id, "a", clock=rendezvous.clock))
            for s, r in zip(storages, runs, strict=True)
        ],
        warm_up=[partial(s.get_run, r.id) for s, r in zip(storages, runs, strict=True)],
    )

    assert all(isinstance(outcome, Run) for outcome in outcomes), outcomes
    for run in runs:
        stored = engine.get_run(storage, run.id)
        assert stored.current_step == workflow.steps[1]
        assert [a.step_id for a in stored.actions] == [workflow.steps[0].id]


# -- (a2) decisions without expected_step_id: losing a write is not the caller's business --


@pytest.mark.parametrize(
    "racers, steps", [(24, 3), (THREADS, 5), (4, 6)], ids=["24-on-3", "16-on-5", "4-on-6"]
)
@SHARING
def test_concurrent_approvals_without_expected_step_give_exactly_min_n_s_successes(
    race_storage_factory: Opener, per_thread: bool, racers: int, steps: int
) -> None:
    storage = race_storage_factory()
    workflow, run = new_run(storage, steps=steps)
    storages = [race_storage_factory() if per_thread else storage for _ in range(racers)]

    outcomes = run_together(
        [partial(engine.approve, s, run.id, f"racer{i}") for i, s in enumerate(storages)],
        warm_up=[partial(s.get_run, run.id) for s in storages],
    )

    won = [outcome for outcome in outcomes if isinstance(outcome, Run)]
    ended = [
        o for o in outcomes if isinstance(o, errors.Conflict) and not isinstance(o, errors.StaleRun)
    ]
    assert len(won) == min(racers, steps), outcomes
    assert len(won) + len(ended) == racers, outcomes
    assert all(o.message == "Run is not in progress" for o in ended)
    final = engine.get_run(storage, run.id)
    assert [a.step_id for a in final.actions] == [s.id for s in workflow.steps][: len(won)]
    assert final.status == (RunStatus.COMPLETED if racers >= steps else RunStatus.IN_PROGRESS)
    assert_winners_match_history(final, [(run_.actions[-1].actor, run_) for run_ in won])


# -- (b) concurrent approvals of one run, processes (SQLite only) -----------------------
#
# SQLite only, on purpose: what a second process adds over a thread with its own
# storage is a second OS-level client of one file (SQLite's file locks and WAL
# index in shared memory), and a process needs a picklable way to open its
# storage, which for SQLite is the path. A DynamoDB storage per thread already is
# an independent client of the same table (the storage-per-thread variants above).


def process_approves_in_rounds(
    path: str, run_id: int, worker: int, barrier: Any, results: Any
) -> None:
    """In a spawned process: one approval per round, all processes on the same snapshot."""
    attempts: list[tuple[str, str, int]] = []
    unexpected: list[str] = []
    try:
        storage = SQLiteStorage(path)
        storage.get_run(run_id)  # connect before racing
        clock = rendezvous_clock(barrier)
        for round_no in range(STEPS):
            actor = f"round{round_no}-process{worker}"
            seen = storage.get_run(run_id).current_step_id
            try:
                run = engine.approve(storage, run_id, actor, expected_step_id=seen, clock=clock)
                attempts.append((actor, "won", len(run.actions)))
            except errors.Conflict:
                attempts.append((actor, "conflict", 0))
            barrier.wait(timeout=WAIT_SECONDS)  # the round is over for everyone
    except Exception as exc:  # reported to the parent, which asserts there is none
        unexpected.append(repr(exc))
        barrier.abort()
    results.put((attempts, unexpected))


def process_approves_until_finished(
    path: str, run_ids: list[int], worker: int, barrier: Any, results: Any
) -> None:
    """In a spawned process: approve each run until it is finished, free running."""
    attempts: list[tuple[str, str, int]] = []
    unexpected: list[str] = []
    try:
        storage = SQLiteStorage(path)
        storage.get_run(run_ids[0])  # connect before racing
        barrier.wait(timeout=WAIT_SECONDS)
        for actor, outcome in approve_until_finished(storage, run_ids, f"process{worker}"):
            if isinstance(outcome, Run):
                attempts.append((actor, "won", len(outcome.actions)))
            else:
                attempts.append((actor, "conflict", 0))
    except Exception as exc:  # reported to the parent, which asserts there is none
        unexpected.append(repr(exc))
        barrier.abort()
    results.put((attempts, unexpected))


def race_processes(
    target: Callable[..., None], path: str, run_arg: Any
) -> list[tuple[str, str, int]]:
    """Start PROCESSES spawned processes on `target`; all their attempts."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    processes = [
        context.Process(target=target, args=(path, run_arg, worker, barrier, results))
        for worker in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    # Drain the queue before joining: a child blocks on exit until its data is read.
    reports = [results.get(timeout=WAIT_SECONDS) for _ in processes]
    for process in processes:
        process.join(WAIT_SECONDS)
    assert [process.exitcode for process in processes] == [0] * PROCESSES
    assert [unexpected for _, unexpected in reports] == [[]] * PROCESSES
    return [attempt for attempts, _ in reports for attempt in attempts]


def assert_process_winners_match_history(final: Run, attempts: list[tuple[str, str, int]]) -> None:
    chain.assert_chained(shape(final))
    won = sorted((position, actor) for actor, outcome, position in attempts if outcome == "won")
    assert won == [(n, action.actor) for n, action in enumerate(final.actions, start=1)]


def test_approvals_from_several_processes_on_the_same_snapshot_let_exactly_one_through(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "race.sqlite3")
    storage = SQLiteStorage(path)
    workflow, run = new_run(storage)

    attempts = race_processes(process_approves_in_rounds, path, run.id)

    for round_no in range(STEPS):
        outcomes = [o for actor, o, _ in attempts if actor.startswith(f"round{round_no}-")]
        assert sorted(outcomes) == ["conflict"] * (PROCESSES - 1) + ["won"], round_no
    final = storage.get_run(run.id)
    assert_approved_once_per_step_in_order(final, workflow)
    assert_process_winners_match_history(final, attempts)
    storage.close()


def test_free_running_approvals_from_several_processes_record_one_approval_per_step(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "race.sqlite3")
    storage = SQLiteStorage(path)
    runs = [new_run(storage, name=f"Race {n}") for n in range(FREE_RUNNING_RUNS)]

    attempts = race_processes(process_approves_until_finished, path, [run.id for _, run in runs])

    for workflow, run in runs:
        final = storage.get_run(run.id)
        assert_approved_once_per_step_in_order(final, workflow)
        assert_process_winners_match_history(
            final, [a for a in attempts if f"-run{run.id}-" in a[0]]
        )
    storage.close()


# -- (c) concurrent appends to one workflow ----------------------------------------------


@pytest.mark.parametrize("existing", [0, 2], ids=["empty-workflow", "two-steps-already"])
@SHARING
def test_concurrent_appends_all_succeed_with_consecutive_step_orders(
    race_storage_factory: Opener, per_thread: bool, existing: int
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(
        storage, "Appends", steps=[f"Initial {n}" for n in range(existing)]
    )
    storages = storages_for_threads(race_storage_factory, storage, per_thread)

    outcomes = run_together(
        [
            partial(engine.append_step, s, workflow.id, f"Appended {i}")
            for i, s in enumerate(storages)
        ],
        warm_up=[partial(s.get_workflow, workflow.id) for s in storages],
    )

    assert all(isinstance(outcome, Step) for outcome in outcomes), outcomes
    appended: list[Step] = sorted(outcomes, key=lambda step: step.step_order)
    assert [step.step_order for step in appended] == list(
        range(existing + 1, existing + THREADS + 1)
    )
    assert len({step.id for step in appended}) == THREADS
    assert {step.name for step in appended} == {f"Appended {i}" for i in range(THREADS)}
    assert engine.get_workflow(storage, workflow.id).steps == workflow.steps + tuple(appended)
    added = stream(storage, f"workflows/{workflow.id}")[1:]
    assert [body["data"]["step"]["id"] for body in added] == [step.id for step in appended]


@SHARING
def test_appends_racing_for_a_workflows_last_step_leave_it_at_its_limit(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    """Each append is checked against the workflow as its racer read it, and
    written only after the last step it read: of racers that all read 99
    steps, one appends the 100th and the others, reading again, are refused."""
    storage = race_storage_factory()
    first = [f"Initial {n}" for n in range(limits.MAX_INITIAL_STEPS)]
    workflow = engine.create_workflow(storage, "Nearly full", steps=first)
    for n in range(limits.MAX_INITIAL_STEPS, limits.MAX_STEPS - 1):
        engine.append_step(storage, workflow.id, f"Appended {n}")
    workflow = engine.get_workflow(storage, workflow.id)
    storages = storages_for_threads(race_storage_factory, storage, per_thread)

    outcomes = run_together(
        [partial(engine.append_step, s, workflow.id, f"Last {i}") for i, s in enumerate(storages)],
        warm_up=[partial(s.get_workflow, workflow.id) for s in storages],
    )

    won = [outcome for outcome in outcomes if isinstance(outcome, Step)]
    assert [step.step_order for step in won] == [limits.MAX_STEPS], outcomes
    refused = [outcome for outcome in outcomes if not isinstance(outcome, Step)]
    assert all(isinstance(outcome, errors.Unprocessable) for outcome in refused), refused
    assert engine.get_workflow(storage, workflow.id).steps == (*workflow.steps, *won)


# -- (d) concurrent creates of one name ----------------------------------------------------


@SHARING
def test_concurrent_creates_of_one_name_give_exactly_one_workflow(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    storage = race_storage_factory()
    seed = engine.create_workflow(storage, "Seed")
    storages = storages_for_threads(race_storage_factory, storage, per_thread)
    # create_workflow reads the clock before it writes: all creates are then in flight.
    rendezvous = Rendezvous(THREADS)

    outcomes = run_together(
        [
            rendezvous.guard(
                partial(
                    engine.create_workflow,
                    s,
                    "Contested",
                    f"by thread {i}",
                    [f"Thread {i} step {n}" for n in range(1, 3)],
                    clock=rendezvous.clock,
                )
            )
            for i, s in enumerate(storages)
        ],
        warm_up=[partial(s.get_workflow, seed.id) for s in storages],
    )

    created = [outcome for outcome in outcomes if isinstance(outcome, Workflow)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, errors.Conflict)]
    assert (len(created), len(refused)) == (1, THREADS - 1), outcomes
    [winner] = created
    assert engine.get_workflow(storage, winner.id) == winner
    with pytest.raises(errors.Conflict):
        engine.create_workflow(storage, "Contested")


# -- (e) concurrent creates of different names ---------------------------------------------


@SHARING
def test_concurrent_creates_of_different_names_all_succeed_with_distinct_ids(
    race_storage_factory: Opener, per_thread: bool
) -> None:
    storage = race_storage_factory()
    seed = engine.create_workflow(storage, "Seed")
    storages = storages_for_threads(race_storage_factory, storage, per_thread)
    rendezvous = Rendezvous(THREADS)

    outcomes = run_together(
        [
            rendezvous.guard(
                partial(
                    engine.create_workflow,
                    s,
                    f"Workflow {i}",
                    steps=["First", "Second"],
                    clock=rendezvous.clock,
                )
            )
            for i, s in enumerate(storages)
        ],
        warm_up=[partial(s.get_workflow, seed.id) for s in storages],
    )

    assert all(isinstance(outcome, Workflow) for outcome in outcomes), outcomes
    created: list[Workflow] = outcomes
    assert len({workflow.id for workflow in created} | {seed.id}) == THREADS + 1
    assert len({step.id for workflow in created for step in workflow.steps}) == 2 * THREADS
    for workflow in created:
        assert engine.get_workflow(storage, workflow.id) == workflow


# -- (f) SQLite: first opening of a fresh file by several storages at once ---------------------

FRESH_FILE_ATTEMPTS = 200
FRESH_FILE_OPENERS = 4


def test_storages_opening_a_fresh_sqlite_file_at_once_all_work(tmp_path: Path) -> None:
    # The window is a few milliseconds wide, so try many fresh files; stop at the first failure.
    for attempt in range(FRESH_FILE_ATTEMPTS):
        path = str(tmp_path / f"fresh-{attempt}.sqlite3")
        storages = [SQLiteStorage(path) for _ in range(FRESH_FILE_OPENERS)]
        outcomes = run_together(
            [partial(engine.create_workflow, s, f"Workflow {i}") for i, s in enumerate(storages)]
        )
        failures = [o for o in outcomes if not isinstance(o, Workflow)]
        assert not failures, f"attempt {attempt}: {failures!r}"
