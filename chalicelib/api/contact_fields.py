"""The requests of contacts and action links: a principal in the path, a
contact's body, a link's form (chalicelib/api/validation.py has the rest).
No storage here: InvalidInput for what cannot be accepted."""

from __future__ import annotations

import re
from typing import Any, Optional

from chalicelib.api.validation import principal_name
from chalicelib.domain import errors
from chalicelib.domain.models import GROUP_PREFIX, USER_PREFIX
from chalicelib.domain.record import Record

MAX_EMAIL = 254
# One address, no display name and nothing a header could be split at: the
# document states the same pattern.
EMAIL_PATTERN = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+\.[^@\s<>,;\"]+")
# Slack's ids: a member (U..., W...) or a channel (C...).
SLACK_PATTERN = re.compile(r"[UWC][A-Z0-9]{2,20}")
CONTACT_FIELDS = ("email", "slack")
MAX_COMMENT = 5_000


class NewContact(Record):
    email: Optional[str]
    slack: Optional[str]


def principal(raw: str) -> str:
    """A principal in a path: "user:<name>" or "group:<name>" (the kind is
    required), percent-decoded where the server left it encoded."""
    from urllib.parse import unquote

    raw = unquote(raw)
    for kind in (USER_PREFIX, GROUP_PREFIX):
        if raw.startswith(kind):
            return kind + principal_name({"principal": raw}, "principal", kind)
    raise errors.InvalidInput("The principal must be 'user:<name>' or 'group:<name>'")


def new_contact(body: Any) -> NewContact:
    """PUT /contacts/{principal}: {"email"?, "slack"?} (at least one: the rule's)."""
    if not isinstance(body, dict):
        raise errors.InvalidInput("The request body must be a JSON object")
    unknown = sorted(set(body) - set(CONTACT_FIELDS))
    if unknown:
        raise errors.InvalidInput(f"Unknown field {unknown[0]!r}; allowed: email, slack")
    email = _matching(body, "email", EMAIL_PATTERN, MAX_EMAIL, "an email address")
    slack = _matching(body, "slack", SLACK_PATTERN, 21, "a Slack id (U..., W... or C...)")
    return NewContact(email, slack)


def _matching(
    body: dict[str, Any], name: str, pattern: re.Pattern[str], most: int, what: str
) -> Optional[str]:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > most or not pattern.fullmatch(value):
        raise errors.InvalidInput(f"{name!r} must be {what}")
    return value


def link_comment(form: dict[str, list[str]]) -> str:
    """The comment of a link's form (application/x-www-form-urlencoded)."""
    unknown = sorted(set(form) - {"comment"})
    if unknown:
        raise errors.InvalidInput(f"Unknown form field {unknown[0]!r}; allowed: comment")
    values = form.get("comment", [""])
    if len(values) != 1 or len(values[0]) > MAX_COMMENT:
        raise errors.InvalidInput(f"Give one 'comment' of at most {MAX_COMMENT} characters")
    return values[0]
