"""DynamoDB only: a decision writes its events in its action item, and, where
the table's stream delivers events, leaves the inbox entries it leaves to the
relay; what the inbox shows and the events say do not change.

The guarantees are those of every backend (contract/, api/): one transaction
per decision, events never lost (the same ids, sequences and order), and the
inbox never showing a run the decision route refuses. These tests hold the
items that keep them, and the relay's half."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.delivery import dispatch, relay
from chalicelib.domain import decision, events
from chalicelib.domain.models import Event, StepRule
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import carried, items, keys
from chalicelib.storage.dynamodb import outbox as dynamodb_outbox
from tests.support.dynamodb_requests import QueryLog
from tests.support.stored import (
    LATER,
    NOW,
    decide,
    first_pending,
    stored_run,
    stored_workflow,
)

FINANCE = frozenset({"finance"})
STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2030-01-02T03:04:05"


@pytest.fixture
def streamed(
    ddb: dynamodb.DynamoDBStorage, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dynamodb.DynamoDBStorage]:
    """The storage as deployed: the table's stream delivers the events."""
    monkeypatch.setenv(dynamodb_outbox.DELIVERY_VARIABLE, "stream")
    yield dynamodb.DynamoDBStorage(ddb.client, ddb.table)


def transaction_of(log: QueryLog) -> list[tuple[str, dict[str, Any]]]:
    ((params,),) = [[p] for name, p in log.params if name == "TransactWriteItems"]
    return [next(iter(entry.items())) for entry in params["TransactItems"]]


def item_size(item: dict[str, Any]) -> int:
    from bench.dynamodb_cost import item_size as size

    return size(item)


def scan(storage: dynamodb.DynamoDBStorage, prefix: str) -> list[dict[str, Any]]:
    return [
        item
        for item in storage.client.scan(TableName=storage.table)["Items"]
        if item["PK"]["S"].startswith(prefix)
    ]


def stream_record(storage: dynamodb.DynamoDBStorage, key: dict[str, Any], name: str) -> Any:
    """The stream record (NEW_IMAGE) of the item at `key` as it is now."""
    image = storage.client.get_item(TableName=storage.table, Key=key)["Item"]
    return {
        "eventName": name,
        "eventSourceARN": STREAM_ARN.format(table=storage.table),
        "dynamodb": {"Keys": key, "NewImage": image, "SequenceNumber": "1"},
    }


def test_an_approval_writes_its_events_in_its_action_item(ddb: dynamodb.DynamoDBStorage) -> None:
    workflow = engine.create_workflow(ddb, "Carried", steps=["Manager", "Finance"])
    run = engine.start_run(ddb, workflow.id, "PO-1042: 12 laptops")
    log = QueryLog(ddb)

    approved = engine.approve(ddb, run.id, "maria.rossi@example.com", comment="Within budget")

    written = transaction_of(log)
    assert [kind for kind, _ in written] == ["Update", "Put", "Put", "Delete"]
    (action,) = [body["Item"] for kind, body in written if kind == "Put" and "ACT#" in str(body)]
    assert not any("EVT#" in json.dumps(body, default=str) for _, body in written)
    # The two events and the action fit in one write unit (1 KB).
    assert item_size(action) <= 1024
    told = items.carried_events(action, events.run_subject(run.id))
    stored = ddb.list_events(events.run_subject(run.id), None, 10).items
    assert [e.type for e in stored] == [
        events.RUN_STARTED,
        events.STEP_ACTIVATED,
        events.STEP_APPROVED,
        events.STEP_ACTIVATED,
    ]
    assert list(stored[2:]) == told
    assert [e.sequence for e in told] == [3, 4] and approved.revision == items.RunRevision(
        4, ddb.shards
    )
    for event in told:
        body = json.loads(event.body)
        assert (body["id"], body["type"], body["sequence"]) == (
            event.id,
            event.type,
            f"{event.sequence:020d}",
        )


def test_a_run_s_events_page_across_its_event_and_action_items(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = engine.create_workflow(ddb, "Paged", steps=["A", "B", "C"])
    run = engine.start_run(ddb, workflow.id, "t")
    for actor in ("ann", "bob", "cy"):
        engine.approve(ddb, run.id, actor)
    subject = events.run_subject(run.id)
    whole = ddb.list_events(subject, None, 100).items
    assert [e.sequence for e in whole] == list(range(1, 9))
    paged: list[Event] = []
    after = None
    while True:
        page = ddb.list_events(subject, after, 3)
        paged += page.items
        if not page.more:
            break
        after = page.items[-1].sequence
    assert paged == list(whole)


def test_a_table_with_events_of_both_kinds_lists_and_delivers_them_in_order(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    """A run decided before actions carried events (its decisions' event items)
    and after: one stream, in sequence order, delivered in order."""
    workflow = engine.create_workflow(ddb, "Mixed", steps=["A", "B", "C"])
    run = engine.start_run(ddb, workflow.id, "t")
    engine.approve(ddb, run.id, "ann")
    # Written as the version before this one wrote it: the events as items.
    (action,) = [i for i in scan(ddb, keys.run_pk(run.id)) if i["SK"]["S"].startswith("ACT#")]
    for event in items.carried_events(action, events.run_subject(run.id)):
        ddb.client.put_item(TableName=ddb.table, Item=items.event_item(event, NOW, True))
    for name in (carried.EVENTS, carried.FROM, carried.COUNT, "due_pk", "due_at"):
        action.pop(name, None)
    ddb.client.put_item(TableName=ddb.table, Item=action)
    engine.approve(ddb, run.id, "bob")

    subject = events.run_subject(run.id)
    assert [e.sequence for e in ddb.list_events(subject, None, 100).items] == list(range(1, 7))
    sent: list[Event] = []

    def sink(event: Event, now: float) -> bool:
        sent.append(event)
        return True

    dispatch.deliver_subject(ddb, subject, sink, 0.0, float)
    assert [e.sequence for e in sent] == list(range(1, 7))
    assert first_pending(ddb, subject) is None
    assert subject not in ddb.pending_subjects("2099-01-01T00:00:00.000Z", 10)


def test_a_carried_event_is_marked_by_a_storage_that_did_not_hand_it_out(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    """The webhook sender's next invocation may mark what another found."""
    workflow = engine.create_workflow(ddb, "Marked", steps=["A", "B"])
    run = engine.start_run(ddb, workflow.id, "t")
    engine.approve(ddb, run.id, "ann")
    subject = events.run_subject(run.id)
    for _ in range(2):
        first = first_pending(ddb, subject)
        assert first is not None
        ddb.mark_delivered(first, NOW)
    other = dynamodb.DynamoDBStorage(ddb.client, ddb.table)
    pending = first_pending(other, subject)
    assert pending is not None and pending.event.sequence == 3
    again = dynamodb.DynamoDBStorage(ddb.client, ddb.table)
    again.mark_failed(pending, LATER)
    retried = first_pending(again, subject)
    assert retried is not None and (retried.attempts, retried.next_attempt_at) == (1, LATER)
    dynamodb.DynamoDBStorage(ddb.client, ddb.table).mark_delivered(retried, NOW)
    last = first_pending(ddb, subject)
    assert last is not None and (last.event.sequence, last.attempts) == (4, 0)


def test_where_the_stream_delivers_events_a_decision_leaves_its_old_entries_to_the_relay(
    streamed: dynamodb.DynamoDBStorage,
) -> None:
    steps = [StepRule("Manager", ("group:finance",)), StepRule("Pay", ("user:ann",))]
    workflow = stored_workflow(streamed, "Left", "", steps, NOW)
    run = stored_run(streamed, workflow, "r", NOW)
    left_behind = scan(streamed, keys.INBOX_PREFIX)
    log = QueryLog(streamed)

    moved = decide(streamed, run, actor="fay")

    written = transaction_of(log)
    # The run, its action (with the events), the entry it enters: no delete.
    assert [kind for kind, _ in written] == ["Update", "Put", "Put"]
    run_item = streamed.client.get_item(
        TableName=streamed.table, Key=items.key(keys.run_pk(run.id), keys.RUN_SK)
    )["Item"]
    left = json.loads(run_item[items.INBOX_LEFT]["S"])
    assert left["step_id"] == run.current_step_id
    assert left["keys"] == [[e["PK"]["S"], e["SK"]["S"]] for e in left_behind]
    # Until the relay has read the stream, both entries are there; the inbox
    # shows the run where it is, and only there.
    assert len(scan(streamed, keys.INBOX_PREFIX)) == 2
    assert engine.inbox(streamed, "fay", FINANCE, 10).items == ()
    (shown,) = engine.inbox(streamed, "ann", frozenset(), 10).items
    assert shown.run.id == run.id and decision.awaits(shown.run, "ann", frozenset())

    record = stream_record(streamed, items.key(keys.run_pk(run.id), keys.RUN_SK), "MODIFY")
    answer = relay.relay([record], lambda **_: {"Entries": []}, "bus", streamed.client.delete_item)

    assert answer == {"batchItemFailures": []}
    (entry,) = scan(streamed, keys.INBOX_PREFIX)
    assert (
        entry["PK"]["S"] == "INBOX#user:ann" and int(entry["step_id"]["N"]) == moved.current_step_id
    )
    # The next change leaves nothing there for a relay to find again.
    decide(streamed, moved, actor="ann")
    after = streamed.client.get_item(
        TableName=streamed.table, Key=items.key(keys.run_pk(run.id), keys.RUN_SK)
    )["Item"]
    assert json.loads(after[items.INBOX_LEFT]["S"])["step_id"] == moved.current_step_id
    assert engine.inbox(streamed, "ann", frozenset(), 10).items == ()


def test_the_relay_deletes_an_entry_only_while_it_is_the_left_step_s(
    streamed: dynamodb.DynamoDBStorage,
) -> None:
    workflow = stored_workflow(streamed, "Again", "", [StepRule("A"), StepRule("B")], NOW)
    run = stored_run(streamed, workflow, "r", NOW)
    decide(streamed, run)
    record = stream_record(streamed, items.key(keys.run_pk(run.id), keys.RUN_SK), "MODIFY")
    (pk, sk) = json.loads(record["dynamodb"]["NewImage"][items.INBOX_LEFT]["S"])["keys"][0]
    # Meanwhile the entry at that key became another step's (or the relay ran before).
    streamed.client.update_item(
        TableName=streamed.table,
        Key={"PK": {"S": pk}, "SK": {"S": sk}},
        UpdateExpression="SET step_id = :other",
        ExpressionAttributeValues={":other": {"N": "999999"}},
    )
    relay.forget_left([record], streamed.client.delete_item)
    assert {(e["PK"]["S"], e["SK"]["S"]) for e in scan(streamed, keys.INBOX_PREFIX)} >= {(pk, sk)}


def test_a_relay_that_cannot_delete_logs_it_and_still_reports_its_events_put(
    streamed: dynamodb.DynamoDBStorage, caplog: pytest.LogCaptureFixture
) -> None:
    from botocore.exceptions import ClientError

    workflow = stored_workflow(streamed, "Denied", "", [StepRule("A"), StepRule("B")], NOW)
    run = stored_run(streamed, workflow, "r", NOW)
    decide(streamed, run)
    record = stream_record(streamed, items.key(keys.run_pk(run.id), keys.RUN_SK), "MODIFY")

    def denied(**_: Any) -> Any:
        raise ClientError({"Error": {"Code": "AccessDeniedException"}}, "DeleteItem")

    answer = relay.relay([record], lambda **_: {"Entries": []}, "bus", denied)
    assert answer == {"batchItemFailures": []}
    assert "left behind" in caplog.text


def test_the_relay_puts_the_events_an_action_item_carries_in_order(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = engine.create_workflow(ddb, "Relayed", steps=["A"])
    run = engine.start_run(ddb, workflow.id, "t")
    engine.approve(ddb, run.id, "ann")
    key = items.key(keys.run_pk(run.id), keys.action_sk(1))
    record = stream_record(ddb, key, "INSERT")
    put: list[dict[str, Any]] = []

    def put_events(Entries: list[dict[str, Any]]) -> dict[str, Any]:
        put.extend(Entries)
        return {"Entries": [{"EventId": str(i)} for i, _ in enumerate(Entries)]}

    assert relay.relay([record], put_events, "bus") == {"batchItemFailures": []}
    assert [json.loads(e["Detail"])["type"] for e in put] == [
        events.STEP_APPROVED,
        events.RUN_COMPLETED,
    ]
    told = ddb.list_events(events.run_subject(run.id), 2, 10).items
    assert [e["Detail"] for e in put] == [e.body for e in told]
    # As Lambda hands it over, the binary attribute is base64 text.
    import base64

    record["dynamodb"]["NewImage"][carried.EVENTS]["B"] = base64.b64encode(
        record["dynamodb"]["NewImage"][carried.EVENTS]["B"]
    ).decode()
    assert relay.recorded_events(record) == [e.body for e in told]
    # A failure of either reports the record once.
    refused = relay.relay(
        [record], lambda Entries: {"Entries": [{"ErrorCode": "x"} for _ in Entries]}, "bus"
    )
    assert refused == {"batchItemFailures": [{"itemIdentifier": "1"}]}


def test_a_run_s_subject_is_the_one_the_events_give_it() -> None:
    assert keys.run_subject(42) == events.run_subject(42)
    assert keys.run_of_subject(events.run_subject(42)) == 42
    assert keys.run_of_subject(events.workflow_subject(42)) is None
    assert keys.subject_of(keys.run_pk(42)) == events.run_subject(42)


def test_a_run_sent_back_and_resubmitted_before_the_relay_ran_is_in_the_inbox_once(
    streamed: dynamodb.DynamoDBStorage,
) -> None:
    workflow = engine.create_workflow(streamed, "Rounds", steps=["Board", "CFO"])
    run = engine.start_run(streamed, workflow.id, "PO-1042", requested_by="rita")
    engine.return_run(streamed, run.id, "mo", "Attach the quote", clock=lambda: LATER)
    # Its round 1 entry is still there: the relay has not read the stream.
    (left,) = scan(streamed, keys.INBOX_PREFIX)
    assert engine.inbox(streamed, "anyone", frozenset(), 10).items == ()

    again = engine.resubmit(streamed, run.id, "rita", clock=lambda: "2030-01-03T00:00:00.000Z")

    # Round 2 waits at the same step: the entry of round 1 is not shown.
    assert len(scan(streamed, keys.INBOX_PREFIX)) == 2
    (shown,) = engine.inbox(streamed, "anyone", frozenset(), 10).items
    assert shown.run.id == run.id and shown.run.round == 2
    assert shown.run.current_step_since == again.current_step_since
    # The decision route agrees with it: the run is decided in round 2.
    assert decision.awaits(shown.run, "anyone", frozenset())
    approved = engine.approve(streamed, run.id, "anyone")
    assert approved.current_step is not None and approved.current_step.name == "CFO"
    assert [e for e in scan(streamed, keys.INBOX_PREFIX) if e["SK"] == left["SK"]] == [left]


def test_a_run_s_rounds_carry_their_events_in_one_gap_free_stream(
    streamed: dynamodb.DynamoDBStorage,
) -> None:
    workflow = engine.create_workflow(streamed, "Rounds", steps=["Board"])
    run = engine.start_run(streamed, workflow.id, "PO-1042", requested_by="rita")
    engine.return_run(streamed, run.id, "mo", "Attach the quote")
    engine.resubmit(streamed, run.id, "rita", "Quote attached")
    log = QueryLog(streamed)
    engine.approve(streamed, run.id, "mo", comment="Round 2: fine")

    (action,) = [b["Item"] for k, b in transaction_of(log) if k == "Put" and "ACT#" in str(b)]
    assert item_size(action) <= 1024
    listed = streamed.list_events(events.run_subject(run.id), None, 100).items
    assert [e.sequence for e in listed] == list(range(1, len(listed) + 1))
    kinds = [e.type for e in listed]
    assert kinds[:2] == [events.RUN_STARTED, events.STEP_ACTIVATED]
    assert events.RUN_RETURNED in kinds and events.RUN_RESUBMITTED in kinds
    assert kinds[-2:] == [events.STEP_APPROVED, events.RUN_COMPLETED]
    # Every change after the start rode in its action item: no event item for them.
    assert len(scan(streamed, keys.EVENT_PREFIX + events.run_subject(run.id))) == 2
