"""Events in the cloud: the table's stream to EventBridge, and to webhooks.

    DynamoDB stream (inserts of event items and of action items, and run
    items that left inbox entries behind) -> relay -> PutEvents on the stack's bus
                                                   -> SQS queue (a message per run)
    SQS queue -> deliver_webhooks -> chalicelib/delivery/dispatch.py, as locally

The relay puts each recorded CloudEvent on the bus as it was recorded
(Source: its source, DetailType: its type, Detail: the CloudEvent): an event
item's, and those an action item carries (chalicelib/storage/dynamodb/
carried.py), in their order, ten per PutEvents, and reports the records it
could not put (partial batch failure): Lambda retries from the first of
them, so the bus may get an event twice, never lose one; consumers dedupe by
`detail.id`.

It also sends the webhook queue one message per subject whose events its
records brought, naming the last of them (`{"subject": ..., "through": n}`;
SendMessageBatch, ten per call): the sender delivers from the outbox, not
from the message, so one message stands for a decision's events, or for
all a batch of records brought of one run. A message that could not be sent
fails its subject's records as a failed put does. (The bus's other
subscribers get every event, as before: the webhook queue is no longer one
of the bus's targets, which sent a message, and a sender invocation, per
event.)

It also deletes the inbox entries a decision left behind (a run item whose
`inbox_left` names them: the decision's transaction puts the entries of the
step it enters, and leaves these to the stream, where each costs one write
unit instead of two). Each delete holds only while the entry is still that
step's; one that fails is logged and not retried: an entry left behind is
one the inbox never shows (its run is no longer at its step), and the
stream's events must not wait for it.

The webhook sender delivers, for each message, its subject from the first
event not delivered yet through the message's last event
(dispatch.deliver_subject): so a subject's events go out in sequence order
whatever order SQS hands them over in, a duplicate message finds its events
delivered already, and a later event is left to its own message (the relay
sends one for every event it relays) rather than looked for with another
read. A message the bus's rule sent before (EventBridge's envelope around
one CloudEvent) is read as one naming that event. A message whose event
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
# SendMessageBatch on the webhook queue: its Entries -> SQS's answer.
SendMessages = Callable[[list[dict[str, str]]], Mapping[str, Any]]
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
    send_messages: Optional[SendMessages] = None,
) -> dict[str, Any]:
    """Put the events that `records` recorded on `bus`, send the webhook
    queue a message per subject (with `send_messages`, where given), and
    delete the inbox entries they left behind (with `delete_item`, or the
    function's own client); the batch item failures Lambda expects: the
    records whose events were not put or told, by sequence number."""
    entries: list[tuple[str, dict[str, Any]]] = []
    subjects: dict[str, Told] = {}
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
            subjects.setdefault(envelope["subject"], Told()).add(
                int(envelope["sequence"]), record["dynamodb"]["SequenceNumber"]
            )
    failed = put_on_bus(entries, put_events)
    if send_messages is not None and subjects:
        failed += tell_webhook_queue(subjects, send_messages)
    if left:
        forget_left(left, delete_item or inbox_deleter())
    # A record whose events fail together is reported once.
    failed = list(dict.fromkeys(failed))
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}


class Told:
    """What the webhook queue's message for one subject says: the subject's
    last event in the batch; and the records that brought its events."""

    def __init__(self) -> None:
        self.through = 0
        self.records: list[str] = []

    def add(self, sequence: int, record: str) -> None:
        self.through = max(self.through, sequence)
        self.records.append(record)


def put_on_bus(entries: list[tuple[str, dict[str, Any]]], put_events: PutEvents) -> list[str]:
    """Put (record's sequence number, entry) `entries` on the bus, ten per
    call; the sequence numbers of the records whose entries were not put."""
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
    return failed


def tell_webhook_queue(subjects: Mapping[str, Told], send_messages: SendMessages) -> list[str]:
    """Send the webhook queue a message per subject, ten per SendMessageBatch;
    the sequence numbers of the records whose subject's message was not sent."""
    from botocore.exceptions import BotoCoreError, ClientError

    told = list(subjects.items())
    failed: list[str] = []
    for start in range(0, len(told), PUT_BATCH):
        chunk = {str(n): pair for n, pair in enumerate(told[start : start + PUT_BATCH])}
        entries = [
            {"Id": n, "MessageBody": json.dumps({"subject": subject, "through": what.through})}
            for n, (subject, what) in chunk.items()
        ]
        try:
            answer = send_messages(entries)
        except (BotoCoreError, ClientError) as exc:
            dispatch.LOGGER.warning(
                "relay: the webhook queue refused, the records are retried: %s", exc
            )
            failed += [record for _, what in told[start:] for record in what.records]
            break
        failed += [
            record
            for refused in answer.get("Failed", [])
            for record in chunk[refused["Id"]][1].records
        ]
    return failed


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
        subject, through = told_by(record["body"])
        now = clock()
        blocked = dispatch.deliver_subject(outbox, subject, sink, now, delay, through)
        if blocked is None or blocked.event.sequence > through:
            continue  # delivered, now or before
        wait = dispatch.seconds_until(blocked.until, now)
        hide(record["receiptHandle"], max(1, min(MAX_VISIBILITY_SECONDS, round(wait))))
        failed.append(record["messageId"])
    return {"batchItemFailures": [{"itemIdentifier": message} for message in failed]}


def told_by(body: str) -> tuple[str, int]:
    """The subject a webhook queue message names, and its last event's sequence."""
    message = json.loads(body)
    if "detail" in message:
        # EventBridge's envelope around one CloudEvent (the bus's rule fed the
        # queue before the relay did); `sequence` the CloudEvent's zero-padded
        # string (a number in events recorded before it was one).
        event = message["detail"]
        return event["subject"], int(event["sequence"])
    return message["subject"], int(message["through"])


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
def webhook_messenger() -> Optional[SendMessages]:
    """SendMessageBatch on the webhook queue (None where no queue is named)."""
    queue = os.environ.get(QUEUE_VARIABLE, "")
    if not queue:
        return None
    import boto3

    client = boto3.client("sqs")

    def send(entries: list[dict[str, str]]) -> Mapping[str, Any]:
        answer: Mapping[str, Any] = client.send_message_batch(QueueUrl=queue, Entries=entries)
        return answer

    return send


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
