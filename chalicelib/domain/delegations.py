"""Delegations: a delegator's rights to decide, lent to a delegate for a window
of time. What a delegation may be, who may revoke it, and the changes that
store it. Pure; the rules that apply one to a decision are
chalicelib/domain/decision.py's (`capacity`).

    delegator   a user's name (the caller in jwt mode, or anyone for an admin)
    delegate    "user:<name>" (a bare name is a user's) or "group:<name>"
    window      starts_at < ends_at, at most MAX_DAYS long, not over yet
    workflow    one workflow's runs only, or every workflow's (None)

A delegation lends rights and takes none away: the delegator keeps deciding
as before. What it lends is what the delegator may decide as a named user
(`user:<name>` among a step's approvers or those its deadline escalated it to,
and the steps open to anyone); the rights of their groups are the groups'
other members' to exercise (the service knows the caller's groups only). It
does not chain: a delegate decides with the delegator's own rights, never
with rights lent to the delegator.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Optional

from chalicelib.domain import errors
from chalicelib.domain.changes import DelegationGrant, DelegationRevocation, Granted
from chalicelib.domain.models import GROUP_PREFIX, USER_PREFIX, Delegation
from chalicelib.domain.names import canonical_principal, same

MAX_DAYS = 90
# An RFC 3339 date-time with its offset, as the OpenAPI document states it: its
# end a lookahead, not "$", which Python's re lets match before a final newline.
RFC3339_PATTERN = (
    "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:"
    "[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])(?![\\s\\S])"
)


def delegate_principal(delegate: str) -> str:
    """The principal a delegate names: "group:<name>", or a user's."""
    if delegate.startswith((USER_PREFIX, GROUP_PREFIX)):
        return delegate
    return USER_PREFIX + delegate


def grant(
    delegator: str,
    delegate: str,
    workflow_id: Optional[int],
    starts_at: str,
    ends_at: str,
    reason: str,
    created_by: str,
    at: str,
) -> DelegationGrant:
    """A delegation from `delegator` to `delegate` (a principal), made by
    `created_by` at `at`; Unprocessable (a rule no schema states) if it lends
    to the delegator or its window is not one."""
    if canonical_principal(delegate) == canonical_principal(USER_PREFIX + delegator):
        raise errors.Unprocessable(
            "A delegation lends rights to someone else: not to the delegator"
        )
    start, end = _instant(starts_at, "starts_at"), _instant(ends_at, "ends_at")
    if end <= start:
        raise errors.Unprocessable("'ends_at' must be after 'starts_at'")
    if end - start > timedelta(days=MAX_DAYS):
        raise errors.Unprocessable(f"A delegation lasts at most {MAX_DAYS} days")
    if end <= _instant(at, "now"):
        raise errors.Unprocessable("'ends_at' has passed: the delegation would lend nothing")

    def made(delegation_id: int) -> Granted:
        from chalicelib.domain import events

        delegation = Delegation(
            delegation_id,
            delegator,
            delegate,
            workflow_id,
            stamp(start),
            stamp(end),
            reason,
            at,
            created_by,
        )
        drafts = events.delegation_changed(delegation, revoked=False)
        return Granted(delegation, events.prepared_all(drafts))

    return DelegationGrant(made)


def revoke(delegation: Delegation, actor: str, admin: bool, at: str) -> DelegationRevocation:
    """`delegation` revoked by `actor` at `at`: its delegator may, or an
    administrator; Conflict once it was revoked or has ended."""
    if not admin and not same(actor, delegation.delegator):
        raise errors.Forbidden(
            f"Only the delegator ({delegation.delegator!r}) or an administrator may revoke "
            "this delegation"
        )
    if delegation.revoked_at is not None:
        raise errors.Conflict("The delegation was revoked already")
    if delegation.ends_at <= at:
        raise errors.Conflict("The delegation has ended")
    after = delegation._replace(revoked_at=at, revoked_by=actor)
    from chalicelib.domain import events

    drafts = events.delegation_changed(after, revoked=True)
    return DelegationRevocation(delegation, after, events.prepared_all(drafts))


def is_party(delegation: Delegation, actor: str, groups: frozenset[str]) -> bool:
    """Whether `actor` (a member of `groups`) lent it or may use it."""
    return same(actor, delegation.delegator) or _names_caller(delegation.delegate, actor, groups)


def check_reader(delegation: Delegation, actor: str, groups: frozenset[str], admin: bool) -> None:
    """A verified caller reads the delegations they are party to, an
    administrator any: who is away, and who covers, is theirs to know."""
    if not admin and not is_party(delegation, actor, groups):
        raise errors.Forbidden(
            "Only its delegator, its delegate or an administrator may read this delegation"
        )


def check_listing(
    delegator: Optional[str],
    delegate: Optional[str],
    actor: str,
    groups: frozenset[str],
    admin: bool,
) -> None:
    """A verified caller lists the delegations they lent or that are lent to
    them (or to one of their groups); an administrator lists any."""
    mine = (delegator is not None and same(actor, delegator)) or (
        delegate is not None and _names_caller(delegate_principal(delegate), actor, groups)
    )
    if not admin and not mine:
        raise errors.Forbidden(
            "List your own delegations: name yourself as 'delegator', or yourself or "
            "one of your groups as 'delegate' (an administrator may list any)"
        )


def _names_caller(principal: str, actor: str, groups: frozenset[str]) -> bool:
    """Whether `principal` ("user:<name>", "group:<name>") is the caller or a group of theirs."""
    ours = {canonical_principal(USER_PREFIX + actor)} | {
        canonical_principal(GROUP_PREFIX + group) for group in groups
    }
    return canonical_principal(principal) in ours


def _instant(text: str, name: str) -> datetime:
    """An RFC 3339 date-time with its offset (Z or +hh:mm), as an aware datetime
    in UTC: InvalidInput if it is none (what the document's pattern and format
    state), Unprocessable if it names no instant of years 1 to 9999 in UTC."""
    from datetime import UTC

    written = re.match(RFC3339_PATTERN, text) is not None
    if written and text.startswith("0000"):
        raise _out_of_range(name)  # year 0 is RFC 3339's, but no year of Python's calendar
    try:
        if not written:
            raise ValueError(text)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise errors.InvalidInput(
            f"{name!r} must be an RFC 3339 date-time with its offset, e.g. 2026-12-24T00:00:00Z"
        ) from exc
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:
        raise _out_of_range(name) from exc


def _out_of_range(name: str) -> errors.Unprocessable:
    return errors.Unprocessable(
        f"{name!r} is no instant of years 1 to 9999 in UTC, which this service keeps"
    )


def stamp(instant: datetime) -> str:
    """The service's timestamp of an instant: UTC, milliseconds, Z (they compare as text)."""
    from datetime import UTC

    utc = instant.astimezone(UTC)
    return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def normalised(text: str, name: str) -> str:
    """A timestamp a query names, as the service stamps them."""
    return stamp(_instant(text, name))
