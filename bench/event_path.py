"""The events' way out, per approval, as deployed: benchmark 4's all-in price.

    the decision's transaction -> the table's stream -> the relay (PutEvents
    on the bus, a message per run to the SQS queue, the inbox entries left
    deleted) -> the webhook sender (reads the run's first undelivered events,
    POSTs them, marks them delivered) -> one webhook

For each approval benchmark 4 makes, `EventPath.follow` builds the stream
records its writes make (NEW_IMAGE, as the table's stream gives them),
keeps those the relay's event source filter passes (deploy/stack.yaml),
hands them to the relay's own code (chalicelib/delivery/relay.py) with a
PutEvents and a SendMessageBatch that count what they are given and the
relay's own DynamoDB client, then hands each message sent, as the queue
would deliver it, to the sender's own code (`relay.deliver_messages`), one
invocation each, on a storage with a client of its own and a webhook that
answers 2xx. Every DynamoDB
request of the relay and the sender goes through a ledger (capacity units
from item sizes, as for the API function; the relay's deletes are in the
approval's own write units, as before), and each function's CPU is timed.

What is not measured but priced from a stated assumption: one relay
invocation per approval and one sender invocation per message (Lambda fills
batches only under load, so this is the price of quiet traffic; the note
says what full batches would save), the webhook's answer in
WEBHOOK_WAIT_MS, and 5 ms per AWS request of waiting (benchmark 4's model).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

APPROVE = "POST /runs/{id}/approve"
# The webhook receiver's answer, waited for by the sender (an assumption).
WEBHOOK_WAIT_MS = 50.0
# Waiting per AWS request from Lambda (benchmark 4's model).
REQUEST_WAIT_MS = 5.0
# SQS standard queue, per million requests (64 KB chunks); EventBridge custom
# events, per million (64 KB chunks). us-east-1 list prices, 2026-11.
SQS_PER_MILLION = 0.40
EVENTBRIDGE_PER_MILLION = 1.00
# SQS requests per message besides the relay's SendMessageBatch (counted): the
# sender's event source mapping's ReceiveMessage and DeleteMessage (one
# message per batch).
SQS_REQUESTS_PER_MESSAGE = 2


@dataclass
class PathCost:
    """What the events of one approval cost on their way out."""

    relayed_records: int = 0
    events: int = 0
    event_bytes: int = 0
    put_events_calls: int = 0
    # The relay's SendMessageBatch calls, and the messages they sent.
    send_calls: int = 0
    messages: int = 0
    relay_cpu_s: float = 0.0
    sender_cpu_s: float = 0.0
    relay_deletes: int = 0
    sender_requests: list[Any] = field(default_factory=list)


def stream_records(written: list[Any], table: str, first_sequence: int) -> list[dict[str, Any]]:
    """The stream records (NEW_IMAGE) the items `written` wrote make, in order."""
    records = []
    sequence = first_sequence
    for request in written:
        for before, after in zip(request.before, request.after, strict=False):
            if after is None:
                continue  # a REMOVE: no filter of the relay's passes it
            sequence += 1
            records.append(
                {
                    "eventName": "INSERT" if before is None else "MODIFY",
                    "eventSourceARN": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"
                    "/stream/bench",
                    "dynamodb": {
                        "Keys": {"PK": after["PK"], "SK": after["SK"]},
                        "NewImage": after,
                        "SequenceNumber": str(sequence),
                    },
                }
            )
    return records


def passes_relay_filter(record: Mapping[str, Any]) -> bool:
    """The relay's FilterCriteria (deploy/stack.yaml): inserted event and
    action items, and run items that name inbox entries left behind."""
    keys = record["dynamodb"]["Keys"]
    inserted = record["eventName"] == "INSERT"
    if inserted and (keys["PK"]["S"].startswith("EVT#") or keys["SK"]["S"].startswith("ACT#")):
        return True
    return "inbox_left" in record["dynamodb"]["NewImage"]


class EventPath:
    """Follows each approval's writes through the relay and the sender."""

    def __init__(
        self, table: str, delete_item: Any, sender: tuple[Any, Any], relay_ledger: Any = None
    ) -> None:
        self.table = table
        self.delete_item = delete_item
        # The relay's client's ledger, whose hooks' CPU is left out of the relay's.
        self.relay_ledger = relay_ledger
        # The sender's storage and its ledger (a client of its own).
        self.sender_storage, self.sender_ledger = sender
        self.sequence = 0
        # Each route's calls' costs; an approval's price is the approvals'.
        self.by_route: dict[str, list[PathCost]] = {}
        # The floor's write units, and the run's and action's sizes (set by the caller).
        self.floor: tuple[float, int, int] = (0.0, 0, 0)

    @property
    def costs(self) -> list[PathCost]:
        return self.by_route.get(APPROVE, [])

    def follow(self, written: list[Any], route: str = APPROVE) -> PathCost:
        from chalicelib.delivery import relay

        cost = PathCost()
        records = [
            r for r in stream_records(written, self.table, self.sequence) if passes_relay_filter(r)
        ]
        self.sequence += len(records) + 1
        cost.relayed_records = len(records)
        put: list[dict[str, Any]] = []

        def put_events(Entries: list[dict[str, Any]]) -> dict[str, Any]:
            put.extend(Entries)
            cost.put_events_calls += 1
            return {"Entries": [{"EventId": str(n)} for n in range(len(Entries))]}

        sent: list[dict[str, str]] = []

        def send_messages(entries: list[dict[str, str]]) -> dict[str, Any]:
            sent.extend(entries)
            cost.send_calls += 1
            return {"Successful": [{"Id": e["Id"]} for e in entries], "Failed": []}

        def delete_item(**params: Any) -> Any:
            cost.relay_deletes += 1
            return self.delete_item(**params)

        hooks = self.relay_ledger.spent if self.relay_ledger else 0.0
        start = time.process_time()
        failed = relay.relay(records, put_events, "bench", delete_item, send_messages)
        cost.relay_cpu_s = time.process_time() - start
        if self.relay_ledger:
            cost.relay_cpu_s -= self.relay_ledger.spent - hooks
        assert failed == {"batchItemFailures": []}, failed
        cost.events = len(put)
        cost.event_bytes = sum(len(entry["Detail"].encode()) for entry in put)
        cost.messages = len(sent)

        self.sender_ledger.take()
        for n, entry in enumerate(sent):
            # One invocation per message (quiet traffic).
            message = {
                "body": entry["MessageBody"],
                "receiptHandle": f"handle-{n}",
                "messageId": f"message-{n}",
            }
            hooks = self.sender_ledger.spent
            start = time.process_time()
            left = relay.deliver_messages(
                [message], self.sender_storage, _answered, time.time, _never_hidden, _no_delay
            )
            # The ledger's hooks (its own reads) are not the sender's work.
            cost.sender_cpu_s += time.process_time() - start - (self.sender_ledger.spent - hooks)
            assert left == {"batchItemFailures": []}, left
        cost.sender_requests = self.sender_ledger.take()
        self.by_route.setdefault(route, []).append(cost)
        return cost


def _answered(event: Any, now: float) -> bool:
    return True  # a webhook that answers 2xx (its wait is priced, WEBHOOK_WAIT_MS)


def _never_hidden(handle: str, seconds: int) -> None:
    raise AssertionError("the webhook answered: no message waits")


def _no_delay(attempts: int) -> float:
    return 0.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def lambda_duration_ms(cpu_ms: float, wait_ms: float, memory_mb: int, full_vcpu_mb: int) -> int:
    """Billed ms: the CPU stretched below a full vCPU, plus the waits, per 1 ms."""
    return math.ceil(cpu_ms * max(1.0, full_vcpu_mb / memory_mb) + wait_ms)


def priced(
    costs: list[PathCost], prices: Mapping[str, float], memory_mb: int, full_vcpu_mb: int
) -> dict[str, float]:
    """The events' way out of one approval, in dollars per million approvals, by part."""
    per_gb_s = prices["lambda_per_gb_second"]
    invocation = prices["lambda_per_million_requests"]
    rru, wru = prices["dynamodb_per_million_rru"], prices["dynamodb_per_million_wru"]
    events = mean([c.events for c in costs])
    messages = mean([c.messages for c in costs])
    sends = mean([c.send_calls for c in costs])
    relay_requests = mean([c.put_events_calls + c.relay_deletes for c in costs]) + sends
    relay_ms = lambda_duration_ms(
        mean([c.relay_cpu_s for c in costs]) * 1e3,
        relay_requests * REQUEST_WAIT_MS,
        memory_mb,
        full_vcpu_mb,
    )
    sender_requests = mean([len(c.sender_requests) for c in costs])
    # Per invocation (a message): its share of the sender's CPU and requests,
    # and the webhook's answer to each event it sends.
    per_message = max(messages, 1.0)
    sender_ms = lambda_duration_ms(
        mean([c.sender_cpu_s for c in costs]) * 1e3 / per_message,
        sender_requests / per_message * REQUEST_WAIT_MS + events / per_message * WEBHOOK_WAIT_MS,
        memory_mb,
        full_vcpu_mb,
    )
    gb = memory_mb / 1024
    return {
        "relay invocations": invocation * 1,
        "relay duration": relay_ms / 1000 * gb * per_gb_s * 1e6,
        "EventBridge": events * EVENTBRIDGE_PER_MILLION,
        "SQS": (sends + messages * SQS_REQUESTS_PER_MESSAGE) * SQS_PER_MILLION,
        "sender invocations": messages * invocation,
        "sender duration": messages * sender_ms / 1000 * gb * per_gb_s * 1e6,
        "sender DynamoDB": mean(
            [
                sum(r.rcu * rru + (r.wcu + r.index_wcu) * wru for r in c.sender_requests)
                for c in costs
            ]
        ),
    }
