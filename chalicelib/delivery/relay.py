"""Events in the cloud: the table's stream to EventBridge, and EventBridge to webhooks.

    DynamoDB stream (inserts of event items and of action items, and run
    items that left inbox entries behind) -> relay -> PutEvents on the stack's bus
    bus rule -> SQS queue -> deliver_webhooks -> chalicelib/delivery/dispatch.py, as locally

The relay puts each recorded CloudEvent on the bus as it was recorded
(Source: its source, DetailType: its type, Detail: the CloudEvent): an event
item's, and those an action item carries (chalicelib/storage/dynamodb/
carried.py), in their order, ten per PutEvents, and reports the records it
could not put (partial batch failure): Lambda retries from the first of
them, so the bus may get an event twice, never lose one; consumers dedupe by
`detail.id`.

It also deletes the inbox entries a decision left behind (a run item whose
`inbox_left` names them: the decision's transaction puts the entries of the
step it enters, and leaves these to the stream, where each costs one write
unit instead of two). Each delete holds only while the entry is still that
step's; one that fails is logged and not retried: an entry left behind is
one the inbox never shows (its run is no longer at its step), and the
stream's events must not wait for it.

The webhook sender delivers, for each message, its event's subject from the
first event not delivered yet through the message's own event
(dispatch.deliver_subject): so a subject's events go out in sequence order
whatever order SQS hands them over in, a duplicate message finds its event
delivered already, and a later event is left to its own message (every event
put on the bus has one) rather than looked for with another read. A message whose event
must wait (it, or an earlier one of its subject, failed and is not due
again yet) is reported failed, and comes back when that retry is due
(ChangeMessageVisibility), so the backoff is the same as locally.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

from chalicelib.delivery import dispatch
from chalicelib.storage import Outbox
from chalicelib.storage.dynamodb import carried

BUS_VARIABLE = "WORKFLOW_EVENT_BUS"
QUEUE_VARIABLE = "WORKFLOW_WEBHOOK_QUEUE_URL"
EVENT_PREFIX = "EVT#"
# A run item's inbox entries to delete (chalicelib/storage/dynamodb/items.py).
INBOX_LEFT = "inbox_left"
# PutEvents takes at most ten entries per call.
PUT_BATCH = 10
# SQS hides a message for at most 12 hours at a time.
MAX_VISIBILITY_SECONDS = 12 * 3600

PutEvents = Callable[..., Mapping[str, Any]]
DeleteItem = Callable[..., Any]
Record = Mapping[str, Any]


def recorded_events(record: Record) -> list[str]:
    """The CloudEvents a stream record brings: an inserted event item's, or
    those an inserted action item carries, in order."""
    image = record.get("dynamodb", {}).get("NewImage") or {}
    if record.get("eventName") != "INSERT":
        return []
    if "event" in image and image.get("PK", {}).get("S", "").startswith(EVENT_PREFIX):
        return [image["event"]["S"]]
    if carried.carries(image):
        return [body for _, _, body in carried.unpack(image[carried.EVENTS]["B"])]
    return []


def relay(
    records: Iterable[Record],
    put_events: PutEvents,
    bus: str,
    delete_item: Optional[DeleteItem] = None,
) -> dict[str, Any]:
    """Put the events that `records` recorded on `bus`, and delete the inbox
    entries they left behind (with `delete_item`, or the function's own
    client); the batch item failures Lambda expects: the records whose events
    were not put, by sequence number."""
    entries: list[tuple[str, dict[str, Any]]] = []
    left: list[Record] = []
    for record in records:
        if INBOX_LEFT in (record.get("dynamodb", {}).get("NewImage") or {}):
            left.append(record)
        for body in recorded_events(record):
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
    if left:
        forget_left(left, delete_item or inbox_deleter())
    # A record whose events fail together is reported once.
    failed = list(dict.fromkeys(failed))
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}


def forget_left(records: Iterable[Record], delete_item: DeleteItem) -> None:
    """Delete the inbox entries each run item of `records` says its change left
    behind, from the table whose stream brought it, each only while it is
    still the entry of the step left; what fails is logged, not retried."""
    from botocore.exceptions import BotoCoreError, ClientError

    for record in records:
        left = json.loads(record["dynamodb"]["NewImage"][INBOX_LEFT]["S"])
        table = table_of(record["eventSourceARN"])
        for pk, sk in left["keys"]:
            try:
                delete_item(
                    TableName=table,
                    Key={"PK": {"S": pk}, "SK": {"S": sk}},
                    ConditionExpression="step_id = :step",
                    ExpressionAttributeValues={":step": {"N": str(left["step_id"])}},
                )
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                    continue  # gone already, or the run's again (the entry is another step's)
                dispatch.LOGGER.warning("relay: inbox entry %s %s left behind: %s", pk, sk, exc)
            except BotoCoreError as exc:
                dispatch.LOGGER.warning("relay: inbox entry %s %s left behind: %s", pk, sk, exc)


def table_of(stream_arn: str) -> str:
    """The table of a stream ARN (arn:...:table/<name>/stream/<label>)."""
    return stream_arn.split(":table/", 1)[1].split("/stream/", 1)[0]


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
        # `sequence` is the CloudEvent's zero-padded string (a number in
        # events recorded before it was one): its number either way.
        sequence = int(event["sequence"])
        blocked = dispatch.deliver_subject(outbox, event["subject"], sink, now, delay, sequence)
        if blocked is None or blocked.event.sequence > sequence:
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
def inbox_deleter() -> DeleteItem:
    """DeleteItem of the function's DynamoDB client (the table's own region)."""
    import boto3

    delete: DeleteItem = boto3.client("dynamodb").delete_item
    return delete


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
