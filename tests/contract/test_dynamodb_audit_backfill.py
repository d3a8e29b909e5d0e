"""DynamoDB only: scripts/backfill_audit_chain.py chains history recorded before
the audit chain, once, and leaves alone what it must not bless.

History "from before the chain" is made the way such a table holds it: runs
and actions written by today's adapter, then stripped of head_hash and hash."""

from __future__ import annotations

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain.models import APPROVE, REJECT, Run
from chalicelib.storage.dynamodb import adapter as dynamodb
from scripts import backfill_audit_chain
from tests.support import chain
from tests.support.stored import decide, stored_run, workflow_with_steps


@pytest.fixture(autouse=True)
def table_named(monkeypatch: pytest.MonkeyPatch, ddb: dynamodb.DynamoDBStorage) -> None:
    monkeypatch.setenv("WORKFLOW_TABLE", ddb.table)


def unchain(ddb: dynamodb.DynamoDBStorage, run: Run, actions: int | None = None) -> None:
    """Remove the run's head_hash and the hash of its first `actions` actions (all)."""
    key = {"PK": {"S": f"RUN#{run.id}"}}
    ddb.client.update_item(
        TableName=ddb.table, Key={**key, "SK": {"S": "#RUN"}}, UpdateExpression="REMOVE head_hash"
    )
    for seq in range(1, (len(run.actions) if actions is None else actions) + 1):
        ddb.client.update_item(
            TableName=ddb.table,
            Key={**key, "SK": {"S": f"ACT#{seq:010d}"}},
            UpdateExpression="REMOVE #hash",
            ExpressionAttributeNames={"#hash": "hash"},
        )


def backfill(capsys: pytest.CaptureFixture[str], ddb: dynamodb.DynamoDBStorage) -> tuple[int, str]:
    code = backfill_audit_chain.main(ddb.client)
    return code, capsys.readouterr().out


def test_history_from_before_the_chain_is_chained_once(
    ddb: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow = workflow_with_steps(ddb, "A", "B", "C")
    completed = decide(ddb, decide(ddb, stored_run(ddb, workflow, "two", "2030-01-01T00:00:00Z")))
    untouched = stored_run(ddb, workflow, "none", "2030-01-01T00:00:00Z", requested_by="ada")
    unchain(ddb, completed)
    unchain(ddb, untouched)
    # Decided after the deploy, before the backfill: it chains onto the head the
    # backfill will store.
    legacy = decide(ddb, stored_run(ddb, workflow, "then", "2030-01-01T00:00:00Z"))
    unchain(ddb, legacy)
    moved_on = decide(ddb, ddb.get_run(legacy.id), REJECT)
    chained = decide(ddb, stored_run(ddb, workflow, "new", "2030-01-01T00:00:00Z"))
    assert not shape(engine.audit_run(ddb, completed.id))["valid"]

    assert backfill(capsys, ddb) == (0, f"Chained 3 runs of table {ddb.table!r}: 5 hashes stored\n")

    for run in (completed, untouched, moved_on, chained):
        stored = ddb.get_run(run.id)
        chain.assert_chained(shape(stored))
        assert shape(engine.audit_run(ddb, run.id))["valid"]
    assert backfill(capsys, ddb) == (0, f"Chained 0 runs of table {ddb.table!r}: 0 hashes stored\n")


def test_a_history_edited_after_it_was_chained_is_left_for_the_audit_to_show(
    ddb: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    run = decide(ddb, decide(ddb, stored_run(ddb, workflow_with_steps(ddb, "A", "B"), "t", "x")))
    # An edit, and the hash after it removed, hoping the backfill recomputes it.
    ddb.client.update_item(
        TableName=ddb.table,
        Key={"PK": {"S": f"RUN#{run.id}"}, "SK": {"S": "ACT#0000000001"}},
        UpdateExpression="SET actor = :mallory",
        ExpressionAttributeValues={":mallory": {"S": "mallory"}},
    )
    ddb.client.update_item(
        TableName=ddb.table,
        Key={"PK": {"S": f"RUN#{run.id}"}, "SK": {"S": "ACT#0000000002"}},
        UpdateExpression="REMOVE #hash",
        ExpressionAttributeNames={"#hash": "hash"},
    )

    code = backfill_audit_chain.main(ddb.client)

    captured = capsys.readouterr()
    assert code == 1 and "0 hashes stored" in captured.out
    assert f"Run {run.id}: the stored hash of seq 1 is not that of its values" in captured.err
    assert ddb.get_run(run.id).actions[1].hash is None
    assert shape(engine.audit_run(ddb, run.id))["first_invalid_seq"] == 1


def test_without_a_table_name_it_says_so(
    ddb: dynamodb.DynamoDBStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WORKFLOW_TABLE")

    assert backfill_audit_chain.main(ddb.client) == 2


def test_approvals_of_a_run_decided_before_the_chain_continue_it(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    run = decide(ddb, stored_run(ddb, workflow_with_steps(ddb, "A", "B", "C"), "t", "x"))
    unchain(ddb, run, actions=1)

    decide(ddb, decide(ddb, ddb.get_run(run.id)), APPROVE)

    hashes = chain.hashes_of(shape(ddb.get_run(run.id)))
    assert [a.hash for a in ddb.get_run(run.id).actions] == [None, *hashes[2:]]
