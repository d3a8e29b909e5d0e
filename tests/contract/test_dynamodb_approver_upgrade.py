"""DynamoDB only: a table written before the approver rules keeps working, and
scripts/backfill_inbox.py puts its runs in progress into the inbox, once; run
again after the inboxes were sharded, it moves the entries into their shards.

Items "from before" are made the way such a table holds them: written by
today's adapter, then stripped of what the approver rules added (step rules,
policy flags, the run's approvals and current_step_since, inbox entries)."""

from __future__ import annotations

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain.models import COMPLETED, Run, StepRule, Workflow
from chalicelib.domain.names import canonical_principal
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import migrations
from scripts import backfill_inbox
from tests.support import chain
from tests.support.stored import LATER, NOW, rules, stored_run, stored_workflow

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
    workflow = stored_workflow(ddb, "Old", "", rules("A", "B"), NOW)
    waiting = stored_run(ddb, workflow, "waiting", NOW)
    moving = stored_run(ddb, workflow, "moving", NOW)
    from_before(ddb, workflow, [waiting, moving])

    old = ddb.get_run(waiting.id)
    assert old.current_step_since == old.updated_at
    assert old.current_step == workflow.steps[0]
    assert engine.get_workflow(ddb, workflow.id) == workflow
    assert engine.inbox(ddb, "ann", frozenset(), 10).items == ()
    # A decision needs no backfill, and gives the run its entries.
    engine.approve(ddb, moving.id, "bob", clock=lambda: LATER)
    assert [r.run.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [moving.id]

    assert backfill_inbox.main(ddb.client) == 0
    assert (
        capsys.readouterr().out.splitlines()[0]
        == f"Put 1 runs in progress of table {ddb.table!r} into the inbox"
    )
    assert [r.run.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [
        waiting.id,
        moving.id,
    ]
    assert backfill_inbox.main(ddb.client) == 0
    assert capsys.readouterr().out.startswith("Put 0 runs")

    done = engine.approve(ddb, engine.approve(ddb, waiting.id, "bob").id, "cy")
    assert done.status == COMPLETED
    chain.assert_chained(shape(done))
    assert [r.run.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [moving.id]


def unshard_inboxes(ddb: dynamodb.DynamoDBStorage) -> int:
    """Move every sharded inbox entry back to the one partition its principal
    had before the shards (INBOX#<shard>#<principal> -> INBOX#<principal>)."""
    client, table = ddb.client, ddb.table
    moved = 0
    for entry in client.scan(TableName=table)["Items"]:
        shard, _, principal = entry["PK"]["S"].removeprefix("INBOX#").partition("#")
        if not entry["PK"]["S"].startswith("INBOX#") or not shard.isdigit():
            continue
        client.put_item(TableName=table, Item={**entry, "PK": {"S": f"INBOX#{principal}"}})
        client.delete_item(TableName=table, Key={"PK": entry["PK"], "SK": entry["SK"]})
        moved += 1
    return moved


def test_inbox_entries_from_before_the_shards_move_into_them(
    ddb: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    finance = frozenset({"finance"})
    workflow = stored_workflow(
        ddb,
        "Pay",
        "",
        [StepRule("Finance", ("group:finance", "user:ann")), StepRule("Anyone")],
        NOW,
    )
    waiting = stored_run(ddb, workflow, "waiting", NOW)
    moving = stored_run(ddb, workflow, "moving", NOW)
    opened = engine.approve(
        ddb, stored_run(ddb, workflow, "open", NOW).id, "bob", groups=finance, clock=lambda: LATER
    )
    assert unshard_inboxes(ddb) == 3  # group and open entries; ann's stay as they were
    assert engine.inbox(ddb, "cy", finance, 10).items == ()
    assert [r.run.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == [
        waiting.id,
        moving.id,
    ]
    # Decided meanwhile: its old entries are left behind, its new ones sharded.
    moved_on = engine.approve(ddb, moving.id, "bob", groups=finance, clock=lambda: LATER)

    assert backfill_inbox.main(ddb.client) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"Moved 2 inbox entries of table {ddb.table!r} into their shards "
        "(and deleted 1 of runs that had moved on)"
    )
    # Longest waiting first: reached at NOW, then two at LATER in id order.
    expected = [waiting.id, moved_on.id, opened.id]
    assert [r.run.id for r in engine.inbox(ddb, "cy", finance, 10).items] == expected
    assert [r.run.id for r in engine.inbox(ddb, "ann", frozenset(), 10).items] == expected
    assert (
        list(migrations.misplaced_inbox_entries(ddb.requests, ddb.shards, canonical_principal))
        == []
    )
    assert backfill_inbox.main(ddb.client) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("Moved 0 inbox entries")


def name_inboxes_as_given(ddb: dynamodb.DynamoDBStorage, names: dict[str, str]) -> int:
    """Put the inbox entries of these principals (canonical key -> name as
    given) back under the names as given, as versions that compared names
    exactly wrote them; how many moved."""
    client, table = ddb.client, ddb.table
    moved = 0
    for entry in client.scan(TableName=table)["Items"]:
        pk = entry["PK"]["S"]
        for key, given in names.items():
            if pk.endswith(key) and pk.startswith("INBOX#"):
                client.put_item(
                    TableName=table, Item={**entry, "PK": {"S": pk.removesuffix(key) + given}}
                )
                client.delete_item(TableName=table, Key={"PK": entry["PK"], "SK": entry["SK"]})
                moved += 1
    return moved


def test_inbox_entries_under_names_as_given_move_to_their_canonical_key(
    ddb: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow = stored_workflow(
        ddb, "Pay", "", [StepRule("Finance", ("group:Finance", "user:Ann"))], NOW
    )
    waiting = stored_run(ddb, workflow, "waiting", NOW)
    assert name_inboxes_as_given(ddb, {"user:ann": "user:Ann", "group:finance": "group:Finance"})
    assert engine.inbox(ddb, "ann", frozenset(), 10).items == ()

    assert backfill_inbox.main(ddb.client) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("Moved 2 inbox entries")
    assert [r.run.id for r in engine.inbox(ddb, "ANN", frozenset(), 10).items] == [waiting.id]
    assert [r.run.id for r in engine.inbox(ddb, "cy", frozenset({"FINANCE"}), 10).items] == [
        waiting.id
    ]
    # A decision now deletes the entries where they are.
    engine.approve(ddb, waiting.id, "Ann", clock=lambda: LATER)
    assert not [
        e for e in ddb.client.scan(TableName=ddb.table)["Items"] if "INBOX#" in e["PK"]["S"]
    ]
