"""What every storage adapter promises as an Idempotency-Key store, on each backend."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Optional

import pytest

from chalicelib.domain import errors, idempotency
from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse
from chalicelib.storage import Backend
from chalicelib.storage.sqlite.adapter import EXPIRED_KEYS_PER_CLAIM, SQLiteStorage
from tests.support.idempotency import (
    DONE,
    HELD_KEY_CASES,
    T0,
    check_claim,
    claim,
)

# -- the storage contract, every backend ---------------------------------------------


@HELD_KEY_CASES
def test_storage_decides_as_the_rules_do(
    storage: Backend, held: Optional[IdempotencyRecord], now: float, fingerprint: str, expected: Any
) -> None:
    if held is not None:
        first = IdempotencyClaim(
            "k", held.fingerprint, held.token, T0, held.lease_until, held.expires_at
        )
        assert storage.claim_idempotency_key(first) is None
        if held.response is not None:
            storage.save_idempotent_response(first, held.response)
    attempt = IdempotencyClaim("k", fingerprint, "second", now, now + 30, int(now) + 86400)

    check_claim(storage.claim_idempotency_key, attempt, expected)


def test_storage_lets_a_claim_repeat_itself(storage: Backend) -> None:
    # botocore retries a put whose answer was lost: it must find its own claim.
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    assert storage.claim_idempotency_key(first._replace(now=T0 + 1)) is None
    with pytest.raises(errors.RequestInProgress):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 2))


def test_storage_claims_a_free_key_once(storage: Backend) -> None:
    assert storage.claim_idempotency_key(claim("k", "/runs", {"a": 1})) is None
    with pytest.raises(errors.RequestInProgress):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 29))
    with pytest.raises(errors.IdempotencyMismatch):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 2}, T0 + 29))
    assert storage.claim_idempotency_key(claim("other", "/runs", {"a": 1})) is None


@pytest.mark.parametrize(
    "response",
    [DONE, StoredResponse(409, '{"error":"x"}')],
    ids=["with-location", "without-location"],
)
def test_storage_replays_the_saved_response(storage: Backend, response: StoredResponse) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    storage.save_idempotent_response(first, response)

    assert storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 3600)) == response
    with pytest.raises(errors.IdempotencyMismatch):
        storage.claim_idempotency_key(claim("k", "/runs/1", {"a": 1}, T0 + 3600))


def test_storage_keeps_a_response_larger_than_a_dynamodb_item(storage: Backend) -> None:
    # A run's answer holds its whole history: 200 decisions with 5,000-character
    # comments make a megabyte, over DynamoDB's 400 KB per item.
    actions = [
        {"id": n, "actor": f"approver {n}", "comment": f"{n} " + "looks fine " * 455}
        for n in range(200)
    ]
    response = StoredResponse(200, json.dumps({"id": 1, "actions": actions}))
    assert len(response.body) > 1_000_000
    first = claim("k", "/runs/1/approve", {"actor": "a"})
    assert storage.claim_idempotency_key(first) is None
    storage.save_idempotent_response(first, response)

    assert (
        storage.claim_idempotency_key(claim("k", "/runs/1/approve", {"actor": "a"}, T0 + 1))
        == response
    )


def test_storage_lets_a_retry_take_over_after_the_lease(storage: Backend) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    retry = claim("k", "/runs", {"a": 1}, T0 + idempotency.LEASE_SECONDS)
    assert storage.claim_idempotency_key(retry) is None

    # The first request, presumed dead, can no longer save or release the key.
    storage.save_idempotent_response(first, StoredResponse(200, '{"late":true}'))
    storage.release_idempotency_key(first)
    with pytest.raises(errors.RequestInProgress):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 31))
    storage.save_idempotent_response(retry, DONE)
    assert storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 32)) == DONE


def test_storage_forgets_a_released_key(storage: Backend) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    storage.release_idempotency_key(first)
    assert storage.claim_idempotency_key(claim("k", "/runs", {"b": 2}, T0 + 1)) is None


def test_storage_forgets_a_key_after_24_hours(storage: Backend) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    storage.save_idempotent_response(first, DONE)
    day_later = T0 + 1 + idempotency.TTL_SECONDS
    assert storage.claim_idempotency_key(claim("k", "/runs", {"b": 2}, day_later)) is None


def test_sqlite_deletes_expired_keys_a_few_per_claim(tmp_path: Any) -> None:
    path = str(tmp_path / "keys.sqlite3")
    storage = SQLiteStorage(path)
    for n in range(3 * EXPIRED_KEYS_PER_CLAIM):
        storage.claim_idempotency_key(claim(f"old-{n}", "/runs", {}, T0 + n))
    day_later = T0 + 1 + idempotency.TTL_SECONDS + 3 * EXPIRED_KEYS_PER_CLAIM

    storage.claim_idempotency_key(claim("new", "/runs", {}, day_later))

    with sqlite3.connect(path) as conn:
        keys = [key for (key,) in conn.execute("SELECT key FROM idempotency_keys ORDER BY key")]
        plan = " ".join(
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT key FROM idempotency_keys WHERE expires_at <= ? "
                "ORDER BY expires_at LIMIT 10",
                (day_later,),
            )
        )
    assert len(keys) == 2 * EXPIRED_KEYS_PER_CLAIM + 1
    assert f"old-{EXPIRED_KEYS_PER_CLAIM - 1}" not in keys and "old-0" not in keys
    assert "idempotency_keys_expiry" in plan
    storage.close()
