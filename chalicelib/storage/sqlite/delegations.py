"""SQLite's delegations: a row each, found by its delegate's key and end (the
delegations lent to a caller) and by its delegator's key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Delegation, Slice
from chalicelib.storage.sqlite.connections import Connections, next_id
from chalicelib.storage.sqlite.outbox import record_events

if TYPE_CHECKING:
    from chalicelib.domain.changes import DelegationGrant, DelegationRevocation

COLUMNS = (
    "id, delegator, delegate, workflow_id, starts_at, ends_at, reason, created_at, "
    "created_by, revoked_at, revoked_by"
)


class Delegations(Connections):
    """The delegations part of the SQLite adapter."""

    def create_delegation(self, grant: DelegationGrant) -> Delegation:
        # Imported here: a cold start's read never needs it.
        from chalicelib.domain.names import canonical, canonical_principal

        with self._write() as conn:
            granted = grant.made(next_id(conn, "delegations"))
            d = granted.delegation
            conn.execute(
                f"INSERT INTO delegations ({COLUMNS}, delegator_key, delegate_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*d, canonical(d.delegator), canonical_principal(d.delegate)),
            )
            record_events(conn, granted.events, new_subject=True)
        return d

    def get_delegation(self, delegation_id: int) -> Delegation:
        row = (
            self._connection()
            .execute(f"SELECT {COLUMNS} FROM delegations WHERE id = ?", (delegation_id,))
            .fetchone()
        )
        if row is None:
            raise errors.NotFound(f"Delegation {delegation_id} not found")
        return Delegation(*row)

    def revoke_delegation(self, revocation: DelegationRevocation) -> Delegation:
        after = revocation.after
        with self._write() as conn:
            # The guard: not revoked since it was read.
            changed = conn.execute(
                "UPDATE delegations SET revoked_at = ?, revoked_by = ? "
                "WHERE id = ? AND revoked_at IS NULL",
                (after.revoked_at, after.revoked_by, after.id),
            ).rowcount
            if changed != 1:
                raise errors.Conflict("The delegation was revoked already")
            record_events(conn, revocation.events)
        return after

    def delegations_to(self, delegates: Sequence[str], now: str) -> tuple[Delegation, ...]:
        if not delegates:
            return ()
        marks = ", ".join("?" for _ in delegates)
        found = (
            self._connection()
            .execute(
                f"SELECT {COLUMNS} FROM delegations WHERE delegate_key IN ({marks}) "
                "AND ends_at > ? AND revoked_at IS NULL ORDER BY id",
                (*delegates, now),
            )
            .fetchall()
        )
        return tuple(Delegation(*row) for row in found)

    def list_delegations(
        self,
        delegator: Optional[str],
        delegate: Optional[str],
        active_at: Optional[str],
        after_id: Optional[int],
        limit: int,
    ) -> Slice[Delegation]:
        where = ["id > ?"]
        values: list[object] = [after_id or 0]
        if delegator is not None:
            where.append("delegator_key = ?")
            values.append(delegator)
        if delegate is not None:
            where.append("delegate_key = ?")
            values.append(delegate)
        if active_at is not None:
            where.append(
                "starts_at <= ? AND ends_at > ? AND (revoked_at IS NULL OR revoked_at > ?)"
            )
            values += [active_at, active_at, active_at]
        found = (
            self._connection()
            .execute(
                f"SELECT {COLUMNS} FROM delegations WHERE {' AND '.join(where)} "
                "ORDER BY id LIMIT ?",
                (*values, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(Delegation(*row) for row in found[:limit]), len(found) > limit)
