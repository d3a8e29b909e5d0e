"""DynamoDB's delegations: one item each in the DELEGATIONS partition (listed
by id), and, while one is not revoked, a copy in its delegate's partition,
sorted by when it ends, so that the delegations lent to a caller are one
Query per principal (keys.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Delegation, EventDraft, Slice
from chalicelib.domain.names import canonical, canonical_principal
from chalicelib.storage.dynamodb import keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.ids import Counters
from chalicelib.storage.dynamodb.keys import Item

if TYPE_CHECKING:
    from chalicelib.domain.changes import DelegationGrant, DelegationRevocation

# Items one Query of the DELEGATIONS partition reads at most, while a filter
# leaves some out.
PAGE_READ = 100


def delegation_item(delegation: Delegation) -> Item:
    item: Item = {
        "PK": s(keys.DELEGATIONS_PK),
        "SK": s(keys.delegation_sk(delegation.id)),
        **_fields(delegation),
    }
    return item


def lent_item(delegation: Delegation) -> Item:
    return {
        "PK": s(keys.delegate_pk(canonical_principal(delegation.delegate))),
        "SK": s(keys.delegate_sk(delegation.ends_at, delegation.id)),
        **_fields(delegation),
    }


def _fields(d: Delegation) -> Item:
    fields: Item = {
        "id": n(d.id),
        "delegator": s(d.delegator),
        "delegator_key": s(canonical(d.delegator)),
        "delegate": s(d.delegate),
        "delegate_key": s(canonical_principal(d.delegate)),
        "starts_at": s(d.starts_at),
        "ends_at": s(d.ends_at),
        "reason": s(d.reason),
        "created_at": s(d.created_at),
        "created_by": s(d.created_by),
    }
    if d.workflow_id is not None:
        fields["workflow_id"] = n(d.workflow_id)
    if d.revoked_at is not None and d.revoked_by is not None:
        fields.update(revoked_at=s(d.revoked_at), revoked_by=s(d.revoked_by))
    return fields


def delegation_of(item: Item) -> Delegation:
    return Delegation(
        int(item["id"]["N"]),
        item["delegator"]["S"],
        item["delegate"]["S"],
        int(item["workflow_id"]["N"]) if "workflow_id" in item else None,
        item["starts_at"]["S"],
        item["ends_at"]["S"],
        item["reason"]["S"],
        item["created_at"]["S"],
        item["created_by"]["S"],
        item["revoked_at"]["S"] if "revoked_at" in item else None,
        item["revoked_by"]["S"] if "revoked_by" in item else None,
    )


class Delegations:
    """The delegations part of the DynamoDB adapter (its requests, counters and
    event puts are the adapter's)."""

    requests: Requests
    counters: Counters

    if TYPE_CHECKING:  # the adapter's, which this part writes with

        @property
        def table(self) -> str: ...

        def _event_puts(self, drafts: Sequence[EventDraft], after: int) -> list[dict[str, Any]]: ...

        def _applied(self, drafts: Sequence[EventDraft], after: int) -> bool: ...

    def create_delegation(self, grant: DelegationGrant) -> Delegation:
        (delegation_id,) = self.counters.take("delegation")
        granted = grant.made(delegation_id)
        delegation = granted.delegation
        written = [
            self.requests.put_new(delegation_item(delegation)),
            self.requests.put_new(lent_item(delegation)),
            *self._event_puts(granted.events, 0),
        ]
        if self.requests.transact(written) and not self._applied(granted.events, 0):
            raise errors.Unavailable(
                f"Delegation id {delegation_id} is already taken in table {self.table!r}"
            )
        return delegation

    def get_delegation(self, delegation_id: int) -> Delegation:
        item = self.requests.read_item(s(keys.DELEGATIONS_PK), s(keys.delegation_sk(delegation_id)))
        if item is None:
            raise errors.NotFound(f"Delegation {delegation_id} not found")
        return delegation_of(item)

    def revoke_delegation(self, revocation: DelegationRevocation) -> Delegation:
        before, after = revocation.before, revocation.after
        assert after.revoked_at is not None and after.revoked_by is not None
        lent = lent_item(before)
        written = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": {"PK": s(keys.DELEGATIONS_PK), "SK": s(keys.delegation_sk(before.id))},
                    "UpdateExpression": "SET revoked_at = :at, revoked_by = :by",
                    "ConditionExpression": "attribute_not_exists(revoked_at)",
                    "ExpressionAttributeValues": {
                        ":at": s(after.revoked_at),
                        ":by": s(after.revoked_by),
                    },
                }
            },
            {"Delete": {"TableName": self.table, "Key": {"PK": lent["PK"], "SK": lent["SK"]}}},
            *self._event_puts(revocation.events, 1),
        ]
        if self.requests.transact(written) and not self._applied(revocation.events, 1):
            raise errors.Conflict("The delegation was revoked already")
        return after

    def delegations_to(self, delegates: Sequence[str], now: str) -> tuple[Delegation, ...]:
        found: dict[int, Delegation] = {}
        for key in delegates:
            page, _ = self.requests.query_after(keys.delegate_pk(key), now, 1000)
            for item in page:
                delegation = delegation_of(item)
                found[delegation.id] = delegation
        return tuple(found[key] for key in sorted(found))

    def list_delegations(
        self,
        delegator: Optional[str],
        delegate: Optional[str],
        active_at: Optional[str],
        after_id: Optional[int],
        limit: int,
    ) -> Slice[Delegation]:
        wanted: list[Delegation] = []
        after_sk = keys.delegation_sk(after_id) if after_id else None
        while True:
            page, more = self.requests.query_after(keys.DELEGATIONS_PK, after_sk, PAGE_READ)
            for item in page:
                delegation = delegation_of(item)
                if _listed(item, delegation, delegator, delegate, active_at):
                    wanted.append(delegation)
                    if len(wanted) > limit:
                        return Slice(tuple(wanted[:limit]), True)
            if not more or not page:
                return Slice(tuple(wanted), False)
            after_sk = page[-1]["SK"]["S"]


def _listed(
    item: Item,
    delegation: Delegation,
    delegator: Optional[str],
    delegate: Optional[str],
    active_at: Optional[str],
) -> bool:
    """Whether the list's filters keep the delegation (compared by the keys it stored)."""
    if delegator is not None and item["delegator_key"]["S"] != delegator:
        return False
    if delegate is not None and item["delegate_key"]["S"] != delegate:
        return False
    return active_at is None or delegation.active_at(active_at)
