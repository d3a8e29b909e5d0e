"""Page cursors: opaque, URL-safe, signed, bound to their list and filter."""

from __future__ import annotations

import base64
import json
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib import cursors
from chalicelib.domain import errors

URL_SAFE = re.compile(r"[A-Za-z0-9_.-]+")
RUN_FILTERS = {"workflow_id": 7, "status": "completed"}


@pytest.fixture(autouse=True)
def no_configured_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cursors.SECRET_VARIABLE, raising=False)
    monkeypatch.delenv(cursors.SECRET_VARIABLE + "_PARAMETER", raising=False)


def refused(cursor: str, list_name: str = "runs", filters: cursors.Filter = RUN_FILTERS) -> str:
    """The message of the InvalidInput that reading `cursor` raises."""
    with pytest.raises(errors.InvalidInput) as raised:
        cursors.position(cursor, list_name, filters)
    return raised.value.message


def test_a_cursor_gives_back_the_position_it_was_issued_for() -> None:
    cursor = cursors.issue("runs", RUN_FILTERS, 1234)

    assert cursors.position(cursor, "runs", RUN_FILTERS) == 1234


def test_a_cursor_is_a_url_safe_string_without_padding() -> None:
    cursor = cursors.issue("workflows", {}, 2**53 - 1)

    assert URL_SAFE.fullmatch(cursor)
    assert "=" not in cursor


def test_absent_filters_are_the_same_as_no_filter() -> None:
    cursor = cursors.issue("runs", {"workflow_id": None, "status": None}, 5)

    assert cursors.position(cursor, "runs", {}) == 5


def test_every_single_character_change_is_refused() -> None:
    cursor = cursors.issue("runs", RUN_FILTERS, 99)
    alphabet = string.ascii_letters + string.digits + "-_."

    for index, char in enumerate(cursor):
        flipped = alphabet[(alphabet.index(char) + 1) % len(alphabet)]
        assert "not one this service issued" in refused(
            cursor[:index] + flipped + cursor[index + 1 :]
        )


def test_a_position_rewritten_without_the_key_is_refused() -> None:
    cursor = cursors.issue("runs", RUN_FILTERS, 99)
    payload = json.dumps(
        [cursors.VERSION, "runs", RUN_FILTERS, 5], separators=(",", ":"), sort_keys=True
    ).encode()
    forged = base64.urlsafe_b64encode(payload).rstrip(b"=").decode() + cursor[cursor.index(".") :]

    assert "not one this service issued" in refused(forged)


def test_another_spelling_of_the_same_bytes_is_refused() -> None:
    cursor = cursors.issue("runs", RUN_FILTERS, 99)
    # 32 mac bytes are 43 base64 characters: the last one carries 2 unused bits.
    last = cursor[-1]
    same_bytes = next(
        char
        for char in string.ascii_letters + string.digits + "-_"
        if char != last
        and base64.urlsafe_b64decode(f"AA{char}=") == base64.urlsafe_b64decode(f"AA{last}=")
    )

    assert "not one this service issued" in refused(cursor[:-1] + same_bytes)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "abc",
        ".",
        "a.",
        ".b",
        "a.b",
        "a.b.c",
        "!!!.???",
        "é.é",
        "a b.c",
        "a=.b=",
        "W10.AAAA",
        "x" * 5000 + ".y",
    ],
)
def test_garbage_is_refused(garbage: str) -> None:
    assert "omit cursor" in refused(garbage)


def test_a_cursor_of_another_list_is_refused_naming_both() -> None:
    cursor = cursors.issue("workflows", {}, 3)

    message = refused(cursor, "runs", {})
    assert "workflows" in message and "runs" in message


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"workflow_id": 7},
        {"status": "completed"},
        {"workflow_id": 8, "status": "completed"},
        {"workflow_id": 7, "status": "rejected"},
    ],
    ids=["none", "workflow-only", "status-only", "other-workflow", "other-status"],
)
def test_a_cursor_for_other_filters_is_refused(filters: cursors.Filter) -> None:
    cursor = cursors.issue("runs", RUN_FILTERS, 3)

    message = refused(cursor, "runs", filters)
    assert "status=completed&workflow_id=7" in message


def test_the_key_is_read_from_the_environment_on_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    development = cursors.issue("runs", {}, 3)
    monkeypatch.setenv(cursors.SECRET_VARIABLE, "production key")
    production = cursors.issue("runs", {}, 3)

    assert production != development
    assert cursors.position(production, "runs", {}) == 3
    assert "not one this service issued" in refused(development, "runs", {})


# The names a list may be filtered by: up to 200 letters, any of them (JSON
# writes one outside the BMP as 12 characters).
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200)


@settings(max_examples=150, deadline=None)
@given(delegator=NAMES, delegate=NAMES, position=st.integers(1, 2**53 - 1))
def test_every_cursor_issued_is_taken_back_and_fits(
    delegator: str, delegate: str, position: int
) -> None:
    filters = {
        "delegator": delegator,
        "delegate": delegate,
        "active_at": "2026-12-24T10:00:00.000Z",
    }
    cursor = cursors.issue("delegations", filters, position)

    assert len(cursor) <= cursors.MAX_LENGTH and URL_SAFE.fullmatch(cursor)
    assert cursors.position(cursor, "delegations", filters) == position


def test_a_cursor_bound_by_the_digest_of_its_filters_refuses_others() -> None:
    filters = {"delegator": "\U0001f600" * 200}
    cursor = cursors.issue("delegations", filters, 3)
    encoded = cursor.partition(".")[0]
    payload = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    assert list(payload[2]) == [cursors.DIGEST]

    for other in ({}, {"delegator": "\U0001f600" * 199}, {**filters, "delegate": "dave"}):
        assert "issued for other filters" in refused(cursor, "delegations", other)
    altered = cursor[:-1] + ("B" if cursor.endswith("A") else "A")
    assert "not one this service issued" in refused(altered, "delegations", filters)
