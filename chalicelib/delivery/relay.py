"""Events in the cloud: the table's stream to EventBridge, and EventBridge to webhooks.

    DynamoDB stream (EVT# inserts only) -> relay_events -> PutEvents on the stack's bus
    bus rule -> SQS queue -> deliver_webhooks -> chalicelib/delivery/dispatch.py, as locally

The relay puts each event item's CloudEvent on the bus as it was recorded
(Source: its source, DetailType: its type, Detail: the CloudEvent), ten per
PutEvents, and reports the records it could not put (partial batch failure):
Lambda retries from the first of them, so the bus may get an event twice,
never lose one; consumers dedupe by `detail.id`.

The webhook sender delivers, for each message, its event's subject from the
first event not delivered yet (dispatch.deliver_subject): so a subject's
events go out in sequence order whatever order SQS hands them over in, and a
duplicate message finds its event delivered already. A message whose event
must wait (it, or an earlier one of its subject, failed and is not due
again yet) is reported failed, and comes back when that retry is due
(ChangeMessageVisibility), so the backoff is the same as locally.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from chalicelib.delivery import dispatch
from chalicelib.storage import Outbox

BUS_VARIABLE = "WORKFLOW_EVENT_BUS"
QUEUE_VARIABLE = "WORKFLOW_WEBHOOK_QUEUE_URL"
EVENT_PREFIX = "EVT#"
# PutEvents takes at most ten entries per call.
PUT_BATCH = 10
# SQS hides a message for at most 12 hours at a time.
MAX_VISIBILITY_SECONDS = 12 * 3600

PutEvents = Callable[..., Mapping[str, Any]]
Record = Mapping[str, Any]


def relay(records: Iterable[Record], put_events: PutEvents, bus: str) -> dict[str, Any]:
    """Put the event items that `records` inserted on `bus`; the batch item
    failures Lambda expects: the records not put, by sequence number."""
    entries: list[tuple[str, dict[str, Any]]] = []
    for record in records:
        image = record.get("dynamodb", {}).get("NewImage") or {}
        if record.get("eventName") != "INSERT" or "event" not in image:
            continue
        if not image.get("PK", {}).get("S", "").startswith(EVENT_PREFIX):
            continue
        body = image["event"]["S"]
        envelope = json.loads(body)
        entry = {
            "EventBusName": bus,
            "Source": envelope["source"],
            "DetailType": envelope["type"],
            "Detail": body,
        }
        entries.append((record["dynamodb"]["SequenceNumber"], entry))
    from botocore.exceptions import BotoCoreError, ClientError

    failed: list[str] = []
    for start in range(0, len(entries), PUT_BATCH):
        chunk = entries[start : start + PUT_BATCH]
        try:
            answer = put_events(Entries=[entry for _, entry in chunk])
        except (BotoCoreError, ClientError) as exc:
            dispatch.LOGGER.warning("relay: PutEvents failed, the records are retried: %s", exc)
            failed += [sequence for sequence, _ in entries[start:]]
            break
        failed += [
            sequence
            for (sequence, _), result in zip(chunk, answer["Entries"], strict=True)
            if "ErrorCode" in result
        ]
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}


def deliver_messages(
    records: Iterable[Record],
    outbox: Outbox,
    sink: dispatch.Sink,
    clock: dispatch.Clock,
    hide: Callable[[str, int], None],
    delay: Callable[[int], float],
) -> dict[str, Any]:
    """Deliver the event of each SQS message (EventBridge's envelope around a
    CloudEvent) with the events before it; the messages to receive again,
    each hidden (`hide(receipt handle, seconds)`) until its retry is due."""
    failed: list[str] = []
    for record in records:
        event = json.loads(record["body"])["detail"]
        now = clock()
        blocked = dispatch.deliver_subject(outbox, event["subject"], sink, now, delay)
        if blocked is None or blocked.event.sequence > event["sequence"]:
            continue  # delivered, now or before
        wait = dispatch.seconds_until(blocked.until, now)
        hide(record["receiptHandle"], max(1, min(MAX_VISIBILITY_SECONDS, round(wait))))
        failed.append(record["messageId"])
    return {"batchItemFailures": [{"itemIdentifier": message} for message in failed]}


def event_bus() -> str:
    return os.environ.get(BUS_VARIABLE, "default")


@functools.cache
def put_events_client() -> PutEvents:
    import boto3

    put: PutEvents = boto3.client("events").put_events
    return put


@functools.cache
def queue_hider() -> Callable[[str, int], None]:
    """Hide a received message of the webhook queue for some seconds."""
    import boto3

    client = boto3.client("sqs")
    queue = os.environ.get(QUEUE_VARIABLE, "")

    def hide(receipt: str, seconds: int) -> None:
        client.change_message_visibility(
            QueueUrl=queue, ReceiptHandle=receipt, VisibilityTimeout=seconds
        )

    return hide
