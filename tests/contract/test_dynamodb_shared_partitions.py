"""DynamoDB only: the partitions all traffic reaches are spread over the shards.

Group and open-step inboxes, and the due index's deadlines, as the run lists
(test_dynamodb_lists.py); event items stay out of the due index where the
table's stream delivers them."""

from __future__ import annotations

import pytest

from chalicelib import engine
from chalicelib.domain import decision, errors
from chalicelib.domain.lifecycle import OnDeadline
from chalicelib.domain.models import Deadline, StepRule
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import keys as dynamodb_keys
from chalicelib.storage.dynamodb import outbox as dynamodb_outbox
from chalicelib.storage.dynamodb.schema import DUE_AT, DUE_KEY
from tests.support.dynamodb_requests import QueryLog
from tests.support.stored import LATER, NOW, rules, stored_run, stored_workflow

SHARDS = 4
OPEN_SHARDS = dynamodb_keys.open_inbox_shards(SHARDS)
FINANCE = frozenset({"finance"})
FAR_FUTURE = "2099-01-01T00:00:00.000Z"


@pytest.fixture
def sharded(ddb: dynamodb.DynamoDBStorage) -> dynamodb.DynamoDBStorage:
    return dynamodb.DynamoDBStorage(ddb.client, ddb.table, shards=SHARDS)


def partitions(storage: dynamodb.DynamoDBStorage, prefix: str) -> dict[str, set[int]]:
    """PK -> the run ids of the items whose PK starts with `prefix`."""
    found: dict[str, set[int]] = {}
    for item in storage.client.scan(TableName=storage.table)["Items"]:
        if item["PK"]["S"].startswith(prefix):
            found.setdefault(item["PK"]["S"], set()).add(int(item["run_id"]["N"]))
    return found


def test_group_and_open_inboxes_are_spread_over_the_shards_and_a_user_s_is_one(
    sharded: dynamodb.DynamoDBStorage,
) -> None:
    approvers = ("group:finance", "user:ann")
    named = stored_workflow(sharded, "Named", "", [StepRule("Pay", approvers)], NOW)
    open_to_all = stored_workflow(sharded, "Open", "", rules("Any"), NOW)
    runs = [stored_run(sharded, w, f"r{i}", NOW) for w in (named, open_to_all) for i in range(8)]

    inboxes = partitions(sharded, "INBOX#")

    named_ids = {run.id for run in runs if run.workflow_id == named.id}
    open_ids = {run.id for run in runs if run.workflow_id == open_to_all.id}
    assert inboxes["INBOX#user:ann"] == named_ids
    for shard in range(SHARDS):
        assert inboxes.get(f"INBOX#{shard}#group:finance", set()) == {
            i for i in named_ids if i % SHARDS == shard
        }
    # The open steps' inbox takes every open step's moves: more shards.
    assert OPEN_SHARDS > SHARDS
    for shard in range(OPEN_SHARDS):
        assert inboxes.get(f"INBOX#{shard}#*", set()) == {
            i for i in open_ids if i % OPEN_SHARDS == shard
        }
    assert len(inboxes) == 1 + SHARDS + len(open_ids)


def test_an_inbox_page_reads_every_shard_once_and_pages_through_in_order(
    sharded: dynamodb.DynamoDBStorage,
) -> None:
    workflow = stored_workflow(sharded, "Named", "", [StepRule("Pay", ("group:finance",))], NOW)
    open_to_all = stored_workflow(sharded, "Open", "", rules("Any"), NOW)
    runs = [stored_run(sharded, w, "r", NOW) for _ in range(7) for w in (workflow, open_to_all)]
    log = QueryLog(sharded)

    first = sharded.inbox(decision.inbox_keys("cy", FINANCE), None, 5)

    # The user's inbox, then each shard of the group's and of the open steps'.
    assert log.counts["Query"] == 1 + SHARDS + OPEN_SHARDS
    assert log.counts["BatchGetItem"] == 1
    seen = [run.id for run in first.items]
    page = first
    while page.more:
        page = sharded.inbox(decision.inbox_keys("cy", FINANCE), page.resume, 5)
        seen += [run.id for run in page.items]
    assert seen == sorted(run.id for run in runs)  # all reached at NOW: id order


def test_decisions_move_sharded_entries_and_leave_none_behind(
    sharded: dynamodb.DynamoDBStorage,
) -> None:
    workflow = stored_workflow(
        sharded, "Two", "", [StepRule("Pay", ("group:finance",)), StepRule("Any")], NOW
    )
    runs = [stored_run(sharded, workflow, "r", NOW) for _ in range(5)]
    for run in runs:
        engine.approve(sharded, run.id, "bob", groups=FINANCE, clock=lambda: LATER)

    inboxes = partitions(sharded, "INBOX#")

    assert not any("group:finance" in pk for pk in inboxes)
    assert set().union(*inboxes.values()) == {run.id for run in runs}
    assert all(pk.endswith("#*") for pk in inboxes)
    for run in runs[:3]:
        engine.approve(sharded, run.id, "cy", clock=lambda: LATER)
    assert set().union(*partitions(sharded, "INBOX#").values()) == {run.id for run in runs[3:]}


def test_deadlines_are_spread_over_the_shards(sharded: dynamodb.DynamoDBStorage) -> None:
    deadline = Deadline(60, OnDeadline.REMIND)
    workflow = stored_workflow(sharded, "Due", "", [StepRule("Ops", deadline=deadline)], NOW)
    runs = [stored_run(sharded, workflow, "r", NOW) for _ in range(6)]
    keys = {
        int(item["PK"]["S"].removeprefix("RUN#")): item[DUE_KEY]["S"]
        for item in sharded.client.scan(TableName=sharded.table)["Items"]
        if DUE_KEY in item and item["PK"]["S"].startswith("RUN#")
    }
    deadline_shards = SHARDS * dynamodb_keys.DEADLINE_SHARDS_PER_SHARD
    assert keys == {run.id: f"DEADLINE#{run.id % deadline_shards}" for run in runs}
    log = QueryLog(sharded)

    due = sharded.due_runs(FAR_FUTURE, 4)

    assert log.counts["Query"] == deadline_shards
    # The soonest first: all fall due at once, in id order.
    assert due == sorted(run.id for run in runs)[:4]
    assert engine.sweep(sharded, clock=lambda: FAR_FUTURE) == len(runs)
    assert sharded.due_runs(FAR_FUTURE, 10) == []


def test_where_the_stream_delivers_events_they_stay_out_of_the_due_index(
    ddb: dynamodb.DynamoDBStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(dynamodb_outbox.DELIVERY_VARIABLE, "stream")
    streamed = dynamodb.DynamoDBStorage(ddb.client, ddb.table)
    run = stored_run(streamed, stored_workflow(streamed, "S", "", rules("A"), NOW), "r", NOW)

    events = [
        item
        for item in ddb.client.scan(TableName=ddb.table)["Items"]
        if item["PK"]["S"].startswith("EVT#")
    ]

    assert len(events) == 3  # workflow.created, run.started, step.activated
    assert not any(DUE_KEY in item or DUE_AT in item for item in events)
    assert streamed.pending_subjects(FAR_FUTURE, 10) == []
    assert len(streamed.list_events(f"runs/{run.id}", None, 10).items) == 2
    # Where this service sends them itself (the default), they are found there.
    monkeypatch.delenv(dynamodb_outbox.DELIVERY_VARIABLE)
    table = dynamodb.DynamoDBStorage(ddb.client, ddb.table)
    second = stored_run(table, table.get_workflow(run.workflow_id), "r2", NOW)
    assert table.pending_subjects(FAR_FUTURE, 10) == [f"runs/{second.id}"]


def test_an_unknown_delivery_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dynamodb_outbox.DELIVERY_VARIABLE, "carrier pigeon")
    with pytest.raises(errors.Unavailable):
        dynamodb_outbox.configured_delivery()
