"""The cloud half of delivery, in moto: the table's stream -> the relay ->
EventBridge -> SQS -> the webhook sender. Lambda's stream events are built
from moto's get_records, as chalice.test has no DynamoDB stream events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import app as app_module
from chalicelib.api.representations import listed_event
from chalicelib.delivery import dispatch, relay
from chalicelib.domain.models import Event
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import schema as dynamodb_schema
from tests.support.backends import aws_env
from tests.support.stored import NOW, decide, first_pending, stored_run, workflow_with_steps

T = 1_900_000_000.0
TABLE = "relayed"


class Cloud:
    """A table with its stream, a bus with a rule to a queue, in moto."""

    def __init__(self) -> None:
        import boto3

        self.ddb = boto3.client("dynamodb")
        dynamodb_schema.ensure_table(self.ddb, TABLE)
        self.storage = dynamodb.DynamoDBStorage(self.ddb, TABLE)
        self.stream_arn = self.ddb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
        self.streams = boto3.client("dynamodbstreams")
        self.events = boto3.client("events")
        self.bus = self.events.create_event_bus(Name="workflow-events")["EventBusArn"]
        self.sqs = boto3.client("sqs")
        # What the bus got (a rule of every event to a queue, as a subscriber's),
        # and the webhook queue the relay tells.
        self.on_bus = self.sqs.create_queue(QueueName="on-the-bus")["QueueUrl"]
        self.webhooks = self.sqs.create_queue(QueueName="webhooks")["QueueUrl"]
        queue_arn = self.sqs.get_queue_attributes(
            QueueUrl=self.on_bus, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        self.events.put_rule(
            Name="everything",
            EventBusName="workflow-events",
            EventPattern=json.dumps({"source": [{"prefix": "/approval-workflows/"}]}),
        )
        self.events.put_targets(
            Rule="everything",
            EventBusName="workflow-events",
            Targets=[{"Id": "q", "Arn": queue_arn}],
        )

    def send_messages(self, entries: list[dict[str, str]]) -> Any:
        """SendMessageBatch on the webhook queue, as the relay's messenger sends it."""
        return self.sqs.send_message_batch(QueueUrl=self.webhooks, Entries=entries)

    def relay(self) -> dict[str, Any]:
        """The relay on every record of the stream so far."""
        return relay.relay(
            self.lambda_event()["Records"],
            self.events.put_events,
            "workflow-events",
            send_messages=self.send_messages,
        )

    def lambda_event(self) -> dict[str, Any]:
        """Every record of the stream so far, as Lambda hands them to a function."""
        records = []
        for shard in self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"][
            "Shards"
        ]:
            iterator = self.streams.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard["ShardId"],
                ShardIteratorType="TRIM_HORIZON",
            )["ShardIterator"]
            for record in self.streams.get_records(ShardIterator=iterator)["Records"]:
                change = dict(record["dynamodb"])
                change["ApproximateCreationDateTime"] = change[
                    "ApproximateCreationDateTime"
                ].timestamp()
                records.append({**record, "dynamodb": change, "eventSourceARN": self.stream_arn})
        return {"Records": records}

    def messages(self, queue: str = "") -> list[dict[str, Any]]:
        """A queue's messages (the bus's copy's by default), as Lambda hands them to a function."""
        found: list[dict[str, Any]] = []
        while True:
            answer = self.sqs.receive_message(QueueUrl=queue or self.on_bus, MaxNumberOfMessages=10)
            if not answer.get("Messages"):
                return found
            for message in answer["Messages"]:
                found.append(
                    {
                        "messageId": message["MessageId"],
                        "receiptHandle": message["ReceiptHandle"],
                        "body": message["Body"],
                    }
                )


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    from moto import mock_aws

    # botocore sends DynamoDB Streams calls to an account-id endpoint moto does not know.
    with aws_env(AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled"), mock_aws():
        yield Cloud()


def history(cloud: Cloud) -> tuple[int, int]:
    workflow = workflow_with_steps(cloud.storage, "A", "B")
    run = decide(
        cloud.storage, decide(cloud.storage, stored_run(cloud.storage, workflow, "t", NOW))
    )
    return workflow.id, run.id


def test_the_relay_puts_every_event_item_on_the_bus_and_nothing_else(cloud: Cloud) -> None:
    workflow_id, run_id = history(cloud)
    event = cloud.lambda_event()
    assert len(event["Records"]) > 7  # the run, actions and counters stream too

    answer = relay.relay(event["Records"], cloud.events.put_events, "workflow-events")

    assert answer == {"batchItemFailures": []}
    bodies = [json.loads(message["body"]) for message in cloud.messages()]
    stored = [
        listed_event(e) for e in cloud.storage.list_events(f"runs/{run_id}", None, 100).items
    ] + [
        listed_event(e)
        for e in cloud.storage.list_events(f"workflows/{workflow_id}", None, 100).items
    ]
    assert sorted(body["detail"]["id"] for body in bodies) == sorted(e["id"] for e in stored)
    for body in bodies:
        assert body["detail-type"] == body["detail"]["type"]
        assert body["source"] == "/approval-workflows/dev"


def test_the_handler_relays_to_the_configured_bus(
    cloud: Cloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    history(cloud)
    monkeypatch.setenv("WORKFLOW_EVENT_BUS", "workflow-events")
    monkeypatch.setenv("WORKFLOW_WEBHOOK_QUEUE_URL", cloud.webhooks)
    relay.put_events_client.cache_clear()
    relay.webhook_messenger.cache_clear()
    try:
        answer = app_module.on_dynamodb_record(cloud.lambda_event(), None)
    finally:
        relay.put_events_client.cache_clear()
        relay.webhook_messenger.cache_clear()
    assert answer == {"batchItemFailures": []}
    assert len(cloud.messages()) == 7
    # The run's six events and the workflow's one: a message each subject.
    assert len(cloud.messages(cloud.webhooks)) == 2


def test_the_relay_tells_the_webhook_queue_once_per_subject_through_its_last_event(
    cloud: Cloud,
) -> None:
    workflow_id, run_id = history(cloud)

    assert cloud.relay() == {"batchItemFailures": []}

    told = sorted(relay.told_by(m["body"]) for m in cloud.messages(cloud.webhooks))
    assert told == sorted([(f"runs/{run_id}", 6), (f"workflows/{workflow_id}", 1)])
    assert len(cloud.messages()) == 7  # the bus still gets every event


def test_records_whose_message_the_queue_refused_are_reported_for_retry(cloud: Cloud) -> None:
    workflow_id, run_id = history(cloud)
    records = cloud.lambda_event()["Records"]

    def refuse_the_run(entries: list[dict[str, str]]) -> Any:
        run = [e for e in entries if json.loads(e["MessageBody"])["subject"] == f"runs/{run_id}"]
        sent = cloud.send_messages([e for e in entries if e not in run])
        return {**sent, "Failed": [{"Id": e["Id"], "Code": "InternalError"} for e in run]}

    answer = relay.relay(records, cloud.events.put_events, "workflow-events", None, refuse_the_run)

    failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
    run_records = {
        r["dynamodb"]["SequenceNumber"]
        for r in records
        if any(body for body in relay.recorded_events(r) if f'"runs/{run_id}"' in body)
    }
    assert failed == run_records and len(run_records) == 4  # two event items, two action items
    told = [relay.told_by(m["body"])[0] for m in cloud.messages(cloud.webhooks)]
    assert told == [f"workflows/{workflow_id}"]


def test_records_the_bus_refused_are_reported_for_retry(cloud: Cloud) -> None:
    history(cloud)
    records = cloud.lambda_event()["Records"]
    refused: list[str] = []

    def put_events(Entries: list[dict[str, Any]]) -> dict[str, Any]:
        answer = cloud.events.put_events(Entries=Entries[1:])
        refused.append(json.loads(Entries[0]["Detail"])["id"])
        return {"Entries": [{"ErrorCode": "InternalFailure"}, *answer["Entries"]]}

    answer = relay.relay(records, put_events, "workflow-events")

    failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
    by_sequence = {
        r["dynamodb"]["SequenceNumber"]: json.loads(r["dynamodb"]["NewImage"]["event"]["S"])["id"]
        for r in records
        if "event" in r["dynamodb"].get("NewImage", {})
    }
    assert sorted(by_sequence[sequence] for sequence in failed) == sorted(refused)
    assert len(refused) == 1  # seven events: one batch of seven


class Sink:
    def __init__(self) -> None:
        self.sent: list[Event] = []
        self.failing = False

    def __call__(self, event: Event, now: float) -> bool:
        self.sent.append(event)
        return not self.failing


def test_the_sender_delivers_each_subject_in_order_whatever_order_sqs_keeps(
    cloud: Cloud,
) -> None:
    """Messages of one event each, as the bus's rule sent them before the relay
    told the queue itself (a deployment's queue may still hold some)."""
    _, run_id = history(cloud)
    relay.relay(cloud.lambda_event()["Records"], cloud.events.put_events, "workflow-events")
    messages = cloud.messages()
    sink = Sink()
    hidden: list[tuple[str, int]] = []

    # Newest first, and each message twice: SQS promises neither order nor once.
    backwards = sorted(messages, key=lambda m: -int(json.loads(m["body"])["detail"]["sequence"]))
    answer = relay.deliver_messages(
        backwards + messages,
        cloud.storage,
        sink,
        lambda: T,
        lambda receipt, seconds: hidden.append((receipt, seconds)),
        lambda attempts: 10.0,
    )

    assert answer == {"batchItemFailures": []} and hidden == []
    run_events = [e.sequence for e in sink.sent if e.subject == f"runs/{run_id}"]
    assert run_events == [1, 2, 3, 4, 5, 6]
    assert len(sink.sent) == 7


def test_a_message_sends_its_run_through_its_own_event_and_leaves_later_ones(
    cloud: Cloud,
) -> None:
    """Every event put on the bus has a message of its own: the sender goes no
    further than the message's event (the rest of its decision's events, which
    one write marks, included), and reads no more."""
    _, run_id = history(cloud)
    relay.relay(cloud.lambda_event()["Records"], cloud.events.put_events, "workflow-events")
    subject = f"runs/{run_id}"
    by_sequence = {
        int(json.loads(m["body"])["detail"]["sequence"]): m
        for m in cloud.messages()
        if json.loads(m["body"])["detail"]["subject"] == subject
    }
    sink = Sink()

    def deliver(message: dict[str, Any]) -> dict[str, Any]:
        return relay.deliver_messages(
            [message], cloud.storage, sink, lambda: T, _never, lambda attempts: 10.0
        )

    # The first approval's approved (3) and activated (4): after the run's start.
    assert deliver(by_sequence[3]) == {"batchItemFailures": []}
    assert [e.sequence for e in sink.sent] == [1, 2, 3, 4]
    pending = first_pending(cloud.storage, subject)
    assert pending is not None and pending.event.sequence == 5
    assert deliver(by_sequence[4]) == {"batchItemFailures": []}  # delivered already
    assert deliver(by_sequence[6]) == {"batchItemFailures": []}
    assert [e.sequence for e in sink.sent] == [1, 2, 3, 4, 5, 6]
    assert first_pending(cloud.storage, subject) is None


def _never(receipt: str, seconds: int) -> None:
    raise AssertionError("nothing failed: no message is hidden")


def test_a_failing_webhook_hides_the_message_until_its_retry(cloud: Cloud) -> None:
    history(cloud)
    cloud.relay()
    messages = cloud.messages(cloud.webhooks)
    sink = Sink()
    sink.failing = True
    hidden: list[tuple[str, int]] = []

    answer = relay.deliver_messages(
        messages,
        cloud.storage,
        sink,
        lambda: T,
        lambda receipt, seconds: hidden.append((receipt, seconds)),
        lambda attempts: 30.0,
    )

    assert {item["itemIdentifier"] for item in answer["batchItemFailures"]} == {
        message["messageId"] for message in messages
    }
    assert {seconds for _, seconds in hidden} == {30}
    # Each subject was tried once: its first event; the rest wait behind it.
    assert sorted(e.sequence for e in sink.sent) == [1, 1]
    pending = first_pending(cloud.storage, sink.sent[0].subject)
    assert pending is not None and pending.attempts == 1
    assert pending.next_attempt_at == dispatch.iso(T + 30)
