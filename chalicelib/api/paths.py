"""The ids in a request's path, and how a value the client sent is quoted back.

Every route with an id in its path reads it here, and so does the access line
(chalicelib/api/access_log.py), on every request: this module is kept small
and apart from the parsing of bodies and query strings (validation.py,
queries.py), which a read such as GET /runs/{id} never needs.
"""

from __future__ import annotations

from chalicelib.domain import errors
from chalicelib.domain.models import MAX_ID

# A path id longer than this is not shown back in full in the 404.
SHOWN_ID_CHARACTERS = 40


def path_id(raw: str, kind: str) -> int:
    """A positive integer id from a URL path; anything else names nothing."""
    if not is_path_id(raw):
        raise errors.NotFound(f"{kind} {shown(raw)} not found: ids are positive integers")
    return int(raw)


def is_path_id(raw: str) -> bool:
    """Whether `raw` spells an id as the routes accept it: ASCII digits, no
    leading zero, at most MAX_ID (checked without int() of a long string)."""
    return (
        raw.isascii()
        and raw.isdigit()
        and not raw.startswith("0")
        and len(raw) <= 16
        and int(raw) <= MAX_ID
    )


def shown(raw: str) -> str:
    """`raw` quoted for a message, cut short if it is long."""
    if len(raw) <= SHOWN_ID_CHARACTERS:
        return repr(raw)
    return f"{raw[:SHOWN_ID_CHARACTERS]!r}... ({len(raw)} characters)"
