"""DynamoDB's outbox: the delivery state of recorded events (chalicelib/storage's
Outbox, which chalicelib/delivery/dispatch.py sends from).

Where this service sends events from the table (`make run-dynamodb`,
WORKFLOW_EVENT_DELIVERY=table), each event not delivered yet is in the due
index (DELIVERY) from its time on; deployed, the table's stream carries them
to the relay (WORKFLOW_EVENT_DELIVERY=stream) and they stay out of it.
"""

from __future__ import annotations

import os
from typing import Optional

from chalicelib.domain.models import Pending
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.schema import DELIVERY_DUE, DUE_AT, DUE_KEY
from chalicelib.storage.failures import unavailable

# How recorded events leave: see configured_delivery.
DELIVERY_VARIABLE = "WORKFLOW_EVENT_DELIVERY"
TABLE_DELIVERY = "table"
STREAM_DELIVERY = "stream"


def configured_delivery() -> str:
    """WORKFLOW_EVENT_DELIVERY: `table` (default), where this service sends the
    events it records from the table (the due index finds them), or `stream`
    (deployed), where the table's stream carries them to the relay and the
    index would be written for nothing. Unavailable, logged, if it is neither."""
    raw = os.environ.get(DELIVERY_VARIABLE, "").strip().lower() or TABLE_DELIVERY
    if raw not in (TABLE_DELIVERY, STREAM_DELIVERY):
        raise unavailable(
            f"{DELIVERY_VARIABLE} is {raw!r}: set it to {TABLE_DELIVERY!r} "
            f"(the default) or {STREAM_DELIVERY!r}"
        )
    return raw


class OutboxState:
    """The Outbox part of the DynamoDB adapter, over its table's requests."""

    requests: Requests

    def pending_subjects(self, now: str, limit: int) -> list[str]:
        # The due index holds every event not delivered yet.
        subjects: dict[str, None] = {}
        for item in self.requests.due(DELIVERY_DUE, now, 1000):
            subjects[keys.subject_of(item["PK"]["S"])] = None
            if len(subjects) == limit:
                break
        return list(subjects)

    def first_pending(self, subject: str) -> Optional[Pending]:
        pending = self.requests.query_all(
            {
                "TableName": self.requests.table,
                "ConsistentRead": True,
                "KeyConditionExpression": "PK = :pk",
                "FilterExpression": "attribute_not_exists(delivered_at)",
                "ExpressionAttributeValues": {":pk": s(keys.event_pk(subject))},
            }
        )
        item = next(pending, None)
        if item is None:
            return None
        attempts = int(item["attempts"]["N"]) if "attempts" in item else 0
        retry = item.get("next_attempt_at")
        return Pending(items.event_of(item), attempts, retry["S"] if retry else None)

    def mark_delivered(self, pending: Pending, now: str) -> None:
        self._update_pending(
            pending, f"SET delivered_at = :now REMOVE {DUE_KEY}, {DUE_AT}", {":now": s(now)}
        )

    def mark_failed(self, pending: Pending, next_attempt_at: str) -> None:
        self._update_pending(
            pending,
            f"SET attempts = if_not_exists(attempts, :zero) + :one, next_attempt_at = :at, "
            f"{DUE_AT} = :at",
            {":zero": n(0), ":one": n(1), ":at": s(next_attempt_at)},
        )

    def _update_pending(self, pending: Pending, update: str, values: Item) -> None:
        """Change an event's delivery state while it is not delivered; else nothing."""
        from botocore.exceptions import ClientError

        event = pending.event
        try:
            self.requests.call(
                "update_item",
                TableName=self.requests.table,
                Key={"PK": s(keys.event_pk(event.subject)), "SK": s(keys.event_sk(event.sequence))},
                UpdateExpression=update,
                ConditionExpression="attribute_exists(PK) AND attribute_not_exists(delivered_at)",
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # Another sender delivered it meanwhile.
