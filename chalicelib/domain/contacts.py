"""Contacts: where a principal is told what waits for them. Pure.

    principal   "user:<name>" or "group:<name>" (names by chalicelib/domain/names.py)
    email       an address, for a user or a group's shared mailbox
    slack       a user's Slack user id (U..., W...), a group's channel id (C...)

Who may manage one: with verified callers (jwt), an administrator any, a user
their own `user:` contact only; where callers are not verified, anyone.
"""

from __future__ import annotations

from typing import Optional

from chalicelib.domain import errors
from chalicelib.domain.models import GROUP_PREFIX, USER_PREFIX, Contact
from chalicelib.domain.names import canonical_principal, same

# What a Slack id of each kind of principal starts with: a user's member id
# (U, or W on Enterprise Grid), a group's channel.
SLACK_USER_PREFIXES = ("U", "W")
SLACK_CHANNEL_PREFIXES = ("C",)


def key(principal: str) -> str:
    """The key two spellings of one principal share (what the stores index)."""
    return canonical_principal(principal)


def check_manager(principal: str, actor: Optional[str], admin: bool) -> None:
    """Forbidden unless `actor` (None: callers are not verified) may manage
    `principal`'s contact: an administrator any, a user their own."""
    if actor is None or admin:
        return
    if principal.startswith(USER_PREFIX) and same(principal[len(USER_PREFIX) :], actor):
        return
    raise errors.Forbidden(
        f"Only {principal!r} themselves or an administrator may manage this contact"
        if principal.startswith(USER_PREFIX)
        else "Only an administrator may manage a group's contact"
    )


def check_lister(actor: Optional[str], admin: bool) -> None:
    """Forbidden unless `actor` (None: callers are not verified) may list every contact."""
    if actor is not None and not admin:
        raise errors.Forbidden("Only an administrator may list the contacts")


def contact(
    principal: str, email: Optional[str], slack: Optional[str], at: str, by: Optional[str]
) -> Contact:
    """The contact to store; Unprocessable (a rule no schema states) without a
    way to reach it, or with a Slack id of the other kind of principal."""
    if email is None and slack is None:
        raise errors.Unprocessable("A contact needs 'email', 'slack' or both")
    if slack is not None:
        wanted = (
            SLACK_CHANNEL_PREFIXES if principal.startswith(GROUP_PREFIX) else SLACK_USER_PREFIXES
        )
        if not slack.startswith(wanted):
            kind = (
                "a channel id (C...)"
                if principal.startswith(GROUP_PREFIX)
                else "a user id (U... or W...)"
            )
            raise errors.Unprocessable(f"'slack' of {principal!r} must be {kind}")
    return Contact(principal, email, slack, at, by)
