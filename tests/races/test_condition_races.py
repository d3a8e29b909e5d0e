"""Storms on runs whose next steps do not apply: the approval that completes a
step also records the skips after it, in the same write, so whatever the
interleaving every step is decided or skipped exactly once, in step order,
and the chain holds. Threads on every backend of RACE_BACKENDS, each with a
storage of its own as separate Lambda containers would have."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Run, StepRule
from chalicelib.storage import Storage
from tests.support import chain
from tests.support.races import THREADS, Rendezvous, run_together

Opener = Callable[[], Storage]
TEAM = frozenset({"team"})
NEVER = {">": [{"var": "amount"}, 10000]}
ALWAYS = {">=": [{"var": "amount"}, 0]}
# Quorums of 2 with steps that do not apply around them: A, (B), C, (D), (E).
STEPS = (
    StepRule("A", ("group:team",), 2),
    StepRule("B", when=NEVER),
    StepRule("C", ("group:team",), 2, when=ALWAYS),
    StepRule("D", when=NEVER),
    StepRule("E", ("group:team",), when=NEVER),
)
ATTEMPTS = 400


def storm(storage: Storage, run_id: int, actor: str) -> list[Any]:
    """Approve as `actor` at every step the run reaches, until it has ended."""
    told: list[Any] = []
    for _ in range(ATTEMPTS):
        try:
            run = engine.approve(storage, run_id, actor, groups=TEAM)
        except (errors.Conflict, errors.Unavailable) as exc:
            told.append(exc.message)
            if exc.message == "Run is not in progress":
                return told
            time.sleep(0.001)
            continue
        told.append(run)
        if run.status != "in_progress":
            return told
    raise AssertionError(f"{actor} never saw the run end")


@pytest.mark.parametrize("first_applies", [True, False], ids=["first-applies", "first-skipped"])
def test_a_storm_records_each_step_once_in_order_past_the_skipped_ones(
    race_storage_factory: Opener, first_applies: bool
) -> None:
    storage = race_storage_factory()
    steps = STEPS if first_applies else (StepRule("Z", when=NEVER), *STEPS)
    workflow = engine.create_workflow(storage, "Skips", steps=steps)
    run = engine.start_run(storage, workflow.id, "Storm", "rita", data={"amount": 5})
    storages = [race_storage_factory() for _ in range(THREADS)]

    outcomes = run_together(
        [partial(storm, s, run.id, f"approver{i}") for i, s in enumerate(storages)],
        warm_up=[partial(s.get_run, run.id) for s in storages],
    )

    final = storage.get_run(run.id)
    assert final.status == RunStatus.COMPLETED
    names = {step.id: step.name for step in workflow.steps}
    path = [(names[action.step_id], action.action) for action in final.actions]
    skipped_first = [] if first_applies else [("Z", ActionKind.SKIP)]
    assert path == [
        *skipped_first,
        ("A", ActionKind.APPROVE),
        ("A", ActionKind.APPROVE),
        ("B", ActionKind.SKIP),
        ("C", ActionKind.APPROVE),
        ("C", ActionKind.APPROVE),
        ("D", ActionKind.SKIP),
        ("E", ActionKind.SKIP),
    ]
    approvals = [action.actor for action in final.actions if action.action == ActionKind.APPROVE]
    assert len(set(approvals[:2])) == 2 and len(set(approvals[2:])) == 2
    chain.assert_chained(shape(final))
    wins = [told for outcome in outcomes for told in outcome if isinstance(told, Run)]
    assert len(wins) == len(approvals)
    for won in wins:
        # What the winner was told is the history's prefix it wrote.
        assert final.actions[: len(won.actions)] == won.actions


def test_racing_starts_of_runs_that_skip_their_first_steps_each_chain_their_skips(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(
        storage, "Skips at start", steps=[StepRule("Z", when=NEVER), StepRule("A")]
    )
    storages = [race_storage_factory() for _ in range(THREADS)]
    meeting = Rendezvous(THREADS)

    outcomes = run_together(
        [
            meeting.guard(
                partial(
                    engine.start_run,
                    s,
                    workflow.id,
                    f"Run {i}",
                    None,
                    meeting.clock,
                    {"amount": i},
                )
            )
            for i, s in enumerate(storages)
        ]
    )

    assert all(isinstance(outcome, Run) for outcome in outcomes), outcomes
    assert len({run.id for run in outcomes}) == THREADS
    for started in outcomes:
        stored = storage.get_run(started.id)
        assert [(a.step_name, a.action) for a in stored.actions] == [("Z", ActionKind.SKIP)]
        assert stored.current_step is not None and stored.current_step.name == "A"
        chain.assert_chained(shape(stored))
