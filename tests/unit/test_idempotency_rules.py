"""The Idempotency-Key rules on their own: keys, fingerprints, claims, leases."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from chalicelib.domain import errors, idempotency
from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse
from tests.support.idempotency import (
    HELD_KEY_CASES,
    T0,
    check_claim,
    record,
)

# -- the rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["a", "!", "~", "x" * 255, "0b2c6f0e-7a1e-4a8b-9d2c-1f5e", "order:42/attempt#1"]
)
def test_keys_of_1_to_255_visible_ascii_characters_are_accepted(key: str) -> None:
    assert idempotency.checked_key(key) == key


@pytest.mark.parametrize(
    "key",
    ["", " ", "two words", "x" * 256, "tab\there", "new\nline", "clé", "\x7f", "\x00"],
    ids=[
        "empty",
        "space",
        "inner-space",
        "256-chars",
        "tab",
        "newline",
        "non-ascii",
        "delete",
        "nul",
    ],
)
def test_other_keys_are_invalid_input(key: str) -> None:
    with pytest.raises(errors.InvalidInput, match="Idempotency-Key"):
        idempotency.checked_key(key)


def test_json_bodies_are_compared_canonically() -> None:
    first = idempotency.fingerprint("POST", "/runs", b'{"workflow_id": 1, "title": "t\\u00e9"}')
    same = idempotency.fingerprint("POST", "/runs", '{"title":"té",\n "workflow_id":1}'.encode())
    assert first == same


@pytest.mark.parametrize(
    "other",
    [
        ("PUT", "/runs", b'{"workflow_id": 1}'),
        ("POST", "/runs/1", b'{"workflow_id": 1}'),
        ("POST", "/runs", b'{"workflow_id": 2}'),
        ("POST", "/runs", b'{"workflow_id": 1.0}'),
        ("POST", "/runs", b'{"workflow_id": 1, "title": null}'),
    ],
    ids=["method", "path", "value", "number-type", "extra-field"],
)
def test_requests_differing_in_method_path_or_body_differ(other: tuple[str, str, bytes]) -> None:
    assert idempotency.fingerprint(
        "POST", "/runs", b'{"workflow_id": 1}'
    ) != idempotency.fingerprint(*other)


def test_bodies_that_are_not_json_are_compared_as_bytes() -> None:
    assert idempotency.fingerprint("POST", "/runs", b"{nope") == idempotency.fingerprint(
        "POST", "/runs", b"{nope"
    )
    assert idempotency.fingerprint("POST", "/runs", b"{nope") != idempotency.fingerprint(
        "POST", "/runs", b"{nope "
    )
    assert idempotency.fingerprint("POST", "/runs", b"\xff") != idempotency.fingerprint(
        "POST", "/runs", b""
    )
    # A JSON string body and the same characters sent raw are different requests.
    assert idempotency.fingerprint("POST", "/runs", b'"x"') != idempotency.fingerprint(
        "POST", "/runs", b'json:"x"'
    )


def test_a_claim_is_leased_for_30_seconds_and_kept_for_24_hours() -> None:
    claimed = idempotency.new_claim("k", "fp", T0 + 0.5)
    assert claimed.lease_until == T0 + 30.5
    assert claimed.expires_at == T0 + 1 + 24 * 3600
    assert claimed.token != idempotency.new_claim("k", "fp", T0 + 0.5).token


@HELD_KEY_CASES
def test_what_a_held_key_means_for_a_new_request(
    held: Optional[IdempotencyRecord], now: float, fingerprint: str, expected: Any
) -> None:
    attempt = IdempotencyClaim("k", fingerprint, "second", now, now + 30, int(now) + 86400)

    def take(attempt: IdempotencyClaim) -> Optional[StoredResponse]:
        if idempotency.may_claim(held, attempt):
            return None
        assert held is not None
        return idempotency.replay(held, attempt)

    check_claim(take, attempt, expected)


def test_a_claim_may_take_the_key_it_already_holds() -> None:
    # A put retried by botocore after its answer was lost finds its own claim.
    attempt = IdempotencyClaim("k", "fp", "first", T0 + 1, T0 + 31, int(T0) + 86401)
    assert idempotency.may_claim(record(), attempt)


@pytest.mark.parametrize(
    "status, kept",
    [
        (200, True),
        (201, True),
        (400, True),
        (404, True),
        (409, True),
        (422, True),
        (500, False),
        (503, False),
    ],
)
def test_2xx_and_4xx_are_kept_5xx_are_not(status: int, kept: bool) -> None:
    assert idempotency.is_final(status) is kept
