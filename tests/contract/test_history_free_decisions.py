"""A decision that leaves the history out of its answer reads none of it, on
every backend: the run and a count, whatever the history's length."""

from __future__ import annotations

from chalicelib import engine
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.storage import Backend
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import keys as dynamodb_keys
from tests.support.dynamodb_requests import QueryLog
from tests.support.stored import NOW, workflow_with_steps


def test_a_run_read_without_history_counts_it(storage: Backend) -> None:
    workflow = workflow_with_steps(storage, "A", "B", "C")
    run = engine.start_run(storage, workflow.id, "t")
    engine.approve(storage, run.id, "ann")
    engine.approve(storage, run.id, "bob")

    whole = storage.get_run(run.id)
    counted = storage.get_run(run.id, history=False)

    assert counted.actions == () and counted.unread_actions == 2
    assert counted.history_length == whole.history_length == 2
    assert counted._replace(actions=whole.actions, unread_actions=0) == whole


def test_decisions_without_history_chain_as_those_with_it(storage: Backend) -> None:
    workflow = workflow_with_steps(storage, "A", "B", "C")
    runs = [engine.start_run(storage, workflow.id, "t") for _ in range(2)]

    for actor in ("ann", "bob", "cy"):
        with_history = engine.approve(storage, runs[0].id, actor, clock=lambda: NOW)
        counted = engine.approve(storage, runs[1].id, actor, clock=lambda: NOW, history=False)
        # What it recorded is its last action; the earlier ones it only counts.
        assert [action.action for action in counted.actions] == [ActionKind.APPROVE]
        assert counted.actions[-1].id > 0
        assert counted.history_length == with_history.history_length
        assert counted.status == with_history.status
        assert counted.current_step == with_history.current_step

    assert counted.status == RunStatus.COMPLETED
    read = storage.get_run(runs[1].id)
    assert engine.audit_run(storage, read.id).first_invalid_seq is None
    assert read.head_hash == counted.head_hash


def test_on_dynamodb_such_a_decision_reads_one_item_however_long_the_history(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = workflow_with_steps(ddb, *(f"s{i}" for i in range(40)))
    run = engine.start_run(ddb, workflow.id, "long")
    for _ in range(30):
        engine.approve(ddb, run.id, "ann", history=False)
    log = QueryLog(ddb)

    engine.approve(ddb, run.id, "ann", history=False)

    assert log.counts == {"Query": 1, "TransactWriteItems": 1}
    ((_, query),) = [entry for entry in log.params if entry[0] == "Query"]
    assert query["ExpressionAttributeValues"][":sk"] == {"S": dynamodb_keys.RUN_SK}
