"""Storms of approvals racing a return for changes, and a resubmit racing a
cancel: whatever the interleaving, one outcome holds. A return either came
before an approval (which is then refused: the run is returned) or after it;
the history is one chain in which every approval is counted in its round and
no approval follows a return in the same round. Threads on every backend of
RACE_BACKENDS, each with a storage of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Run, StepRule
from chalicelib.storage import Storage
from tests.support import chain
from tests.support.races import THREADS, run_together

Opener = Callable[[], Storage]
TEAM = frozenset({"team"})
STEPS = (StepRule("Board", ("group:team",), 4), StepRule("Sign-off", ("group:team",), 2))


def approving(storage: Storage, run_id: int, actor: str) -> list[Any]:
    """Approve as `actor` until the run leaves the round (returned or done)."""
    told: list[Any] = []
    for _ in range(200):
        try:
            run = engine.approve(storage, run_id, actor, groups=TEAM)
        except (errors.Conflict, errors.Unavailable) as exc:
            told.append(exc.message)
            if exc.message in ("Run is returned for changes", "Run is not in progress"):
                return told
            time.sleep(0.001)
            continue
        told.append(run)
        if run.status != RunStatus.IN_PROGRESS:
            return told
    raise AssertionError(f"{actor} never saw the round end")


def returning(storage: Storage, run_id: int, after: float) -> Any:
    time.sleep(after)
    try:
        return engine.return_run(storage, run_id, "reviewer", "Fix the quote", groups=TEAM)
    except errors.Conflict as exc:
        return exc.message


def assert_one_history(final: Run, quorums: dict[int, int]) -> None:
    """One chain; within a round, nothing is decided after its return; each
    step's approvals are distinct people, at most its quorum."""
    chain.assert_chained(shape(final))
    returned_in: set[int] = set()
    seats: dict[tuple[int, int], list[str]] = {}
    for action in final.actions:
        assert action.round not in returned_in or action.action == ActionKind.RESUBMIT, action
        if action.action == ActionKind.RETURN:
            returned_in.add(action.round)
        if action.action == ActionKind.APPROVE:
            seats.setdefault((action.round, action.step_id), []).append(action.actor)
    for (_, step_id), actors in seats.items():
        assert len(set(actors)) == len(actors), actors
        assert len(actors) <= quorums[step_id], actors


def test_a_return_racing_a_storm_of_approvals_leaves_one_outcome(
    race_storage_factory: Opener,
) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(storage, "Return storm", steps=STEPS)
    run = engine.start_run(storage, workflow.id, "Storm", "rita")
    storages = [race_storage_factory() for _ in range(THREADS)]

    outcomes = run_together(
        [
            *(partial(approving, s, run.id, f"approver{i}") for i, s in enumerate(storages[1:])),
            partial(returning, storages[0], run.id, 0.002),
        ],
        warm_up=[partial(s.get_run, run.id) for s in [*storages[1:], storages[0]]],
    )

    final = storage.get_run(run.id)
    assert_one_history(final, {step.id: step.required_approvals for step in workflow.steps})
    returned = outcomes[-1]
    if isinstance(returned, Run):
        # The return won its race: the run waits for its requester, and every
        # approval told "decided" is in the history before the return.
        assert final.status == RunStatus.RETURNED
        wins = [told for outcome in outcomes[:-1] for told in outcome if isinstance(told, Run)]
        back = next(
            i for i, action in enumerate(final.actions) if action.action == ActionKind.RETURN
        )
        assert all(len(won.actions) <= back for won in wins)
        assert final.current_step_approved_by == ()
    else:
        assert returned in ("Run is not in progress",), returned  # the run completed first
    again = engine.get_run(storage, run.id)
    assert again == final


def test_a_resubmit_racing_a_cancel_leaves_one_outcome(race_storage_factory: Opener) -> None:
    storage = race_storage_factory()
    workflow = engine.create_workflow(storage, "Resubmit race", steps=STEPS)
    run = engine.start_run(storage, workflow.id, "Race", "rita")
    engine.return_run(storage, run.id, "reviewer", "Fix it", groups=TEAM)
    storages = [race_storage_factory() for _ in range(THREADS)]

    def resubmit(s: Storage) -> Any:
        try:
            return engine.resubmit(s, run.id, "rita")
        except errors.Conflict as exc:
            return exc.message

    def cancel(s: Storage) -> Any:
        try:
            return engine.cancel(s, run.id, "rita", "Not needed")
        except errors.Conflict as exc:
            return exc.message

    tasks = [partial(resubmit if i % 2 else cancel, s) for i, s in enumerate(storages)]
    outcomes = run_together(tasks, warm_up=[partial(s.get_run, run.id) for s in storages])

    final = storage.get_run(run.id)
    wins = [outcome for outcome in outcomes if isinstance(outcome, Run)]
    kinds = [action.action for action in final.actions]
    assert kinds.count(ActionKind.RESUBMIT) <= 1 and kinds.count(ActionKind.CANCEL) <= 1
    if kinds[-1] == ActionKind.CANCEL:
        assert final.status == RunStatus.CANCELLED
        # A resubmit may have come first; a cancel after it is still the requester's.
        assert len(wins) == 1 + kinds.count(ActionKind.RESUBMIT)
    else:
        assert (final.status, final.round) == (RunStatus.IN_PROGRESS, 2)
        assert len(wins) == 1
    chain.assert_chained(shape(final))
