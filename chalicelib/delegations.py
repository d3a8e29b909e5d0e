"""The use cases of delegations, over any storage (as chalicelib/engine.py's
are of workflows and runs): lend one's rights to decide for a window of time,
read and list delegations, revoke one. What they lend at a decision is the
rules' to say (chalicelib/domain/decision.py's `capacity`)."""

from __future__ import annotations

from typing import Optional

from chalicelib import engine
from chalicelib.domain import delegations, names
from chalicelib.domain.models import Delegation, Page
from chalicelib.storage import Storage

DELEGATIONS = "delegations"


def create(
    storage: Storage,
    delegator: str,
    delegate: str,
    starts_at: str,
    ends_at: str,
    workflow_id: Optional[int] = None,
    reason: str = "",
    created_by: Optional[str] = None,
    clock: engine.Clock = engine.utc_now,
) -> Delegation:
    """Lend `delegator`'s rights to `delegate` (a user, bare or "user:<name>",
    or "group:<name>") from `starts_at` to `ends_at`, for one workflow's runs
    or every workflow's."""
    if workflow_id is not None:
        storage.get_workflow(workflow_id)  # NotFound: a delegation names a workflow that is
    principal = delegations.delegate_principal(delegate)
    grant = delegations.grant(
        delegator,
        principal,
        workflow_id,
        starts_at,
        ends_at,
        reason,
        created_by or delegator,
        clock(),
    )
    return storage.create_delegation(grant)


def get(
    storage: Storage,
    delegation_id: int,
    reader: Optional[str] = None,
    groups: frozenset[str] = frozenset(),
    admin: bool = False,
) -> Delegation:
    """The delegation; a verified `reader` (None where callers are not
    verified) must be party to it or an administrator."""
    delegation = storage.get_delegation(delegation_id)
    if reader is not None:
        delegations.check_reader(delegation, reader, groups, admin)
    return delegation


def revoke(
    storage: Storage,
    delegation_id: int,
    actor: str,
    admin: bool = False,
    clock: engine.Clock = engine.utc_now,
) -> Delegation:
    """End a delegation now: by its delegator, or an administrator. It stays readable."""
    delegation = storage.get_delegation(delegation_id)
    return storage.revoke_delegation(delegations.revoke(delegation, actor, admin, clock()))


def listed(
    storage: Storage,
    delegator: Optional[str],
    delegate: Optional[str],
    active_at: Optional[str],
    limit: int,
    cursor: Optional[str] = None,
    reader: Optional[str] = None,
    groups: frozenset[str] = frozenset(),
    admin: bool = False,
) -> Page[Delegation]:
    """One page of delegations by id ascending: of that delegator, to that
    delegate, active at that time, where given. A verified `reader` lists
    their own (named as delegator, or they or a group of theirs as delegate)."""
    if reader is not None:
        delegations.check_listing(delegator, delegate, reader, groups, admin)
    filters = {"delegator": delegator, "delegate": delegate, "active_at": active_at}
    after = engine.cursor_position(cursor, DELEGATIONS, filters)
    delegator_key = names.canonical(delegator) if delegator is not None else None
    delegate_key = (
        names.canonical_principal(delegations.delegate_principal(delegate))
        if delegate is not None
        else None
    )
    at = delegations.normalised(active_at, "active_at") if active_at is not None else None
    found = storage.list_delegations(delegator_key, delegate_key, at, after, limit)
    return engine.page_of(found, DELEGATIONS, filters)
