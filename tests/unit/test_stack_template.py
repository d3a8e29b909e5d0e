"""The stack's template (deploy/stack.yaml) against what it must not drift from:
the table `make dynamodb-table` creates (chalicelib/storage/dynamodb/schema.py)
and the items the relay is fed. The packaged whole is checked in tests/packaging."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb import schema as dynamodb_schema
from scripts import package

# Properties only the deployed table has.
DEPLOY_ONLY = {"PointInTimeRecoverySpecification", "DeletionProtectionEnabled"}


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    text = package.STACK_TEMPLATE.read_text(encoding="utf-8")
    return package.read_template(text, str(package.STACK_TEMPLATE))


def statement(stack: dict[str, Any], policy: str, sid: str) -> dict[str, Any]:
    document = stack["Resources"][policy]["Properties"]["PolicyDocument"]
    (found,) = (entry for entry in document["Statement"] if entry.get("Sid") == sid)
    return dict(found)


def test_the_table_is_table_keys_as_cloudformation_spells_it(stack: dict[str, Any]) -> None:
    table = dict(stack["Resources"]["WorkflowTable"]["Properties"])
    assert {key: table.pop(key) for key in DEPLOY_ONLY} == {
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "DeletionProtectionEnabled": True,
    }
    # UpdateTimeToLive's TimeToLiveSpecification is CloudFormation's too.
    assert table.pop("TimeToLiveSpecification") == dynamodb_schema.time_to_live_specification()
    # CloudFormation has no StreamEnabled: a view type turns the stream on.
    created = dict(dynamodb_schema.TABLE_KEYS)
    stream = created.pop("StreamSpecification")
    assert stream["StreamEnabled"]
    assert table.pop("StreamSpecification") == {"StreamViewType": stream["StreamViewType"]}
    assert table == created


def test_the_sweeper_may_query_the_due_index_and_no_other(stack: dict[str, Any]) -> None:
    due_runs = statement(stack, "DeadlineSweeperAccess", "DueRuns")
    assert due_runs["Resource"] == [
        {"Fn::Sub": f"${{WorkflowTable.Arn}}/index/{dynamodb_schema.DUE_INDEX}"}
    ]


def test_the_relay_is_fed_the_events_the_actions_and_the_inbox_entries_left(
    stack: dict[str, Any],
) -> None:
    relay = stack["Resources"]["OnDynamodbRecord"]["Properties"]
    filters = relay["Events"]["OnDynamodbRecordDynamodbEventSource"]["Properties"]
    patterns = [json.loads(entry["Pattern"]) for entry in filters["FilterCriteria"]["Filters"]]
    assert patterns == [
        {
            "eventName": ["INSERT"],
            "dynamodb": {"Keys": {"PK": {"S": [{"prefix": keys.EVENT_PREFIX}]}}},
        },
        {
            "eventName": ["INSERT"],
            "dynamodb": {"Keys": {"SK": {"S": [{"prefix": keys.ACTION_PREFIX}]}}},
        },
        {"dynamodb": {"NewImage": {items.INBOX_LEFT: {"S": [{"exists": True}]}}}},
    ]


def test_the_overdue_alarm_reads_the_metric_the_sweeper_writes_and_is_a_parameter(
    stack: dict[str, Any],
) -> None:
    from chalicelib.domain import metrics

    alarm = stack["Resources"]["OverdueStepsAlarm"]
    assert alarm["Condition"] == "OverdueAlarmOn"
    assert stack["Conditions"]["OverdueAlarmOn"] == {
        "Fn::Equals": [{"Ref": "OverdueAlarmEnabled"}, "true"]
    }
    (query,) = alarm["Properties"]["Metrics"]
    dimensions = ", ".join(sorted(metrics.DIMENSIONS))
    assert query["Expression"] == (
        f"SELECT SUM(Overdue) FROM SCHEMA({metrics.DEFAULT_NAMESPACE}, {dimensions})"
    )
    assert "Overdue" in metrics.UNITS
    assert alarm["Properties"]["Threshold"] == {"Ref": "OverdueAlarmThreshold"}
    assert stack["Parameters"]["OverdueAlarmEnabled"]["Default"] == "true"
