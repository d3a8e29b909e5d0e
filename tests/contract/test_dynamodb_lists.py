"""DynamoDB only: each list page is one Query on an index, and pages stay
correct where DynamoDB cuts a Query short (1 MB) or refuses a big item (400 KB)."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import validation
from chalicelib.storage import dynamodb
from tests.support.dynamodb_requests import QueryLog
from tests.support.stored import NOW, rules

JSON = {"Content-Type": "application/json"}


def _post(client: Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.http.post(path, headers=JSON, body=json.dumps(body))
    assert response.status_code == 201, response.json_body
    return response.json_body


def _walk(client: Client, path: str, log: QueryLog) -> list[list[dict[str, Any]]]:
    """Every page of a list, asserting that each cost exactly one Query on an index."""
    pages: list[list[dict[str, Any]]] = []
    cursor: Optional[str] = None
    while True:
        log.reset()
        separator = "&" if "?" in path else "?"
        response = client.http.get(path + (f"{separator}cursor={cursor}" if cursor else ""))
        assert response.status_code == 200, response.json_body
        assert log.counts == {"Query": 1}, (path, log.counts)
        ((_, query),) = log.params
        assert query["IndexName"] in dynamodb.INDEX_KEYS
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
def test_each_run_page_is_one_query_on_an_index(ddb: dynamodb.DynamoDBStorage, query: str) -> None:
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
        pages = _walk(client, "/runs?limit=2" + filters, log)
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
    created = [ddb.create_workflow(f"big {i}", big, rules("A"), NOW).id for i in range(60)]
    log = QueryLog(ddb)

    with Client(app_module.app) as client:
        pages = _walk(client, "/workflows?limit=100", log)

    assert len(pages) >= 2 and all(pages)
    assert [workflow["id"] for page in pages for workflow in page] == sorted(created)


def test_a_step_that_would_outgrow_the_workflow_item_answers_409_and_writes_nothing(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    from botocore.exceptions import ClientError

    workflow = ddb.create_workflow("Long", "", rules("A"), NOW)
    # Fill the item's step list until the table refuses more, in ever smaller
    # writes: then less room is left than one filler takes, and a filler is
    # smaller than the step appended below, whatever the table's size rules
    # (DynamoDB's documented ones or moto's).
    filler = {"M": {"id": {"N": "1"}, "name": {"S": "x" * 180}, "step_order": {"N": "1"}}}

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

    assert response.status_code == 409, response.json_body
    assert "400 KB" in response.json_body["error"]
    assert ddb.get_workflow(workflow.id) == before
    assert ddb.next_step(workflow.id, 1) is None
