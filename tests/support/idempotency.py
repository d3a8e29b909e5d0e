"""What the Idempotency-Key tests share: a still clock, claims as the app makes
them, and the table of what a held key means for a new request."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Optional

import pytest

from chalicelib.domain import errors, idempotency
from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse

T0 = 1_900_000_000.0
IN_PROGRESS = "A request with this Idempotency-Key is still in progress; retry shortly"


class FakeClock:
    """Seconds since the epoch, standing still until a test moves them."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def claim(key: str, path: str, body: Any, now: float = T0) -> IdempotencyClaim:
    """The claim the app makes for POST `path` with `body`."""
    raw = json.dumps(body).encode("utf-8")
    return idempotency.new_claim(key, idempotency.fingerprint("POST", path, raw), now)


def record(
    fingerprint: str = "fp",
    token: str = "first",
    lease_until: float = T0 + 30,
    expires_at: int = int(T0) + 86400,
    response: Optional[StoredResponse] = None,
) -> IdempotencyRecord:
    return IdempotencyRecord(fingerprint, token, lease_until, expires_at, response)


DONE = StoredResponse(201, '{"id":1}', "/runs/1")


# (what the storage holds, when a request comes, its fingerprint, what it gets)
HELD_KEY_CASES = pytest.mark.parametrize(
    "held, now, fingerprint, expected",
    [
        (None, T0, "fp", "claim"),
        (record(), T0 + 1, "fp", IN_PROGRESS),
        (record(), T0 + 29.9, "fp", IN_PROGRESS),
        (record(), T0 + 30, "fp", "claim"),
        (record(), T0 + 30, "other", errors.IdempotencyMismatch),
        (record(), T0 + 1, "other", errors.IdempotencyMismatch),
        (record(response=DONE), T0 + 1, "fp", DONE),
        (record(response=DONE), T0 + 3600, "fp", DONE),
        (record(response=DONE), T0 + 1, "other", errors.IdempotencyMismatch),
        (record(response=DONE), T0 + 86399, "fp", DONE),
        (record(response=DONE), T0 + 86400, "other", "claim"),
        (record(), T0 + 86400, "other", "claim"),
    ],
    ids=[
        "free",
        "in-flight",
        "lease-nearly-over",
        "lease-over",
        "lease-over-other-request",
        "other-request",
        "answered",
        "answered-an-hour-ago",
        "answered-other-request",
        "answered-nearly-a-day-ago",
        "expired",
        "expired-in-flight",
    ],
)


def check_claim(
    take: Callable[[IdempotencyClaim], Optional[StoredResponse]],
    attempt: IdempotencyClaim,
    expected: Any,
) -> None:
    """That taking `attempt` claims (None), replays or refuses as `expected` says."""
    if expected == "claim":
        assert take(attempt) is None
    elif expected == IN_PROGRESS:
        with pytest.raises(errors.RequestInProgress, match="still in progress"):
            take(attempt)
    elif isinstance(expected, StoredResponse):
        assert take(attempt) == expected
    else:
        with pytest.raises(expected):
            take(attempt)
