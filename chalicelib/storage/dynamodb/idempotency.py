"""DynamoDB's Idempotency-Key store (chalicelib/domain/idempotency.py's KeyStore).

A key is claimed with one conditional put (CLAIM_CONDITION): on refusal
DynamoDB returns the item that refused it, so no read follows, and none could
race with the write. The condition is the claim's own: the key is free, has
expired, or is held by a lapsed lease of the same request (the rule
idempotency.may_claim states, which decides what a refused claim replays).
DynamoDB's TTL deletes a key some time after expires_at, so the condition
checks expiry itself. Responses longer than INLINE_BODY_LIMIT are kept
compressed, and past PART_BYTES in part items written with the mark that the
key is answered.
"""

from __future__ import annotations

from typing import Any, Optional, cast

from chalicelib.domain import errors, idempotency
from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse
from chalicelib.storage.dynamodb import keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.schema import TTL_ATTRIBUTE

# Kept response bodies longer than this are stored zlib-compressed (binary): a
# run's answer holds its whole history and may outgrow a 400 KB item.
INLINE_BODY_LIMIT = 64 * 1024
# A compressed body longer than this is kept in part items beside the key's
# item, written in the same transaction that marks the key answered: each part
# stays well under DynamoDB's 400 KB per item.
PART_BYTES = 300 * 1024
# The claim's condition, as DynamoDB evaluates it against the stored item: a
# key is answered once its body (inline or in parts) is there.
CLAIM_CONDITION = (
    "attribute_not_exists(PK) OR #expires_at <= :now OR (fingerprint = :fingerprint "
    "AND attribute_not_exists(response_body) AND attribute_not_exists(response_parts) "
    "AND (lease_until <= :now OR claim_token = :token))"
)


class IdempotencyKeys:
    """The KeyStore part of the DynamoDB adapter, over its table's requests."""

    requests: Requests

    def claim_idempotency_key(self, claim: IdempotencyClaim) -> Optional[StoredResponse]:
        from botocore.exceptions import ClientError

        item = {
            **_key_item(claim.key),
            "fingerprint": s(claim.fingerprint),
            "claim_token": s(claim.token),
            "lease_until": _number(claim.lease_until),
            TTL_ATTRIBUTE: n(claim.expires_at),
        }
        try:
            # One write decides; on refusal DynamoDB returns the item that refused
            # it, so no read follows (and none could race with the write).
            self.requests.call(
                "put_item",
                TableName=self.requests.table,
                Item=item,
                ConditionExpression=CLAIM_CONDITION,
                ExpressionAttributeNames={"#expires_at": TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":now": _number(claim.now),
                    ":fingerprint": s(claim.fingerprint),
                    ":token": s(claim.token),
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            held = cast(Optional[Item], exc.response.get("Item"))
            record = self._idempotency_record(held) if held else None
            if record is None or idempotency.may_claim(record, claim):
                # Only an endpoint that does not return the refusing item gets
                # here; do nothing rather than guess.
                raise errors.RequestInProgress() from exc
            return idempotency.replay(record, claim)
        return None

    def save_idempotent_response(self, claim: IdempotencyClaim, response: StoredResponse) -> None:
        body = _body_value(response.body)
        parts = _parts(body["B"]) if "B" in body and len(body["B"]) > PART_BYTES else []
        values: Item = {":status": n(response.status), ":token": s(claim.token)}
        if parts:
            sets = "response_status = :status, response_parts = :parts"
            values[":parts"] = n(len(parts))
        else:
            sets = "response_status = :status, response_body = :body"
            values[":body"] = body
        if response.location is not None:
            sets += ", response_location = :location"
            values[":location"] = s(response.location)
        answered = {"UpdateExpression": f"SET {sets}", "ExpressionAttributeValues": values}
        if not parts:
            self._write_if_claimed("update_item", claim=claim, **answered)
            return
        # The parts and the mark that the key is answered, all or nothing; a
        # refused condition means a retry took the key over: it is its key now.
        table = self.requests.table
        self.requests.transact(
            [
                {"Put": {"TableName": table, "Item": self._part_item(claim, number, part)}}
                for number, part in enumerate(parts, start=1)
            ]
            + [{"Update": {**self._claimed_key(claim), **answered}}]
        )

    def _part_item(self, claim: IdempotencyClaim, number: int, part: bytes) -> Item:
        return {
            "PK": s(keys.idempotency_pk(claim.key)),
            "SK": s(keys.part_sk(number)),
            "part": {"B": part},
            TTL_ATTRIBUTE: n(claim.expires_at),
        }

    def _idempotency_record(self, item: Item) -> IdempotencyRecord:
        """The key's record; a body kept in parts is read from them."""
        body = item.get("response_body")
        if body is None and "response_parts" in item:
            parts = [
                part["part"]["B"]
                for part in self.requests.query_partition(item["PK"]["S"], keys.PART_PREFIX)
            ][: int(item["response_parts"]["N"])]
            if len(parts) == int(item["response_parts"]["N"]):
                body = {"B": b"".join(parts)}
        return _idempotency_record(item, body)

    def release_idempotency_key(self, claim: IdempotencyClaim) -> None:
        self._write_if_claimed(
            "delete_item", ExpressionAttributeValues={":token": s(claim.token)}, claim=claim
        )

    def _claimed_key(self, claim: IdempotencyClaim) -> dict[str, Any]:
        """Where claim's key item is, and the condition that the claim still holds it."""
        return {
            "TableName": self.requests.table,
            "Key": _key_item(claim.key),
            "ConditionExpression": "claim_token = :token",
        }

    def _write_if_claimed(self, operation: str, claim: IdempotencyClaim, **params: Any) -> None:
        """Update or delete claim's key item while the claim holds it; else nothing."""
        from botocore.exceptions import ClientError

        try:
            self.requests.call(operation, **self._claimed_key(claim), **params)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # A retry took the key over after the lease ended: it is its key now.


def _key_item(key: str) -> Item:
    return {"PK": s(keys.idempotency_pk(key)), "SK": s(keys.IDEMPOTENCY_SK)}


def _number(value: float) -> dict[str, str]:
    return {"N": repr(float(value))}


def _body_value(body: str) -> dict[str, Any]:
    encoded = body.encode("utf-8")
    if len(encoded) <= INLINE_BODY_LIMIT:
        return s(body)
    import zlib

    return {"B": zlib.compress(encoded)}


def _body_text(value: dict[str, Any]) -> str:
    if "S" in value:
        return str(value["S"])
    import zlib

    return zlib.decompress(value["B"]).decode("utf-8")


def _parts(compressed: bytes) -> list[bytes]:
    return [compressed[at : at + PART_BYTES] for at in range(0, len(compressed), PART_BYTES)]


def _idempotency_record(item: Item, body: Optional[dict[str, Any]]) -> IdempotencyRecord:
    """A key's record from its item and its body; without a whole body (or
    status) the key is still in flight, whatever else the item holds."""
    response = None
    if "response_status" in item and body is not None:
        location = item.get("response_location")
        response = StoredResponse(
            int(item["response_status"]["N"]),
            _body_text(body),
            location["S"] if location else None,
        )
    return IdempotencyRecord(
        item["fingerprint"]["S"],
        item["claim_token"]["S"],
        float(item["lease_until"]["N"]),
        int(item[TTL_ATTRIBUTE]["N"]),
        response,
    )
