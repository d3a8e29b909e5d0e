"""SQLite's Idempotency-Key store (chalicelib/domain/idempotency.py's KeyStore):
a claim reads, decides and writes under BEGIN IMMEDIATE's write lock, one step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from chalicelib.storage.sqlite.connections import Connections

if TYPE_CHECKING:
    # Only keyed POSTs use the idempotency records: their module is imported
    # when one runs, so that a cold start serving a read loads none of it.
    from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse

# Expired idempotency keys deleted per claim: more than the one row a claim can
# add, so the table shrinks back, and a bounded cost for every request.
EXPIRED_KEYS_PER_CLAIM = 10


class IdempotencyKeys(Connections):
    """The KeyStore part of the SQLite adapter."""

    def claim_idempotency_key(self, claim: IdempotencyClaim) -> Optional[StoredResponse]:
        from chalicelib.domain import idempotency

        # Read, decide and write under BEGIN IMMEDIATE's write lock: one step.
        with self._write() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys "
                "WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)",
                (claim.now, EXPIRED_KEYS_PER_CLAIM),
            )
            row = conn.execute(
                "SELECT fingerprint, token, lease_until, expires_at, response_status, "
                "response_body, response_location FROM idempotency_keys WHERE key = ?",
                (claim.key,),
            ).fetchone()
            record = _idempotency_record(row) if row else None
            claimed = idempotency.may_claim(record, claim)
            if claimed:
                conn.execute(
                    "INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, token, "
                    "lease_until, expires_at) VALUES (?, ?, ?, ?, ?)",
                    (
                        claim.key,
                        claim.fingerprint,
                        claim.token,
                        claim.lease_until,
                        claim.expires_at,
                    ),
                )
        if claimed:
            return None
        assert record is not None
        return idempotency.replay(record, claim)

    def save_idempotent_response(self, claim: IdempotencyClaim, response: StoredResponse) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET response_status = ?, response_body = ?, "
                "response_location = ? WHERE key = ? AND token = ?",
                (response.status, response.body, response.location, claim.key, claim.token),
            )

    def release_idempotency_key(self, claim: IdempotencyClaim) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE key = ? AND token = ?", (claim.key, claim.token)
            )


def _idempotency_record(row: tuple[Any, ...]) -> IdempotencyRecord:
    from chalicelib.domain.idempotency import IdempotencyRecord, StoredResponse

    fingerprint, token, lease_until, expires_at, status, body, location = row
    response = StoredResponse(status, body, location) if status is not None else None
    return IdempotencyRecord(fingerprint, token, lease_until, expires_at, response)
