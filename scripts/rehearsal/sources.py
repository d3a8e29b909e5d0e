"""The event sources, played from the template's mappings and rule, with the
function's own role where Lambda uses it (docs/rehearsal.md, step 5): the
table's stream to the relay, the webhook queue to the sender, the schedule's
event to the sweeper. A stream batch is retried RETRIES times, where the
template's MaximumRetryAttempts allows a day of them: the rehearsal does not
wait a day.
"""

from __future__ import annotations

import base64
import datetime
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scripts.rehearsal.cloud import ACCOUNT, REGION
from scripts.rehearsal.runtime import Invocation

RETRIES = 2

Invoke = Callable[[Any], Invocation]


def _as_json(value: Any) -> Any:
    """A stream record's value as Lambda's JSON event holds it: a time in
    seconds, binary as base64 text (boto3 reads them as datetime and bytes)."""
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    return value


@dataclass
class Report:
    """What happened at an event source: each invocation, and what failed."""

    invocations: list[Invocation] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    dead_letters: int = 0


def _matches(patterns: list[dict[str, Any]], record: Mapping[str, Any]) -> bool:
    if not patterns:
        return True
    from moto.events.models import EventPattern

    event: Any = dict(record)
    return any(EventPattern(None, pattern).matches_event(event) for pattern in patterns)


class StreamSource:
    """The relay's mapping on the table's stream."""

    def __init__(
        self,
        mapping: Mapping[str, Any],
        invoke: Invoke,
        streams: Any,
        sqs: Any,
        queue_url_of: Callable[[str], str],
    ) -> None:
        self.mapping = mapping
        self.stream_arn: str = mapping["EventSourceArn"]
        self._invoke = invoke
        self._streams = streams
        self._sqs = sqs
        self._queue_url_of = queue_url_of
        self._filters = [
            json.loads(f["Pattern"]) for f in mapping.get("FilterCriteria", {}).get("Filters", [])
        ]
        self._batch = int(mapping.get("BatchSize", 100))
        self._iterators: dict[str, str] = {}
        table = self.stream_arn.split(":table/", 1)[1].split("/stream/", 1)[0]
        listed = self._streams.list_streams(TableName=table)["Streams"]
        if self.stream_arn not in [s["StreamArn"] for s in listed]:
            raise RuntimeError(f"the mapping's stream {self.stream_arn} is not the table's")
        shards = self._streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for shard in shards["Shards"]:
            self._iterators[shard["ShardId"]] = self._streams.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard["ShardId"],
                ShardIteratorType=mapping.get("StartingPosition", "LATEST"),
            )["ShardIterator"]

    def _read(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for shard, iterator in list(self._iterators.items()):
            while iterator:
                page = self._streams.get_records(ShardIterator=iterator, Limit=1000)
                iterator = page.get("NextShardIterator")
                self._iterators[shard] = iterator
                if not page["Records"]:
                    break
                for record in page["Records"]:
                    record = dict(record)
                    record["dynamodb"] = _as_json(record["dynamodb"])
                    record["eventSourceARN"] = self.stream_arn
                    records.append(record)
        return records

    def poll(self, report: Report, expect_failures: bool = False) -> int:
        """Relay every record written since the last poll; how many went to the function."""
        records = [r for r in self._read() if _matches(self._filters, r)]
        for start in range(0, len(records), self._batch):
            self._deliver(records[start : start + self._batch], report, expect_failures)
        return len(records)

    def _deliver(self, batch: list[dict[str, Any]], report: Report, expect_failures: bool) -> None:
        attempt = 0
        while batch:
            invocation = self._invoke({"Records": batch})
            report.invocations.append(invocation)
            if invocation.error is not None:
                failed_from = 0
                why = f"relay raised {invocation.error.get('errorType')}"
            else:
                failures = [
                    item["itemIdentifier"]
                    for item in (invocation.result or {}).get("batchItemFailures", [])
                ]
                if not failures:
                    return
                sequences = [r["dynamodb"]["SequenceNumber"] for r in batch]
                failed_from = min(sequences.index(s) for s in failures)
                why = f"relay reported {len(failures)} of {len(batch)} records failed"
            if not expect_failures:
                report.failures.append(why)
            batch = batch[failed_from:]
            attempt += 1
            if attempt > RETRIES:
                self._dead_letter(batch, invocation)
                report.dead_letters += 1
                return

    def _dead_letter(self, batch: list[dict[str, Any]], invocation: Invocation) -> None:
        """The record Lambda sends to an OnFailure destination for a stream batch."""
        destination = self.mapping["DestinationConfig"]["OnFailure"]["Destination"]
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        arrival = [r["dynamodb"].get("ApproximateCreationDateTime") for r in batch]
        body = {
            "requestContext": {
                "requestId": invocation.request_id,
                "functionArn": self.mapping["FunctionName"],
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": RETRIES + 1,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
            "version": "1.0",
            "timestamp": now,
            "DDBStreamBatchInfo": {
                "shardId": next(iter(self._iterators), ""),
                "startSequenceNumber": batch[0]["dynamodb"]["SequenceNumber"],
                "endSequenceNumber": batch[-1]["dynamodb"]["SequenceNumber"],
                "approximateArrivalOfFirstRecord": arrival[0],
                "approximateArrivalOfLastRecord": arrival[-1],
                "batchSize": len(batch),
                "streamArn": self.stream_arn,
            },
        }
        self._sqs.send_message(
            QueueUrl=self._queue_url_of(destination), MessageBody=json.dumps(body)
        )


class QueueSource:
    """The sender's mapping on the webhook queue."""

    def __init__(
        self, mapping: Mapping[str, Any], invoke: Invoke, sqs: Any, queue_url: str
    ) -> None:
        self.mapping = mapping
        self.queue_arn: str = mapping["EventSourceArn"]
        self._invoke = invoke
        self._sqs = sqs
        self._url = queue_url
        self._batch = int(mapping.get("BatchSize", 10))
        self._region = self.queue_arn.split(":")[3]
        # Lambda reads the queue's attributes when the mapping is made.
        self.attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])[
            "Attributes"
        ]

    def _counts(self) -> tuple[int, int]:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self._url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return (
            int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        )

    def poll_once(self, report: Report) -> int:
        received = self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=self._batch,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not received:
            return 0
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": m.get("MessageAttributes", {}),
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": self.queue_arn,
                "awsRegion": self._region,
            }
            for m in received
        ]
        invocation = self._invoke({"Records": records})
        report.invocations.append(invocation)
        if invocation.error is not None:
            # Left for the visibility timeout, as Lambda leaves them.
            report.failures.append(f"sender raised {invocation.error.get('errorType')}")
            return len(records)
        failed = {
            item["itemIdentifier"]
            for item in (invocation.result or {}).get("batchItemFailures", [])
        }
        done = [r for r in records if r["messageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self._url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(done)
                ],
            )
        return len(records)

    def drain(self, report: Report, idle: float, most: float = 600.0) -> bool:
        """Poll until the queue is empty, hidden messages included; False if it
        held messages and had none to receive for `idle` seconds in a row (stuck),
        or after `most` seconds in all (a sender that never finishes). The time the
        sender takes is not held against it: a loaded machine slows it down."""
        started = waiting = time.monotonic()
        while time.monotonic() - started < most:
            if self.poll_once(report):
                waiting = time.monotonic()
                continue
            visible, hidden = self._counts()
            if visible == 0 and hidden == 0:
                return True
            if time.monotonic() - waiting > idle:
                return False
            time.sleep(0.25)
        return False


def scheduled_event(rule_arn: str) -> dict[str, Any]:
    """The event an AWS::Events::Rule with a ScheduleExpression sends its target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [rule_arn],
        "detail": {},
    }
