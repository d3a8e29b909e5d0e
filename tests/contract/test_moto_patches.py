"""DynamoDB only: what the tests change in moto (tests/support/moto_*.py, and
the lean transactions of scripts/moto_server.py) changes nothing moto
answers. Each patch is checked against the moto it was read from, and here
held to what moto does without it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage.dynamodb import schema as dynamodb_schema
from tests.support import moto_attribute_values, moto_callbacks
from tests.support.backends import aws_env, client, dynamodb_backend

# Every kind of attribute value an item can hold, nested as the service nests them.
PLAIN: dict[str, Any] = {
    "PK": {"S": "run#1"},
    "SK": {"S": "run"},
    "empty": {"S": ""},
    "seq": {"N": "42"},
    "tags": {"SS": ["a", "b"]},
    "counts": {"NS": ["1", "2.5"]},
    "open": {"BOOL": True},
    "closed": {"BOOL": False},
    "nothing": {"NULL": True},
    "steps": {
        "L": [
            {"M": {"name": {"S": "Manager"}, "by": {"L": []}, "quorum": {"N": "1"}}},
            {"S": "Finance"},
        ]
    },
    "none": {"M": {}},
}
# moto holds a binary value as bytes, which its serializer base64-encodes.
WITH_BINARY: dict[str, Any] = {
    **PLAIN,
    "blob": {"B": b"\x00\xff"},
    "blobs": {"BS": [b"a", b"b"]},
    "deep": {"M": {"blob": {"B": b"z"}, "name": {"S": "x"}}},
}


def _answers(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An answer of each operation that carries items, as moto's handlers give it."""
    key = {"PK": item["PK"], "SK": item["SK"]}
    return {
        "GetItem": {"Item": item},
        "Query": {"Items": [item, item], "Count": 2, "ScannedCount": 2, "LastEvaluatedKey": key},
        "UpdateItem": {"Attributes": item},
        "TransactGetItems": {"Responses": [{"Item": item}, {}]},
        "BatchGetItem": {"Responses": {"workflows": [item]}, "UnprocessedKeys": {}},
    }


@pytest.mark.parametrize("item", [PLAIN, WITH_BINARY], ids=["plain", "binary"])
def test_moto_writes_each_answer_as_its_own_serializer_does(item: dict[str, Any]) -> None:
    """tests/support/moto_attribute_values.py: the same status, headers and
    body, byte for byte, as moto's generic serializer writes."""
    from moto.core.serialize import JSONSerializer, XFormedAttributePicker, get_serializer_class
    from moto.core.utils import get_service_model

    assert moto_attribute_values.install(), (
        "moto changed: check tests/support/moto_attribute_values.py again"
    )
    written_directly = moto_attribute_values.serializer_class()
    assert get_serializer_class("dynamodb", "json") is written_directly
    model = get_service_model("dynamodb")
    for operation, answer in _answers(item).items():
        operation_model = model.operation_model(operation)
        written = [
            serializer(operation_model, value_picker=XFormedAttributePicker()).serialize(
                copy.deepcopy(answer)
            )
            for serializer in (written_directly, JSONSerializer)
        ]
        assert written[0] == written[1], operation


def test_only_values_held_as_the_wire_carries_them_are_written_directly() -> None:
    assert moto_attribute_values.as_written(PLAIN["steps"]) == PLAIN["steps"]
    assert moto_attribute_values.as_written(WITH_BINARY["blob"]) is None
    assert moto_attribute_values.as_written(WITH_BINARY["deep"]) is None
    assert moto_attribute_values.as_written({"S": 1}) is None
    assert moto_attribute_values.as_written({"s": "lower case is an alias moto looks up"}) is None


def test_an_item_of_every_kind_reads_back_as_it_was_written(tmp_path: Path) -> None:
    """Through botocore and moto, with the patches on."""
    with dynamodb_backend(tmp_path):
        admin = client()
        admin.put_item(TableName="workflows", Item=WITH_BINARY)
        key = {"PK": WITH_BINARY["PK"], "SK": WITH_BINARY["SK"]}
        assert admin.get_item(TableName="workflows", Key=key)["Item"] == WITH_BINARY
        found = admin.query(
            TableName="workflows",
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": WITH_BINARY["PK"]},
        )
        assert found["Items"] == [WITH_BINARY]


def test_moto_registers_the_same_callbacks_on_every_start() -> None:
    """tests/support/moto_callbacks.py: the callbacks moto registers itself,
    built once; a request through them is still answered by moto."""
    import requests
    from moto import backend_index, mock_aws
    from moto.core import models

    assert moto_callbacks.install(), "moto changed: check tests/support/moto_callbacks.py again"

    def registered() -> list[Any]:
        with aws_env(), mock_aws():
            return list(models.responses_mock.registered())

    first, second = registered(), registered()
    assert [id(callback) for callback in first] == [id(callback) for callback in second]
    patterns: list[Any] = [pattern for _, pattern in backend_index.backend_url_patterns]
    patterns.append(r"https?://.+\.amazonaws.com/.*")
    expected = [
        (method, getattr(pattern, "pattern", pattern))
        for method in models.RESPONSES_METHODS
        for pattern in patterns
    ]
    assert sorted((c.method, getattr(c.url, "pattern", c.url)) for c in first) == sorted(expected)

    with aws_env(), mock_aws():
        dynamodb_schema.ensure_table(client(), "t", stream=False)
        answer = requests.post(
            "https://dynamodb.us-east-1.amazonaws.com/",
            headers={
                "X-Amz-Target": "DynamoDB_20120810.ListTables",
                "Content-Type": "application/x-amz-json-1.0",
            },
            data="{}",
            timeout=5,
        )
        assert json.loads(answer.text) == {"TableNames": ["t"]}


def test_a_test_table_is_the_table_ensure_table_makes(tmp_path: Path) -> None:
    """tests/support/backends.py copies the tests' table from the first one it
    made: each copy is empty, and described as ensure_table's own."""
    from moto import mock_aws

    def described(admin: Any) -> dict[str, Any]:
        table = dict(admin.describe_table(TableName="workflows")["Table"])
        del table["CreationDateTime"]
        ttl = admin.describe_time_to_live(TableName="workflows")["TimeToLiveDescription"]
        return {"table": table, "ttl": ttl}

    with dynamodb_backend(tmp_path):
        client().put_item(TableName="workflows", Item={"PK": {"S": "p"}, "SK": {"S": "s"}})
    with dynamodb_backend(tmp_path):
        admin = client()
        assert admin.scan(TableName="workflows")["Items"] == []
        copied = described(admin)
    with aws_env(), mock_aws():
        admin = client()
        assert dynamodb_schema.ensure_table(admin, "workflows", stream=False)
        made = described(admin)
    assert copied == made


def test_moto_copies_no_table_per_transaction_and_still_rolls_one_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """scripts/moto_server.py's lean_transactions, which the in-process tests
    run with: no table is copied for a transaction (moto copies the whole
    table once per item of it), and a refused one still leaves every item it
    named as it was. tests/local/test_moto_footprint.py holds its answers to
    stock moto's."""
    from moto.dynamodb.models.table import Table

    copied = []
    deepcopy = copy.deepcopy

    def counting(value: Any, memo: Any = None) -> Any:
        if isinstance(value, Table):
            copied.append(value.name)
        return deepcopy(value, memo)

    def put(sk: str) -> dict[str, Any]:
        return {"Put": {"TableName": "workflows", "Item": {"PK": {"S": "p"}, "SK": {"S": sk}}}}

    def stored() -> list[tuple[str, str]]:
        items = admin.query(
            TableName="workflows",
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": {"S": "p"}},
        )["Items"]
        return [(item["SK"]["S"], item.get("note", {}).get("S", "")) for item in items]

    with dynamodb_backend(tmp_path):
        admin = client()
        monkeypatch.setattr(copy, "deepcopy", counting)
        admin.transact_write_items(TransactItems=[put(f"a{n}") for n in range(4)])  # type: ignore[misc]
        refused = [
            put("b1"),
            {
                "Update": {
                    "TableName": "workflows",
                    "Key": {"PK": {"S": "p"}, "SK": {"S": "a1"}},
                    "UpdateExpression": "SET note = :n",
                    "ExpressionAttributeValues": {":n": {"S": "changed"}},
                }
            },
            {
                "ConditionCheck": {
                    "TableName": "workflows",
                    "Key": {"PK": {"S": "p"}, "SK": {"S": "a0"}},
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
        ]
        with pytest.raises(admin.exceptions.TransactionCanceledException):
            admin.transact_write_items(TransactItems=refused)  # type: ignore[arg-type]
        assert copied == []
        assert stored() == [("a0", ""), ("a1", ""), ("a2", ""), ("a3", "")]
