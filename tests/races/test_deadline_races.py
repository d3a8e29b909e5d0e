"""The sweeper racing human decisions: each run ends with exactly one outcome,
the sweeper's or the person's, never both, on each backend."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from chalicelib import engine
from chalicelib.domain import errors, events
from chalicelib.domain.lifecycle import OnDeadline, RunStatus
from chalicelib.domain.models import Deadline, Run, StepRule
from chalicelib.storage import Storage
from tests.support.event_stream import stream
from tests.support.races import run_together

RUNS = 8
T0 = "2030-01-02T03:04:05.000Z"
DUE = "2030-01-02T03:04:06.000Z"


def test_a_decision_racing_the_sweeper_leaves_exactly_one_outcome(
    race_storage_factory: Callable[[], Storage],
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(
        storage,
        "Race",
        "",
        [StepRule("A", deadline=Deadline(1, OnDeadline.REJECT)), StepRule("B")],
        lambda: T0,
    )
    runs = [engine.start_run(storage, workflow.id, f"r{i}", None, lambda: T0) for i in range(RUNS)]
    humans = [race_storage_factory() for _ in runs]
    sweeper = race_storage_factory()

    outcomes = run_together(
        [partial(engine.sweep, sweeper, lambda: DUE)]
        + [
            partial(engine.approve, s, run.id, "alice", clock=lambda: DUE)
            for s, run in zip(humans, runs, strict=True)
        ],
        warm_up=[partial(sweeper.get_run, runs[0].id)]
        + [partial(s.get_run, run.id) for s, run in zip(humans, runs, strict=True)],
    )

    swept, *decided = outcomes
    assert isinstance(swept, int), swept
    won_by_humans = 0
    for run, outcome in zip(runs, decided, strict=True):
        final = storage.get_run(run.id)
        (action,) = final.actions  # one outcome, never two
        bodies = stream(storage, events.run_subject(run.id))
        if isinstance(outcome, Run):
            won_by_humans += 1
            assert (action.actor, final.status) == ("alice", RunStatus.IN_PROGRESS)
            assert [b["type"] for b in bodies][2:] == [events.STEP_APPROVED, events.STEP_ACTIVATED]
        else:
            assert isinstance(outcome, errors.Conflict), outcome
            assert (action.actor, final.status) == ("system:deadline", RunStatus.REJECTED)
            assert [b["type"] for b in bodies][2:] == [events.STEP_EXPIRED, events.RUN_REJECTED]
    assert swept == RUNS - won_by_humans
    assert engine.sweep(storage, lambda: DUE) == 0
