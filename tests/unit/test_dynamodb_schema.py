"""The table's definition."""

from __future__ import annotations

from typing import Any

from chalicelib.storage.dynamodb import schema as dynamodb_schema


def _indexes(keys: dict[str, Any]) -> dict[str, Any]:
    return {index["IndexName"]: index for index in keys["GlobalSecondaryIndexes"]}


def test_run_lists_hold_keys_only_and_workflows_whole_items() -> None:
    indexes = _indexes(dynamodb_schema.TABLE_KEYS)
    assert indexes["all"]["Projection"] == {"ProjectionType": "ALL"}
    assert {
        name
        for name, index in indexes.items()
        if index["Projection"]["ProjectionType"] == "KEYS_ONLY"
    } == set(dynamodb_schema.INDEXES) - {"all"}
