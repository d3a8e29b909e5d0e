"""Safe retries with an Idempotency-Key: the rules, and running a request once per key.

A POST may carry `Idempotency-Key`. The first request with a key claims it in
the storage for a lease, runs, and stores its response (every 2xx and 4xx:
outcomes a retry would only repeat); a 5xx, or a passing 4xx (a decision that
lost the race for its run as often as the engine tries, errors.Contended),
releases the key so that a retry runs again. Within TTL_SECONDS a retry of
the same request (method, path and body, see `fingerprint`) gets the stored
response; a different request with the key is refused, and so is a retry
while the first is still in flight.

A claim whose lease has run out may be taken over by a retry of the same
request: its request is presumed dead, as API Gateway gives up on any request
after 29 s. If it died after its change was written but before its response
was stored, the retry does the change again: that window is the residual risk.

Pure rules, and `respond_once`, which runs a request once per key over any
KeyStore (every storage adapter is one), as the engine's functions take the
storage.

Not AWS Lambda Powertools' idempotency utility: its lease is the Lambda's
remaining time (none under `chalice local` or in tests, so a dead request would
hold its key for the whole day), it reads datetime.now() where tests set the
clock, its DynamoDB layer puts every key of a single-table design under one
partition key, SQLite would need a persistence layer of our own anyway, and the
Lambda would have to bundle it, where it bundles nothing today.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from typing import Optional, Protocol

from chalicelib.domain import errors
from chalicelib.domain.names import canonical
from chalicelib.domain.record import Record

LOGGER = logging.getLogger("approval-workflows")
KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
# Longer than any request can run: API Gateway and the function (lambda_timeout
# in .chalice/config.json) both stop at 29 s.
LEASE_SECONDS = 30
TTL_SECONDS = 24 * 60 * 60

Clock = Callable[[], float]


class StoredResponse(Record):
    """A response kept for an Idempotency-Key: replayed as it was first sent."""

    status: int
    body: str  # the JSON text of the body
    location: Optional[str] = None


class IdempotencyClaim(Record):
    """One request's attempt to take an Idempotency-Key (times in epoch seconds)."""

    key: str
    fingerprint: str
    token: str  # this attempt's own, so that only it may save or release the key
    now: float
    lease_until: float
    expires_at: int


class IdempotencyRecord(Record):
    """What the store holds for a key: in flight until `response` is set."""

    fingerprint: str
    token: str
    lease_until: float
    expires_at: int
    response: Optional[StoredResponse] = None


class KeyStore(Protocol):
    """Where Idempotency-Keys are claimed and their responses kept; every storage
    adapter is one, so keys hold across processes and Lambda containers."""

    def claim_idempotency_key(self, claim: IdempotencyClaim) -> Optional[StoredResponse]:
        """Take claim.key for claim's request in one atomic write, where `may_claim`
        allows, and return None; otherwise write nothing and return the response
        to replay, or raise IdempotencyMismatch or RequestInProgress (`replay`)."""
        ...

    def save_idempotent_response(self, claim: IdempotencyClaim, response: StoredResponse) -> None:
        """Keep the response for claim.key, if the claim still holds the key."""
        ...

    def release_idempotency_key(self, claim: IdempotencyClaim) -> None:
        """Forget claim.key, if the claim still holds it, so that a retry runs again."""
        ...


def checked_key(raw: str) -> str:
    """The key if it is 1 to 255 visible ASCII characters; InvalidInput otherwise."""
    if (
        not 1 <= len(raw) <= MAX_KEY_LENGTH
        or not raw.isascii()
        or not raw.isprintable()
        or " " in raw
    ):
        raise errors.InvalidInput(
            f"{KEY_HEADER} must be 1 to {MAX_KEY_LENGTH} visible ASCII characters (0x21-0x7E)"
        )
    return raw


def scoped(key: str, actor: Optional[str]) -> str:
    """The key as it is claimed: a verified caller's keys are its own, so that no
    one can take another's key first (one person's, by canonical name). Keys
    hold no newline, so what follows the last one is the key, whatever the
    actor holds."""
    return key if actor is None else f"{canonical(actor)}\n{key}"


def fingerprint(method: str, path: str, body: bytes) -> str:
    """What makes two requests the same: method, path and body, a JSON body
    compared canonically (parsed, dumped with sorted keys), any other as bytes."""
    try:
        canonical = b"json:" + json.dumps(
            json.loads(body), sort_keys=True, separators=(",", ":")
        ).encode("ascii")
    except (ValueError, UnicodeDecodeError, RecursionError):
        canonical = b"raw:" + body
    # Imported here: hashlib loads OpenSSL, which requests without a key never need.
    import hashlib

    digest = hashlib.sha256(f"{method.upper()} {path}\n".encode())
    digest.update(canonical)
    return digest.hexdigest()


def new_claim(key: str, request_fingerprint: str, now: float) -> IdempotencyClaim:
    """A claim on `key` for one request, leased from `now`."""
    return IdempotencyClaim(
        key,
        request_fingerprint,
        os.urandom(16).hex(),
        now,
        now + LEASE_SECONDS,
        math.ceil(now) + TTL_SECONDS,
    )


def may_claim(record: Optional[IdempotencyRecord], claim: IdempotencyClaim) -> bool:
    """Whether `claim` may take its key over what the storage holds (None: nothing).

    The DynamoDB adapter states the same rule as a condition expression."""
    return (
        record is None
        or record.expires_at <= claim.now
        or (
            record.fingerprint == claim.fingerprint
            and record.response is None
            and (record.lease_until <= claim.now or record.token == claim.token)
        )
    )


def replay(record: IdempotencyRecord, claim: IdempotencyClaim) -> StoredResponse:
    """For a key `claim` may not take: the response to replay; IdempotencyMismatch
    if the key belongs to another request, RequestInProgress if it is in flight."""
    if record.fingerprint != claim.fingerprint:
        raise errors.IdempotencyMismatch()
    if record.response is None:
        raise errors.RequestInProgress()
    return record.response


def is_final(status: int) -> bool:
    """Whether a response is the request's outcome (kept) or a passing fault (not)."""
    return 200 <= status < 300 or 400 <= status < 500


def respond_once(
    store: KeyStore, claim: IdempotencyClaim, respond: Callable[[], StoredResponse]
) -> tuple[StoredResponse, bool]:
    """The response to the claimed request, and whether it is a replay: the stored
    one if the request was answered before, else respond()'s, kept if final."""
    stored = store.claim_idempotency_key(claim)
    if stored is not None:
        return stored, True
    try:
        response = respond()
    except BaseException:
        _release(store, claim)
        raise
    if not is_final(response.status):
        _release(store, claim)
        return response, False
    try:
        store.save_idempotent_response(claim, response)
    except errors.WorkflowError as exc:
        # The change is made: answer it, whatever keeping the answer met. The
        # key stays in flight until its lease ends, then a retry runs again
        # (the residual risk above).
        LOGGER.warning("Idempotency-Key response not kept (%s): %s", type(exc).__name__, exc)
    return response, False


def _release(store: KeyStore, claim: IdempotencyClaim) -> None:
    try:
        store.release_idempotency_key(claim)
    except errors.Unavailable:
        pass  # the lease ends on its own
