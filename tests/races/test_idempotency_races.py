"""Concurrent retries with one Idempotency-Key run the request once, on each race backend."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors, idempotency
from chalicelib.domain.idempotency import StoredResponse
from chalicelib.domain.models import Run
from chalicelib.storage import Backend
from tests.support.idempotency import (
    claim,
)
from tests.support.races import THREADS, run_together

# -- races ------------------------------------------------------------------------------


def approve_as_the_app_does(storage: Backend, run_id: int) -> StoredResponse:
    # A slow clock widens the window in which the others find the key in flight.
    def slow_clock() -> str:
        time.sleep(0.05)
        return engine.utc_now()

    run = engine.approve(storage, run_id, "alice", clock=slow_clock)
    return StoredResponse(200, json.dumps(shape(run), separators=(",", ":")))


def retry_until_answered(storage: Backend, run_id: int) -> list[Any]:
    """A client that retries while the key is in flight: each attempt's outcome."""
    path = f"/runs/{run_id}/approve"
    attempts: list[Any] = []
    for _ in range(200):
        try:
            attempts.append(
                idempotency.respond_once(
                    storage,
                    claim("same", path, {"actor": "alice"}, time.time()),
                    partial(approve_as_the_app_does, storage, run_id),
                )
            )
            return attempts
        except errors.RequestInProgress as exc:
            attempts.append(exc)
            time.sleep(0.01)
    return attempts


@pytest.mark.parametrize(
    "per_thread", [False, True], ids=["one-shared-storage", "storage-per-thread"]
)
def test_concurrent_retries_with_one_key_run_the_request_once(
    race_storage_factory: Callable[[], Backend], per_thread: bool
) -> None:
    storage = race_storage_factory()
    _, run = _new_run(storage)
    storages = [race_storage_factory() if per_thread else storage for _ in range(THREADS)]

    outcomes = run_together(
        [partial(retry_until_answered, each, run.id) for each in storages],
        warm_up=[partial(each.get_run, run.id) for each in storages],
    )

    assert all(isinstance(attempts, list) for attempts in outcomes), outcomes
    attempts = [attempt for racer in outcomes for attempt in racer]
    answered = [attempt for attempt in attempts if isinstance(attempt, tuple)]
    in_flight = [attempt for attempt in attempts if isinstance(attempt, errors.RequestInProgress)]
    assert len(answered) == THREADS and len(answered) + len(in_flight) == len(attempts)
    assert in_flight, "no racer found the key in flight: the race did not happen"
    firsts = [response for response, replayed in answered if not replayed]
    assert len(firsts) == 1, answered
    assert all(response == firsts[0] for response, _ in answered)
    final = storage.get_run(run.id)
    assert [action.actor for action in final.actions] == ["alice"]
    assert json.loads(firsts[0].body) == shape(final)


def _new_run(storage: Backend) -> tuple[Any, Run]:
    workflow = engine.create_workflow(storage, "Retried", steps=["A", "B"])
    return workflow, engine.start_run(storage, workflow.id, "t")
