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


def test_in_progress_lists_are_spread_over_twice_the_shards(
    sharded: dynamodb.DynamoDBStorage,
) -> None:
    workflow = stored_workflow(sharded, "One", "", rules("A"), NOW)
    runs = [stored_run(sharded, workflow, "r", NOW) for _ in range(9)]
    status_keys = {
        int(item["id"]["N"]): (item["status_runs_pk"]["S"], item["runs_pk"]["S"])
        for item in sharded.client.scan(TableName=sharded.table)["Items"]
        if item["PK"]["S"].startswith("RUN#")
    }

    in_progress_shards = SHARDS * dynamodb_keys.IN_PROGRESS_SHARDS_PER_SHARD
    assert status_keys == {
        run.id: (f"in_progress#{run.id % in_progress_shards}", f"RUNS#{run.id % SHARDS}")
        for run in runs
    }
    engine.approve(sharded, runs[-1].id, "bob", clock=lambda: LATER)
    listed = sharded.list_runs(None, "in_progress", None, 20).items
    assert [run.id for run in listed] == sorted((run.id for run in runs[:-1]), reverse=True)


def _as_written_before_the_shards_were_kept(storage: dynamodb.DynamoDBStorage, run_id: int) -> None:
    """Make run `run_id`'s item and open-step entry as a release before this
    one wrote them: no `inbox_shards`, the entry over as many shards as a
    group's inbox."""
    run_key = {"PK": {"S": f"RUN#{run_id}"}, "SK": {"S": "#RUN"}}
    storage.client.update_item(
        TableName=storage.table, Key=run_key, UpdateExpression="REMOVE inbox_shards"
    )
    for item in storage.client.scan(TableName=storage.table)["Items"]:
        if item["PK"]["S"].startswith("INBOX#") and int(item["run_id"]["N"]) == run_id:
            storage.client.delete_item(
                TableName=storage.table, Key={"PK": item["PK"], "SK": item["SK"]}
            )
            item["PK"] = {"S": f"INBOX#{run_id % storage.shards}#*"}
            storage.client.put_item(TableName=storage.table, Item=item)


def test_a_run_waiting_since_before_the_open_inbox_had_more_shards_leaves_no_entry(
    sharded: dynamodb.DynamoDBStorage,
) -> None:
    workflow = stored_workflow(sharded, "Open", "", rules("A", "B"), NOW)
    runs = [stored_run(sharded, workflow, "r", NOW) for _ in range(SHARDS + 1)]
    for run in runs:
        _as_written_before_the_shards_were_kept(sharded, run.id)
    # Some entries lie where this release puts them, some not.
    assert {run.id % OPEN_SHARDS == run.id % SHARDS for run in runs} == {True, False}

    assert [r.id for r in sharded.inbox(["user:cy", "*"], None, 50).items] == [r.id for r in runs]
    for run in runs:
        engine.approve(sharded, run.id, "bob", clock=lambda: LATER)

    inboxes = partitions(sharded, "INBOX#")
    assert inboxes == {
        f"INBOX#{shard}#*": {run.id for run in runs if run.id % OPEN_SHARDS == shard}
        for shard in {run.id % OPEN_SHARDS for run in runs}
    }
    entries = [
        item
        for item in sharded.client.scan(TableName=sharded.table)["Items"]
        if item["PK"]["S"].startswith("INBOX#")
    ]
    assert len(entries) == len(runs)  # the next step's, one each


def test_entries_put_before_the_shards_were_raised_are_deleted_where_they_are(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    few = dynamodb.DynamoDBStorage(ddb.client, ddb.table, shards=2)
    approvers = (StepRule("Pay", ("group:finance", "user:ann")), StepRule("Any"))
    workflow = stored_workflow(few, "Two", "", list(approvers), NOW)
    runs = [stored_run(few, workflow, "r", NOW) for _ in range(6)]
    many = dynamodb.DynamoDBStorage(ddb.client, ddb.table, shards=5)
    # Their entries were put over 2 shards: read over 5, and deleted where they are.
    assert {r.id for r in many.inbox(["user:ann"], None, 50).items} == {r.id for r in runs}
    for run in runs:
        engine.approve(many, run.id, "bob", groups=FINANCE, clock=lambda: LATER)

    inboxes = partitions(many, "INBOX#")
    open_shards = dynamodb_keys.open_inbox_shards(5)
    assert inboxes == {
        f"INBOX#{shard}#*": {run.id for run in runs if run.id % open_shards == shard}
        for shard in {run.id % open_shards for run in runs}
    }
