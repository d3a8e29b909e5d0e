"""DynamoDB's read of a workflow's figures: bounded Queries of the index of runs
by start, one per shard, and BatchGetItems of the runs and their actions by
key; never a Scan."""

from __future__ import annotations

from chalicelib import engine, stats
from chalicelib.domain import stats as rules
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb.schema import RUNS_STARTED_INDEX
from tests.support.dynamodb_requests import QueryLog


def at(stamp: str) -> engine.Clock:
    return lambda: stamp


def test_a_window_is_one_query_per_shard_and_batch_gets_by_key(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    workflow = engine.create_workflow(ddb, "PO", steps=["Manager", "Finance"])
    for second in range(3):
        run = engine.start_run(ddb, workflow.id, "t", clock=at(f"2026-03-01T00:00:0{second}.000Z"))
        engine.approve(ddb, run.id, "amy", clock=at("2026-03-01T00:01:00.000Z"))
    log = QueryLog(ddb)

    figures = stats.workflow_stats(
        ddb, workflow.id, "2026-03-01T00:00:00.000Z", "2026-03-02T00:00:00.000Z"
    )

    assert figures.runs.started == 3 and figures.steps[0].approvals == 3
    # The workflow, the index's shards, the runs' items, their actions.
    assert log.counts == {"Query": 1 + ddb.shards, "BatchGetItem": 2}
    on_index = [params for name, params in log.params if params.get("IndexName")]
    assert {params["IndexName"] for params in on_index} == {RUNS_STARTED_INDEX}
    assert all(params["Limit"] == rules.MAX_RUNS + 1 for params in on_index)
