"""DynamoDB's outbox: the delivery state of recorded events (chalicelib/storage's
Outbox, which chalicelib/delivery/dispatch.py sends from).

Where this service sends events from the table (`make run-dynamodb`,
WORKFLOW_EVENT_DELIVERY=table), each event not delivered yet is in the due
index (DELIVERY) from its time on; deployed, the table's stream carries them
to the relay (WORKFLOW_EVENT_DELIVERY=stream) and they stay out of it.

A run's events are event items and the events its action items carry
(carried.py): its first pending event is the first of either; an event item
keeps its own delivery state, an action item that of the events it carries,
delivered in order (how many were, and the attempts of the next one). The
first pending events of a subject are what dispatch.py marks next: the rest
of the action item that carries the first (`pending_batch`), sent together and
marked with one UpdateItem; which item carries them is kept from
`pending_batch` to their mark.
"""

from __future__ import annotations

import os
from typing import Optional

from chalicelib.domain.models import Pending
from chalicelib.domain.record import Record
from chalicelib.storage.dynamodb import carried, items, keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.schema import DELIVERY_DUE, DUE_AT, DUE_KEY
from chalicelib.storage.failures import unavailable

# How recorded events leave: see configured_delivery.
DELIVERY_VARIABLE = "WORKFLOW_EVENT_DELIVERY"
TABLE_DELIVERY = "table"
STREAM_DELIVERY = "stream"
# Carriers of handed-out events a storage remembers until they are marked.
KNOWN_CARRIERS = 10_000


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


class Carrier(Record):
    """An action item that carries events: its key, and which events it carries."""

    key: Item
    first: int
    carries: int

    @classmethod
    def of(cls, item: Item) -> Carrier:
        return cls(
            items.key(item["PK"]["S"], item["SK"]["S"]),
            int(item[carried.FROM]["N"]),
            int(item[carried.COUNT]["N"]),
        )

    def place(self, pending: Pending) -> int:
        """Where `pending`'s event is among those the item carries, from 0."""
        return pending.event.sequence - self.first


def _pending_of(item: Item) -> Pending:
    attempts = int(item["attempts"]["N"]) if "attempts" in item else 0
    retry = item.get("next_attempt_at")
    return Pending(items.event_of(item), attempts, retry["S"] if retry else None)


class OutboxState:
    """The Outbox part of the DynamoDB adapter, over its table's requests."""

    requests: Requests
    _carried_by: dict[tuple[str, int], Carrier]

    def pending_subjects(self, now: str, limit: int) -> list[str]:
        # The due index holds every event not delivered yet.
        subjects: dict[str, None] = {}
        for item in self.requests.due(DELIVERY_DUE, now, 1000):
            subjects[keys.subject_of(item["PK"]["S"])] = None
            if len(subjects) == limit:
                break
        return list(subjects)

    def pending_batch(self, subject: str) -> list[Pending]:
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
        stored = _pending_of(item) if item is not None else None
        told = self._carried_rest(subject)
        if not told or (stored is not None and stored.event.sequence < told[0].event.sequence):
            return [stored] if stored is not None else []
        return told

    def _carried_rest(self, subject: str) -> list[Pending]:
        """The events not delivered yet of the first of the run's action items
        that carries any: the first with its attempts, the others none yet
        (an action item keeps the attempts of its first pending event only)."""
        run_id = keys.run_of_subject(subject)
        if run_id is None:
            return []
        found = self.requests.query_all(
            {
                "TableName": self.requests.table,
                "ConsistentRead": True,
                "KeyConditionExpression": "PK = :pk AND begins_with(SK, :action)",
                "FilterExpression": "attribute_exists(#events) AND "
                "(attribute_not_exists(#delivered) OR #delivered < #count)",
                "ExpressionAttributeNames": {
                    "#events": carried.EVENTS,
                    "#delivered": carried.DELIVERED,
                    "#count": carried.COUNT,
                },
                "ExpressionAttributeValues": {
                    ":pk": s(keys.run_pk(run_id)),
                    ":action": s(keys.ACTION_PREFIX),
                },
            }
        )
        item = next(found, None)
        if item is None:
            return []
        rest = items.carried_events(item, subject)[items.carried_delivered(item) :]
        carrier = Carrier.of(item)
        for event in rest:
            self._carriers()[subject, event.sequence] = carrier
        attempts = int(item["attempts"]["N"]) if "attempts" in item else 0
        retry = item.get("next_attempt_at")
        head = Pending(rest[0], attempts, retry["S"] if retry else None)
        return [head, *(Pending(event, 0, None) for event in rest[1:])]

    def _carriers(self) -> dict[tuple[str, int], Carrier]:
        """(subject, sequence) -> the action item that carries that event, for
        the events pending_batch handed out and not marked yet (an event that
        waits for its retry is not marked: forgotten past KNOWN_CARRIERS, and
        then found again)."""
        carriers: Optional[dict[tuple[str, int], Carrier]] = getattr(self, "_carried_by", None)
        if carriers is None or len(carriers) > KNOWN_CARRIERS:
            carriers = {}
            self._carried_by = carriers
        return carriers

    def _carrier(self, pending: Pending) -> Optional[Carrier]:
        """The action item that carries `pending`'s event (None: an event item
        holds it), as pending_batch found it, or found again."""
        event = pending.event
        known = self._carriers().pop((event.subject, event.sequence), None)
        run_id = keys.run_of_subject(event.subject)
        if known is not None or run_id is None:
            return known
        for item in self.requests.query_partition(keys.run_pk(run_id), keys.ACTION_PREFIX):
            told = items.carried_events(item, event.subject)
            if told and told[0].sequence <= event.sequence <= told[-1].sequence:
                return Carrier.of(item)
        return None

    def mark_delivered(self, pending: Pending, now: str, count: int = 1) -> None:
        carrier = self._carrier(pending)
        for later in range(1, count):
            self._carriers().pop((pending.event.subject, pending.event.sequence + later), None)
        if carrier is None:
            if count != 1:
                raise ValueError("an event item is a batch of one: it is marked alone")
            self._update_pending(
                pending, f"SET delivered_at = :now REMOVE {DUE_KEY}, {DUE_AT}", {":now": s(now)}
            )
            return
        # The next one's attempts start afresh; the last one takes the item
        # out of the due index.
        place = carrier.place(pending)
        last = f", {DUE_KEY}, {DUE_AT}" if place + count == carrier.carries else ""
        self._update_carried(
            pending,
            carrier,
            f"SET #delivered = :delivered REMOVE attempts, next_attempt_at{last}",
            {":delivered": n(place + count)},
        )

    def mark_failed(self, pending: Pending, next_attempt_at: str) -> None:
        update = (
            f"SET attempts = if_not_exists(attempts, :zero) + :one, next_attempt_at = :at, "
            f"{DUE_AT} = :at"
        )
        values = {":zero": n(0), ":one": n(1), ":at": s(next_attempt_at)}
        carrier = self._carrier(pending)
        if carrier is None:
            self._update_pending(pending, update, values)
        else:
            self._update_carried(pending, carrier, update, values)

    def _update_carried(
        self, pending: Pending, carrier: Carrier, update: str, values: Item
    ) -> None:
        """Change the delivery state of the events `carrier` carries while
        `pending`'s event is the first of them not delivered yet; else nothing."""
        from botocore.exceptions import ClientError

        place = carrier.place(pending)
        first_undelivered = "#delivered = :place"
        if place == 0:
            first_undelivered = f"(attribute_not_exists(#delivered) OR {first_undelivered})"
        try:
            self.requests.call(
                "update_item",
                TableName=self.requests.table,
                Key=carrier.key,
                UpdateExpression=update,
                ConditionExpression=f"attribute_exists(PK) AND {first_undelivered}",
                ExpressionAttributeNames={"#delivered": carried.DELIVERED},
                ExpressionAttributeValues={**values, ":place": n(place)},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # Another sender delivered it meanwhile.

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
