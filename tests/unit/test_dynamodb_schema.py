"""The table's definition, and the steps from the legacy run lists to the sharded ones."""

from __future__ import annotations

import itertools
from typing import Any

from chalicelib.storage.dynamodb import schema as dynamodb_schema


def _indexes(keys: dict[str, Any]) -> dict[str, Any]:
    return {index["IndexName"]: index for index in keys["GlobalSecondaryIndexes"]}


def _attributes(keys: dict[str, Any]) -> set[str]:
    return {attribute["AttributeName"] for attribute in keys["AttributeDefinitions"]}


def test_each_step_to_the_sharded_lists_adds_or_deletes_one_index() -> None:
    steps = [
        dynamodb_schema.migration_table_keys(step)
        for step in range(dynamodb_schema.MIGRATION_STEPS + 1)
    ]
    assert set(_indexes(steps[0])) == {"all", *dynamodb_schema.LEGACY_INDEX_KEYS, "due"}
    assert steps[-1] == dynamodb_schema.TABLE_KEYS
    for before, after in itertools.pairwise(steps):
        changed = set(_indexes(before)) ^ set(_indexes(after))
        assert len(changed) == 1, changed
        kept = set(_indexes(before)) & set(_indexes(after))
        assert all(_indexes(before)[name] == _indexes(after)[name] for name in kept)
    for keys in steps:
        used = {"PK", "SK"} | {
            key["AttributeName"]
            for index in keys["GlobalSecondaryIndexes"]
            for key in index["KeySchema"]
        }
        assert _attributes(keys) == used


def test_run_lists_hold_keys_only_and_workflows_whole_items() -> None:
    indexes = _indexes(dynamodb_schema.TABLE_KEYS)
    assert indexes["all"]["Projection"] == {"ProjectionType": "ALL"}
    assert {
        name
        for name, index in indexes.items()
        if index["Projection"]["ProjectionType"] == "KEYS_ONLY"
    } == set(dynamodb_schema.INDEXES) - {"all"}
