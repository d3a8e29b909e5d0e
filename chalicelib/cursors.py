"""Opaque page cursors: a list position, bound to its list and filter, signed.

A cursor is `<payload>.<mac>`, both unpadded URL-safe base64. The payload is
the compact JSON `[version, list, filter, position]`, the filter as given or,
where that would make the cursor longer than MAX_LENGTH (the names a list is
filtered by may be 200 letters, up to 12 characters each in JSON),
`{"filters_sha256": <digest of the filter>}`; the mac is HMAC-SHA256 of
the payload under the key WORKFLOW_CURSOR_SECRET configures: the value of that
variable (read on every call, so a new key takes effect at once and cursors
signed with the old one answer 400), or, on Lambda, the SSM parameter that
WORKFLOW_CURSOR_SECRET_PARAMETER names (read once per container:
chalicelib/secret_store.py). A cursor says nothing about the page size:
clients may change `limit` between pages.

No storage, no HTTP; the only input besides the arguments is that key.
"""

from __future__ import annotations

import base64
import binascii
import json
import string
from collections.abc import Mapping
from typing import Any, Optional, Union, cast

from chalicelib import secret_store
from chalicelib.domain import errors

SECRET_VARIABLE = "WORKFLOW_CURSOR_SECRET"
# Only for development and tests: anyone can read it here and forge cursors.
DEVELOPMENT_SECRET = "approval-workflows development cursor key; set WORKFLOW_CURSOR_SECRET"
VERSION = 1
# Ours are about 120 characters, at most this; longer ones are refused before any work.
MAX_LENGTH = 1_000
# The key of a filter bound by its digest: no list is filtered by a name like it.
DIGEST = "filters_sha256"

Filter = Mapping[str, Any]
# Where a list continues: after an id, or (the inbox) after a [time, id] pair.
Position = Union[int, list[Any]]

_BASE64URL = frozenset(string.ascii_letters + string.digits + "-_")
START_OVER = "pass next_cursor from the previous page unchanged, or omit cursor to start over"


def issue(list_name: str, filters: Filter, position: Position, secret: Optional[str] = None) -> str:
    """The cursor of the page that follows `position` in `list_name` under `filters`:
    always one that `position` takes back."""
    present = _present(filters)
    cursor = _sign(_payload(list_name, present, position), secret)
    if len(cursor) <= MAX_LENGTH:
        return cursor
    return _sign(_payload(list_name, {DIGEST: _digest(present)}, position), secret)


def position(
    cursor: str, list_name: str, filters: Filter, secret: Optional[str] = None
) -> Position:
    """The position `cursor` continues from; InvalidInput unless we issued it for
    exactly this list and these filters."""
    payload = _verified(cursor, secret)
    try:
        version, issued_for, issued_filters, at = json.loads(payload)
    except (ValueError, TypeError) as exc:  # signed by us, so only if the format changed
        raise _not_ours() from exc
    if version != VERSION or not _is_position(at):
        raise _not_ours()
    if issued_for != list_name:
        raise errors.InvalidInput(
            f"'cursor' belongs to the list of {issued_for}, not of {list_name}; {START_OVER}"
        )
    present = _present(filters)
    if isinstance(issued_filters, dict) and list(issued_filters) == [DIGEST]:
        if issued_filters[DIGEST] != _digest(present):
            raise errors.InvalidInput(
                f"'cursor' was issued for other filters than {_describe(present)}: "
                f"repeat the filters the first page had; {START_OVER}"
            )
    elif issued_filters != present:
        raise errors.InvalidInput(
            f"'cursor' was issued for {_describe(issued_filters)}, not for "
            f"{_describe(present)}: repeat the filters the first page had; {START_OVER}"
        )
    return cast(Position, at)


def _is_position(at: Any) -> bool:
    if isinstance(at, list):
        return len(at) == 2 and isinstance(at[0], str) and _is_position(at[1]) and at[1] > 0
    return isinstance(at, int) and not isinstance(at, bool)


def _present(filters: Filter) -> dict[str, Any]:
    return {name: value for name, value in filters.items() if value is not None}


def _payload(list_name: str, filters: Filter, position: Position) -> bytes:
    return json.dumps(
        [VERSION, list_name, filters, position], separators=(",", ":"), sort_keys=True
    ).encode()


def _digest(filters: Filter) -> str:
    # Imported here: only a cursor too long for its filters needs it.
    from chalicelib.domain import audit

    return audit.sha256_hex(audit.canonical(filters))


def _describe(filters: Mapping[str, Any]) -> str:
    if not filters:
        return "no filter"
    return "&".join(f"{name}={value}" for name, value in sorted(filters.items()))


def _sign(payload: bytes, secret: Optional[str]) -> str:
    return f"{_encode(payload)}.{_encode(_mac(payload, secret))}"


def _verified(cursor: str, secret: Optional[str]) -> bytes:
    """The payload of `cursor` if its mac is ours and it is spelt as we spell it."""
    encoded, dot, mac = cursor.partition(".")
    if (
        len(cursor) > MAX_LENGTH
        or not (dot and encoded and mac)
        or not _BASE64URL.issuperset(encoded + mac)
    ):
        raise _not_ours()
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError) as exc:
        raise _not_ours() from exc
    import hmac

    # Comparing whole strings, not decoded macs: base64 has several spellings of
    # the same bytes, and only the one we issued is ours.
    if not hmac.compare_digest(_sign(payload, secret), cursor):
        raise _not_ours()
    return payload


def _mac(payload: bytes, secret: Optional[str]) -> bytes:
    # Imported here: hashlib loads OpenSSL, about 3 ms that only list pages need.
    import hashlib
    import hmac

    key = (secret or secret_store.value(SECRET_VARIABLE) or DEVELOPMENT_SECRET).encode()
    return hmac.new(key, payload, hashlib.sha256).digest()


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _not_ours() -> errors.InvalidInput:
    return errors.InvalidInput(
        f"'cursor' is not one this service issued, or it was altered; {START_OVER}"
    )
