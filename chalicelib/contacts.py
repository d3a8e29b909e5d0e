"""The use cases of contacts, over any storage: where a principal is told
what waits for them (chalicelib/domain/contacts.py has the rules)."""

from __future__ import annotations

from typing import Optional

from chalicelib import engine
from chalicelib.domain import contacts, errors
from chalicelib.domain.models import Contact, Page
from chalicelib.storage import Backend

CONTACTS = "contacts"


def put(
    storage: Backend,
    principal: str,
    email: Optional[str],
    slack: Optional[str],
    actor: Optional[str] = None,
    admin: bool = False,
    clock: engine.Clock = engine.utc_now,
) -> Contact:
    """Set `principal`'s contact, as `actor` (None: callers are not verified)."""
    contacts.check_manager(principal, actor, admin)
    return storage.put_contact(contacts.contact(principal, email, slack, clock(), actor))


def get(
    storage: Backend, principal: str, actor: Optional[str] = None, admin: bool = False
) -> Contact:
    """`principal`'s contact: an empty one (no email, no Slack id, never
    updated) where none is set, so a page asking for its own finds no error."""
    contacts.check_manager(principal, actor, admin)
    try:
        return storage.get_contact(contacts.key(principal))
    except errors.NotFound:
        return Contact(principal, None, None, None)


def delete(
    storage: Backend, principal: str, actor: Optional[str] = None, admin: bool = False
) -> Contact:
    """Remove `principal`'s contact (it is told nothing any more), answering it as it was."""
    contacts.check_manager(principal, actor, admin)
    return storage.delete_contact(contacts.key(principal))


def listed(
    storage: Backend,
    limit: int,
    cursor: Optional[str] = None,
    actor: Optional[str] = None,
    admin: bool = False,
) -> Page[Contact]:
    """One page of contacts by their principal's key: an administrator's to
    read where callers are verified."""
    contacts.check_lister(actor, admin)
    after = engine.cursor_position(cursor, CONTACTS, {})
    found = storage.list_contacts(after[0] if isinstance(after, list) else None, limit)
    if not found.more or not found.items:
        return Page(found.items, None)
    from chalicelib import cursors

    # A list by key, not by id: the position is [key, 1], the cursor's pair form.
    last = contacts.key(found.items[-1].principal)
    return Page(found.items, cursors.issue(CONTACTS, {}, [last, 1]))
