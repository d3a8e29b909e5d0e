"""The rehearsal judges the stack by what it does, not by how busy this machine
is. Its webhook queue (scripts/rehearsal/sources.py): a sender slowed down by
a loaded machine still drains it, however long that takes; a queue whose
messages stay hidden, with nothing left to receive, is stuck. make run's
deliveries (scripts/rehearsal/scenario.py): late while they still come. A
function (scripts/rehearsal/runtime.py): waited for its timeout times the
machine's load per core."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from scripts.rehearsal.runtime import Invocation, patience
from scripts.rehearsal.scenario import wait_while_growing
from scripts.rehearsal.sources import QueueSource, Report


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's SQS in process."""
    import boto3
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


class Sender:
    """Takes `seconds` over each invocation (a loaded machine's sender), and
    hides each message whose body is in `hidden` for that many seconds, once,
    reporting it failed: as the webhook sender hides a message until the retry
    of its event is due."""

    def __init__(self, sqs: Any, url: str, seconds: float, hidden: dict[str, int]) -> None:
        self.sqs, self.url, self.seconds, self.hidden = sqs, url, seconds, dict(hidden)
        self.done: list[str] = []

    def __call__(self, event: Any) -> Invocation:
        time.sleep(self.seconds)
        failed = []
        for record in event["Records"]:
            hide = self.hidden.pop(record["body"], None)
            if hide is None:
                self.done.append(record["body"])
                continue
            self.sqs.change_message_visibility(
                QueueUrl=self.url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=hide
            )
            failed.append({"itemIdentifier": record["messageId"]})
        return Invocation("request", result={"batchItemFailures": failed})


def queue_with(sqs: Any, bodies: list[str], sender: Any) -> QueueSource:
    url = sqs.create_queue(QueueName="webhooks")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    return QueueSource({"EventSourceArn": arn, "BatchSize": 1}, sender(url), sqs, url)


def test_a_slow_sender_drains_the_queue_however_long_it_works(sqs: Any) -> None:
    senders: list[Sender] = []

    def slow(url: str) -> Sender:
        # Six invocations of 0.4 s and a retry hidden for a second: over twice
        # the idle time the drain allows, spent working, not waiting.
        senders.append(Sender(sqs, url, 0.4, {"event 6": 1}))
        return senders[0]

    source = queue_with(sqs, [f"event {n}" for n in range(1, 7)], slow)
    started = time.monotonic()

    assert source.drain(Report(), idle=1.5)

    assert time.monotonic() - started > 2.5
    assert sorted(senders[0].done) == [f"event {n}" for n in range(1, 7)]


def test_a_queue_whose_messages_stay_hidden_is_stuck(sqs: Any) -> None:
    source = queue_with(sqs, ["event 1"], lambda url: Sender(sqs, url, 0, {"event 1": 60}))
    started = time.monotonic()

    assert not source.drain(Report(), idle=1.0)

    assert time.monotonic() - started < 10


def test_deliveries_that_come_slowly_are_waited_for_until_they_stop() -> None:
    started = time.monotonic()

    def arrived() -> int:  # one more every 0.3 s: 2.1 s for seven
        return min(7, int((time.monotonic() - started) / 0.3))

    assert wait_while_growing(arrived, 7, idle=1.0, every=0.05)
    assert not wait_while_growing(lambda: 3, 7, idle=0.5, every=0.05)


def test_a_function_is_waited_for_its_timeout_times_the_load_per_core() -> None:
    assert patience(load=0.3, cores=2) == 1.0  # a quiet machine: Lambda's timeout
    assert patience(load=20.0, cores=2) == 10.0
