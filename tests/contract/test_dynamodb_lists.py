"""DynamoDB only: what a list page costs (a workflow page one Query on an index;
a run page one Query per shard of its list and one BatchGetItem), and pages
that stay correct where an index lags, a Query is cut short (1 MB), a big item
is refused (400 KB: by the limits, first) or the shards were fewer when runs
were written."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import engine
from chalicelib.api import validation
from chalicelib.domain.lifecycle import RunStatus
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import keys as dynamodb_keys
from chalicelib.storage.dynamodb import schema as dynamodb_schema
from tests.support.dynamodb_requests import QueryLog
from tests.support.stored import (
    NOW,
    decide,
    rules,
    stored_run,
    stored_step,
    stored_workflow,
    workflow_with_steps,
)

JSON = {"Content-Type": "application/json"}


def _post(client: Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.http.post(path, headers=JSON, body=json.dumps(body))
    assert response.status_code == 201, response.json_body
    return response.json_body


def _walk(
    client: Client, path: str, log: QueryLog, shards: Optional[int] = None
) -> list[list[dict[str, Any]]]:
    """Every page of a list, asserting what each cost: with `shards`, one Query
    on each shard of one run index and one BatchGetItem; else one Query."""
    pages: list[list[dict[str, Any]]] = []
    cursor: Optional[str] = None
    while True:
        log.reset()
        separator = "&" if "?" in path else "?"
        response = client.http.get(path + (f"{separator}cursor={cursor}" if cursor else ""))
        assert response.status_code == 200, response.json_body
        queries = [params for operation, params in log.params if operation == "Query"]
        if shards is None:
            assert log.counts == {"Query": 1}, (path, log.counts)
        else:
            expected = {"Query": shards, "BatchGetItem": 1} if queries else {"Query": shards}
            assert log.counts == expected or (
                not response.json_body["items"] and log.counts == {"Query": shards}
            ), (path, log.counts)
            assert len({query["ExpressionAttributeValues"][":pk"]["S"] for query in queries}) == (
                shards
            )
        assert {query["IndexName"] for query in queries} <= set(dynamodb_schema.INDEX_KEYS)
        assert len({query["IndexName"] for query in queries}) == 1
        pages.append(response.json_body["items"])
        cursor = response.json_body["next_cursor"]
        if cursor is None:
            return pages


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?status=in_progress",
        "?workflow_id={first}",
        "?workflow_id={first}&status=completed",
    ],
    ids=["all", "by-status", "by-workflow", "by-workflow-and-status"],
)
def test_each_run_page_is_one_query_per_shard_and_one_batch_get(
    ddb: dynamodb.DynamoDBStorage, query: str
) -> None:
    log = QueryLog(ddb)
    with Client(app_module.app) as client:
        first = _post(client, "/workflows", {"name": "first", "steps": ["a"]})
        second = _post(client, "/workflows", {"name": "second", "steps": ["a"]})
        for i in range(12):
            run = _post(
                client,
                "/runs",
                {"workflow_id": (first, second)[i % 3 == 0]["id"], "title": f"t{i}"},
            )
            if i % 2:
                client.http.post(
                    f"/runs/{run['id']}/approve", headers=JSON, body=json.dumps({"actor": "ann"})
                )
        filters = query.replace("?", "&").format(first=first["id"])
        status = next((s for s in ("in_progress", "completed") if s in query), None)
        # The in-progress lists take two writes a run: twice the shards.
        shards = len(dynamodb_keys.partitions(None, status, ddb.shards)[1])
        assert shards == ddb.shards * (2 if status == "in_progress" else 1)
        pages = _walk(client, "/runs?limit=2" + filters, log, shards=shards)
    assert len(pages) >= 2


def test_each_workflow_page_is_one_query_on_an_index(ddb: dynamodb.DynamoDBStorage) -> None:
    log = QueryLog(ddb)
    with Client(app_module.app) as client:
        for i in range(5):
            workflow = _post(client, "/workflows", {"name": f"w{i}", "steps": ["a"]})
            _post(client, f"/workflows/{workflow['id']}/steps", {"name": "b"})
        pages = _walk(client, "/workflows?limit=2", log)
    assert [len(page) for page in pages] == [2, 2, 1]
    assert all(
        [step["name"] for step in workflow["steps"]] == ["a", "b"]
        for page in pages
        for workflow in page
    )


def test_a_page_cut_short_at_one_megabyte_still_walks_every_workflow_once(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    # About 20 KB each (4-byte characters): 60 of them are more than one Query reads.
    big = "\N{GRINNING FACE}" * validation.MAX_TEXT
    created = [stored_workflow(ddb, f"big {i}", big, rules("A"), NOW).id for i in range(60)]
    log = QueryLog(ddb)

    with Client(app_module.app) as client:
        pages = _walk(client, "/workflows?limit=100", log)

    assert len(pages) >= 2 and all(pages)
    assert [workflow["id"] for page in pages for workflow in page] == sorted(created)


def test_a_step_that_would_outgrow_the_workflow_item_is_refused_before_any_write(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    """The domain's limits (chalicelib/domain/limits.py) refuse a workflow that
    no item could hold, read as it is, before the table would (422, not the
    409 of a write DynamoDB refuses)."""
    from botocore.exceptions import ClientError

    workflow = stored_workflow(ddb, "Long", "", rules("A"), NOW)
    # Fill the item's step list until the table refuses more, in ever smaller
    # writes: then less room is left than one filler takes, and a filler is
    # smaller than the step appended below, whatever the table's size rules
    # (DynamoDB's documented ones or moto's).
    filler = {
        "M": {
            "id": {"N": "1"},
            "name": {"S": "x" * 150},
            "step_order": {"N": "1"},
            "approvers": {"L": []},
            "required_approvals": {"N": "1"},
        }
    }

    def fill(count: int) -> bool:
        try:
            ddb.client.update_item(
                TableName=ddb.table,
                Key={"PK": {"S": f"WF#{workflow.id}"}, "SK": {"S": "#WORKFLOW"}},
                UpdateExpression="SET steps = list_append(steps, :more)",
                ExpressionAttributeValues={":more": {"L": [filler] * count}},
            )
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ValidationException", exc
            return False
        return True

    for chunk in (1_000, 100, 10, 1):
        while fill(chunk):
            pass
    before = ddb.get_workflow(workflow.id)

    with Client(app_module.app) as client:
        response = client.http.post(
            f"/workflows/{workflow.id}/steps", headers=JSON, body=json.dumps({"name": "y" * 200})
        )

    assert response.status_code == 422, response.json_body
    assert "A workflow holds at most 100 steps" in response.json_body["error"]
    assert ddb.get_workflow(workflow.id) == before
    assert ddb.steps_after(workflow.id, 1) == ()


def _ids(storage: dynamodb.DynamoDBStorage, status: Optional[str], limit: int) -> list[int]:
    """Every run id of a walk of the run list (of `status`), through the engine."""
    ids: list[int] = []
    cursor = None
    while True:
        page = engine.list_runs(storage, None, status, limit, cursor)
        ids += [run.id for run in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return ids


@pytest.mark.parametrize("limit", [1, 2, 50])
def test_a_list_entry_that_has_not_moved_yet_is_left_out_and_the_walk_goes_on(
    ddb: dynamodb.DynamoDBStorage, limit: int
) -> None:
    workflow = workflow_with_steps(ddb, "Manager")
    runs = [stored_run(ddb, workflow, f"t{i}", NOW) for i in range(6)]
    moved = runs[2]
    # The run completed, and DynamoDB has not moved its index entries yet.
    ddb.client.update_item(
        TableName=ddb.table,
        Key={"PK": {"S": f"RUN#{moved.id}"}, "SK": {"S": "#RUN"}},
        UpdateExpression="SET #status = :completed",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":completed": {"S": RunStatus.COMPLETED}},
    )

    listed = _ids(ddb, RunStatus.IN_PROGRESS, limit)

    assert listed == [run.id for run in reversed(runs) if run.id != moved.id]


def test_runs_written_with_fewer_shards_are_listed_once_the_shards_are_raised(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    few = dynamodb.DynamoDBStorage(ddb.client, ddb.table, shards=2)
    workflow = workflow_with_steps(few, "Manager", "Finance")
    before = [stored_run(few, workflow, f"t{i}", NOW) for i in range(7)]
    many = dynamodb.DynamoDBStorage(ddb.client, ddb.table, shards=5)
    after = [stored_run(many, workflow, f"u{i}", NOW) for i in range(7)]
    # Runs of both settings decided with the higher one move within its shards.
    for run in (before[0], after[0]):
        decide(many, decide(many, run))
    created = sorted((run.id for run in before + after), reverse=True)

    assert _ids(many, None, 3) == created
    assert _ids(many, RunStatus.COMPLETED, 3) == [after[0].id, before[0].id]
    assert _ids(many, RunStatus.IN_PROGRESS, 4) == [
        i for i in created if i not in (before[0].id, after[0].id)
    ]


def test_a_decision_that_keeps_the_status_writes_no_list_key(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = workflow_with_steps(ddb, "Manager", "Finance")
    run = stored_run(ddb, workflow, "t", NOW)
    log = QueryLog(ddb)

    decide(ddb, decide(ddb, run))

    updates = [
        entry["Update"]
        for operation, params in log.params
        if operation == "TransactWriteItems"
        for entry in params["TransactItems"]
        if "Update" in entry
    ]
    named = [set(update["ExpressionAttributeNames"].values()) for update in updates]
    keys = set(dynamodb_schema.INDEX_KEYS.values())
    assert [bool(names & keys) for names in named] == [False, True]
    assert named[1] & keys == {"status_runs_pk", "workflow_status_runs_pk"}


def test_list_shards_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from chalicelib.domain import errors

    monkeypatch.delenv(dynamodb_keys.SHARDS_VARIABLE, raising=False)
    assert dynamodb_keys.configured_shards() == dynamodb_keys.DEFAULT_SHARDS
    monkeypatch.setenv(dynamodb_keys.SHARDS_VARIABLE, "16")
    assert dynamodb_keys.configured_shards() == 16
    for wrong in ("0", "-1", "eight", "101"):
        monkeypatch.setenv(dynamodb_keys.SHARDS_VARIABLE, wrong)
        with pytest.raises(errors.Unavailable):
            dynamodb_keys.configured_shards()


def test_a_step_appended_after_a_container_read_the_steps_is_not_skipped(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = workflow_with_steps(ddb, "Manager")
    run = stored_run(ddb, workflow, "t", NOW)
    assert ddb.steps_after(workflow.id, 1) == ()  # this container knows one step
    other = dynamodb.DynamoDBStorage(ddb.client, ddb.table)
    appended = stored_step(other, workflow.id, rules("Finance")[0], NOW)

    with Client(app_module.app) as client:
        response = client.http.post(
            f"/runs/{run.id}/approve",
            headers=JSON,
            body=json.dumps({"actor": "ann", "expected_step_id": workflow.steps[0].id}),
        )

    assert response.status_code == 200, response.json_body
    assert response.json_body["status"] == RunStatus.IN_PROGRESS
    assert response.json_body["current_step"]["id"] == appended.id
    assert [action["step_id"] for action in response.json_body["actions"]] == [workflow.steps[0].id]


def test_a_workflow_never_appended_to_completes_without_step_count_copies(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = workflow_with_steps(ddb, "Manager")
    runs = [stored_run(ddb, workflow, f"t{i}", NOW) for i in range(3)]
    log = QueryLog(ddb)

    completed = [engine.approve(ddb, run.id, "ann").status for run in runs]

    assert completed == [RunStatus.COMPLETED] * 3
    # A Query and a transaction each (and the first block of action ids).
    assert (log.counts["Query"], log.counts["TransactWriteItems"]) == (3, 3)
    copies = ddb.client.scan(
        TableName=ddb.table,
        FilterExpression="SK = :steps",
        ExpressionAttributeValues={":steps": {"S": dynamodb_keys.STEP_COUNT_SK}},
    )["Items"]
    assert copies == []
