"""DynamoDB as it really behaves under concurrent writers: TransactionConflict.

Real DynamoDB cancels a transaction, or refuses a single-item write, that
touches an item another transaction is writing. moto answers one request at a
time and never does, so here the moto server's fault front cancels a share of
them at random, as a busy table would. Every documented outcome must hold:
the adapter retries with jittered backoff, then answers 503, and nothing is
ever half-written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors, idempotency
from chalicelib.domain.idempotency import StoredResponse
from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import Run, Step, Workflow
from chalicelib.storage import Backend
from scripts.moto_server import Fault, MotoServer
from tests.support.backends import dynamodb_race_backend, moto_server
from tests.support.races import THREADS, run_together

SHARE = 0.3  # of the writes refused as conflicting
CANCELLED = {
    "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
    "message": "Transaction cancelled [TransactionConflict, None]",
    "CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}],
}
CONFLICTING = {
    "__type": "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
    "message": "Transaction is ongoing for the item",
}


@pytest.fixture
def storages(tmp_path: Path, no_backoff: None) -> Iterator[list[Backend]]:
    """THREADS storages on one table of the moto server, a share of whose
    transactions and single-item writes conflict."""
    server: MotoServer = moto_server()
    with dynamodb_race_backend(tmp_path) as open_storage:
        opened = [open_storage() for _ in range(THREADS)]
        server.inject("TransactWriteItems", Fault(400, CANCELLED, share=SHARE))
        for operation in ("PutItem", "UpdateItem"):
            server.inject(operation, Fault(400, CONFLICTING, share=SHARE))
        try:
            yield opened
            assert sum(fault.seen for fault in server.faults.values()) > 0, "nothing conflicted"
        finally:
            server.faults.clear()


def documented(outcomes: list[Any], *kinds: type) -> None:
    unexpected = [outcome for outcome in outcomes if not isinstance(outcome, kinds)]
    assert not unexpected, unexpected


def test_concurrent_appends_under_conflicts_stay_consecutive(storages: list[Backend]) -> None:
    workflow = engine.create_workflow(storages[0], "Appends", steps=["First"])

    outcomes = run_together(
        [
            partial(engine.append_step, s, workflow.id, f"Appended {i}")
            for i, s in enumerate(storages)
        ]
    )

    documented(outcomes, Step, errors.Unavailable)
    appended = sorted(
        (o for o in outcomes if isinstance(o, Step)), key=lambda step: step.step_order
    )
    steps = engine.get_workflow(storages[0], workflow.id).steps
    assert [step.step_order for step in steps] == list(range(1, len(appended) + 2))
    assert steps[1:] == tuple(appended)


def test_concurrent_approvals_under_conflicts_decide_each_step_once(
    storages: list[Backend],
) -> None:
    workflow = engine.create_workflow(storages[0], "Decisions", steps=["A", "B", "C", "D"])
    run = engine.start_run(storages[0], workflow.id, "t")

    outcomes = run_together(
        [partial(engine.approve, s, run.id, f"racer{i}") for i, s in enumerate(storages)]
    )

    documented(outcomes, Run, errors.Conflict, errors.Unavailable)
    won = [o for o in outcomes if isinstance(o, Run)]
    final = engine.get_run(storages[0], run.id)
    assert [a.step_id for a in final.actions] == [s.id for s in workflow.steps][: len(won)]
    assert {a.actor for a in final.actions} == {o.actions[-1].actor for o in won}
    assert final.status == (RunStatus.COMPLETED if len(won) == 4 else RunStatus.IN_PROGRESS)


def test_concurrent_creates_of_one_name_under_conflicts_give_at_most_one(
    storages: list[Backend],
) -> None:
    outcomes = run_together(
        [
            partial(engine.create_workflow, s, "Contested", f"by {i}", ["a", "b"])
            for i, s in enumerate(storages)
        ]
    )

    documented(outcomes, Workflow, errors.Conflict, errors.Unavailable)
    created = [o for o in outcomes if isinstance(o, Workflow)]
    assert len(created) <= 1
    listed = storages[0].list_workflows(None, 100).items
    assert [w.name for w in listed] == [w.name for w in created]
    for workflow in created:
        assert engine.get_workflow(storages[0], workflow.id) == workflow


def test_concurrent_retries_of_one_key_under_conflicts_run_it_once(
    storages: list[Backend],
) -> None:
    workflow = engine.create_workflow(storages[0], "Keyed", steps=["A", "B"])
    run = engine.start_run(storages[0], workflow.id, "t")
    path = f"/runs/{run.id}/approve"
    fingerprint = idempotency.fingerprint("POST", path, b'{"actor":"alice"}')

    def approve(storage: Backend) -> StoredResponse:
        decided = engine.approve(storage, run.id, "alice")
        return StoredResponse(200, json.dumps(shape(decided)))

    def client(storage: Backend) -> list[Any]:
        attempts: list[Any] = []
        for _ in range(100):
            claim = idempotency.new_claim("same", fingerprint, time.time())
            try:
                attempts.append(idempotency.respond_once(storage, claim, partial(approve, storage)))
                return attempts
            except (errors.RequestInProgress, errors.Unavailable) as exc:
                attempts.append(exc)
                time.sleep(0.01)
        return attempts

    outcomes = run_together([partial(client, s) for s in storages])

    answered = [a for racer in outcomes for a in racer if isinstance(a, tuple)]
    assert len(answered) == THREADS, outcomes
    assert len([a for a, replayed in answered if not replayed]) == 1
    assert [a.actor for a in engine.get_run(storages[0], run.id).actions] == ["alice"]
