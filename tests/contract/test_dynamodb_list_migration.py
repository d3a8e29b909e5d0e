"""DynamoDB only: scripts/migrate_list_indexes.py moves a table made before the
sharded run lists onto them, and a second run finds nothing to do.

The "legacy" table is defined as tables were (one whole-item index per run
list, RUNS in `all`); its items are written by today's adapter, then given the
legacy list keys in place of the sharded ones, as such a table holds them."""

from __future__ import annotations

from typing import Any, cast

import pytest

from chalicelib import engine
from chalicelib.domain.models import COMPLETED, IN_PROGRESS, REJECT, REJECTED
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import schema as dynamodb_schema
from chalicelib.storage.dynamodb.keys import Item
from scripts import migrate_list_indexes
from tests.support.stored import (
    NOW,
    decide,
    rules,
    stored_run,
    stored_workflow,
    workflow_with_steps,
)

LEGACY = "legacy"
LEGACY_INDEXES = {"all": "all_pk", **dynamodb_schema.LEGACY_INDEX_KEYS}


def _legacy_table(client: Any) -> None:
    """A table as the release before the sharded run lists made it (with the due index)."""
    client.create_table(
        TableName=LEGACY,
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
            {"AttributeName": "id", "AttributeType": "N"},
            *({"AttributeName": key, "AttributeType": "S"} for key in LEGACY_INDEXES.values()),
            {"AttributeName": dynamodb_schema.DUE_KEY, "AttributeType": "S"},
            {"AttributeName": dynamodb_schema.DUE_AT, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[
            {
                "IndexName": index,
                "KeySchema": [
                    {"AttributeName": key, "KeyType": "HASH"},
                    {"AttributeName": "id", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index, key in LEGACY_INDEXES.items()
        ]
        + [dynamodb_schema.index_definition(dynamodb_schema.DUE_INDEX)],
    )


def _make_legacy(storage: dynamodb.DynamoDBStorage) -> None:
    """Every run's list keys as the legacy adapter wrote them; no step count copies."""
    client = storage.client
    for item in client.scan(TableName=LEGACY)["Items"]:
        key = {"PK": item["PK"], "SK": item["SK"]}
        if item["SK"]["S"] == "#STEPS":
            client.delete_item(TableName=LEGACY, Key=key)
        elif item["SK"]["S"] == "#RUN":
            workflow, status = f"WF#{item['workflow_id']['N']}", item["status"]["S"]
            client.update_item(
                TableName=LEGACY,
                Key=key,
                UpdateExpression="SET all_pk = :all, workflow_pk = :wf, status_pk = :status, "
                "workflow_status_pk = :wfs REMOVE runs_pk, workflow_runs_pk, status_runs_pk, "
                "workflow_status_runs_pk",
                ExpressionAttributeValues={
                    ":all": {"S": "RUNS"},
                    ":wf": {"S": workflow},
                    ":status": {"S": status},
                    ":wfs": {"S": f"{workflow}#{status}"},
                },
            )


def _ids(storage: dynamodb.DynamoDBStorage, **filters: Any) -> list[int]:
    ids: list[int] = []
    cursor = None
    while True:
        page = engine.list_runs(
            storage, filters.get("workflow_id"), filters.get("status"), 2, cursor
        )
        ids += [run.id for run in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return ids


def test_a_legacy_table_moves_to_the_sharded_lists_once(
    ddb: dynamodb.DynamoDBStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    _legacy_table(ddb.client)
    storage = dynamodb.DynamoDBStorage(ddb.client, LEGACY, shards=3)
    first = stored_workflow(storage, "First", "", rules("Manager", "Finance"), NOW)
    second = stored_workflow(storage, "Second", "", rules("Manager"), NOW)
    runs = [stored_run(storage, (first, second)[i % 2], f"t{i}", NOW) for i in range(7)]
    done = decide(storage, decide(storage, runs[0]))
    rejected = decide(storage, runs[1], REJECT)
    _make_legacy(storage)

    migrated = migrate_list_indexes.migrate(storage)

    assert migrated.indexes_added == [
        "runs",
        "runs_by_workflow",
        "runs_by_status",
        "runs_by_workflow_status",
    ]
    assert (migrated.runs_moved, migrated.runs_already, migrated.workflows_counted) == (7, 0, 2)
    newest_first = sorted((run.id for run in runs), reverse=True)
    assert _ids(storage) == newest_first
    assert _ids(storage, status=COMPLETED) == [done.id]
    assert _ids(storage, status=REJECTED) == [rejected.id]
    assert _ids(storage, status=IN_PROGRESS) == [i for i in newest_first if i > rejected.id]
    assert _ids(storage, workflow_id=second.id) == [run.id for run in runs[::-1] if run.id % 2 == 0]
    for item in ddb.client.scan(TableName=LEGACY)["Items"]:
        assert not set(item) & set(migrate_list_indexes.LEGACY_RUN_KEYS) or (
            item["SK"]["S"] == "#WORKFLOW"
            and set(item) & set(migrate_list_indexes.LEGACY_RUN_KEYS) == {"all_pk"}
        ), item
    # Completions check the step counts the script gave the workflows.
    assert engine.approve(storage, runs[3].id, "ann").status == COMPLETED

    again = migrate_list_indexes.migrate(storage, drop_legacy=True)

    assert again.indexes_added == [] and again.runs_moved == 0 and again.workflows_counted == 0
    assert again.indexes_dropped == list(dynamodb_schema.LEGACY_INDEX_KEYS)
    described = ddb.client.describe_table(TableName=LEGACY)["Table"]["GlobalSecondaryIndexes"]
    assert sorted(index["IndexName"] for index in described) == sorted(dynamodb_schema.INDEXES)


def test_a_run_decided_while_the_script_reads_it_gets_the_keys_of_its_new_status(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    _legacy_table(ddb.client)
    storage = dynamodb.DynamoDBStorage(ddb.client, LEGACY)
    run = stored_run(storage, workflow_with_steps(storage, "Manager"), "t", NOW)
    _make_legacy(storage)
    key = {"PK": {"S": f"RUN#{run.id}"}, "SK": {"S": "#RUN"}}
    read = ddb.client.get_item(TableName=LEGACY, Key=key)["Item"]
    # Decided (by the version before, which sets no sharded key) after the script read it.
    ddb.client.update_item(
        TableName=LEGACY,
        Key=key,
        UpdateExpression="SET #status = :completed",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":completed": {"S": COMPLETED}},
    )
    dynamodb_schema.ensure_indexes(ddb.client, LEGACY)

    assert migrate_list_indexes._move_run(storage, cast(Item, read))

    assert _ids(storage, status=COMPLETED) == [run.id]
    assert _ids(storage, status=IN_PROGRESS) == []
    assert _ids(storage) == [run.id]


def test_the_script_says_what_it_did(
    ddb: dynamodb.DynamoDBStorage,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("WORKFLOW_TABLE", ddb.table)
    stored_run(ddb, workflow_with_steps(ddb, "Manager"), "t", NOW)

    assert migrate_list_indexes.main([], ddb.client) == 0

    out = capsys.readouterr().out
    assert "0 runs given sharded list keys (1 had them" in out
    monkeypatch.delenv("WORKFLOW_TABLE")
    assert migrate_list_indexes.main([], ddb.client) == 2
