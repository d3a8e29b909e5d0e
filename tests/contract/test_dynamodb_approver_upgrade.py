"""DynamoDB only: a table written before the approver rules keeps working, and
scripts/backfill_inbox.py puts its runs in progress into the inbox, once.

Items "from before" are made the way such a table holds them: written by
today's adapter, then stripped of what the approver rules added (step rules,
policy flags, the run's approvals and current_step_since, inbox entries)."""

from __future__ import annotations

import pytest

from chalicelib import engine
from chalicelib.models import COMPLETED, Run, Workflow
from chalicelib.storage import dynamodb
from scripts import backfill_inbox
from tests.support import chain
from tests.support.stored import LATER, NOW, rules

RUN_ADDITIONS = (
    "current_step_since",
    "approved_by",
    "approvers",
    "policy",
    "step_approvers",
    "step_required",
)


@pytest.fixture(autouse=True)
def table_named(monkeypatch: pytest.MonkeyPatch, ddb: dynamodb.DynamoDBStorage) -> None:
    monkeypatch.setenv("WORKFLOW_TABLE", ddb.table)


def from_before(ddb: dynamodb.DynamoDBStorage, workflow: Workflow, runs: list[Run]) -> None:
    """Strip the workflow and runs of everything the approver rules added."""
    client, table = ddb.client, ddb.table
    flags = ("allow_self_approval", "distinct_approvers", "reject_requires_comment")
    client.update_item(
        TableName=table,
        Key={"PK": {"S": f"WF#{workflow.id}"}, "SK": {"S": "#WORKFLOW"}},
        UpdateExpression="REMOVE " + ", ".join(flags),
    )
    for run in runs:
        client.update_item(
            TableName=table,
            Key={"PK": {"S": f"RUN#{run.id}"}, "SK": {"S": "#RUN"}},
            UpdateExpression="REMOVE " + ", ".join(RUN_ADDITIONS),
        )
    entries = client.scan(
        TableName=table,
        FilterExpression="begins_with(PK, :inbox)",
        ExpressionAttributeValues={":inbox": {"S": "INBOX#"}},
    )["Items"]
    for entry in entries:
        client.delete_item(TableName=table, Key={"PK": entry["PK"], "SK": entry["SK"]})


def test_runs_from_before_the_rules_are_decided_and_backfilled_into_the_inbox(
    ddb: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow = ddb.create_workflow("Old", "", rules("A", "B"), NOW)
    waiting = ddb.create_run(workflow, "waiting", NOW)
    moving = ddb.create_run(workflow, "moving", NOW)
    from_before(ddb, workflow, [waiting, moving])

    old = ddb.get_run(waiting.id)
    assert old.current_step_since == old.updated_at
    assert old.current_step == workflow.steps[0]
    assert engine.get_workflow(ddb, workflow.id) == workflow
    assert engine.inbox(ddb, "ann", frozenset(), 10).items == ()
    # A decision needs no backfill, and gives the run its entries.
    engine.approve(ddb, moving.id, "bob", clock=lambda: LATER)
    assert [r.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [moving.id]

    assert backfill_inbox.main(ddb.client) == 0
    assert (
        capsys.readouterr().out == f"Put 1 runs in progress of table {ddb.table!r} into the inbox\n"
    )
    assert [r.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [
        waiting.id,
        moving.id,
    ]
    assert backfill_inbox.main(ddb.client) == 0
    assert capsys.readouterr().out.startswith("Put 0 runs")

    done = engine.approve(ddb, engine.approve(ddb, waiting.id, "bob").id, "cy")
    assert done.status == COMPLETED
    chain.assert_chained(done.to_dict())
    assert [r.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [moving.id]
