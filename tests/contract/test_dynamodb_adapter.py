"""DynamoDB only: requests per API call, id blocks, and transient faults."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chalice.test import Client

import app as app_module
from chalicelib import engine
from chalicelib.domain import errors
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import ids as dynamodb_ids
from scripts.moto_server import Fault, MotoServer
from tests.support.backends import dynamodb_race_backend, moto_server
from tests.support.dynamodb_requests import RequestLog

JSON = {"Content-Type": "application/json"}
# Enough calls to average over (an id block is one request per 1,000 ids); more would
# only slow moto, which copies every table on each transaction.
CALLS = 10


def _post(client: Client, path: str, body: dict[str, Any], status: int) -> dict[str, Any]:
    response = client.http.post(path, headers=JSON, body=json.dumps(body))
    assert response.status_code == status, response.json_body
    return response.json_body


def _average(log: RequestLog, calls: list[Any]) -> float:
    log.reset()
    for call in calls:
        call()
    return log.total / len(calls)


def test_reads_are_one_query_each(ddb: dynamodb.DynamoDBStorage) -> None:
    log = RequestLog(ddb)
    with Client(app_module.app) as client:
        workflow = _post(client, "/workflows", {"name": "reads", "steps": ["a", "b"]}, 201)
        run = _post(client, "/runs", {"workflow_id": workflow["id"], "title": "t"}, 201)
        _post(client, f"/runs/{run['id']}/approve", {"actor": "ann"}, 200)
        for path, queries in (
            (f"/workflows/{workflow['id']}", 1),
            (f"/runs/{run['id']}", 1),
            # The run, and its workflow's steps: the history replayed to its state.
            (f"/runs/{run['id']}/audit", 2),
            # Its event items (its start's) and the action items that carry its
            # decisions' events (storage/dynamodb/carried.py), at once.
            (f"/runs/{run['id']}/events", 2),
        ):
            log.reset()
            assert client.http.get(path).status_code == 200
            assert log.counts == {"Query": queries}, path


def test_mutations_stay_within_their_request_budget(ddb: dynamodb.DynamoDBStorage) -> None:
    log = RequestLog(ddb)
    with Client(app_module.app) as client:
        created = _average(
            log,
            [
                lambda i=i: _post(client, "/workflows", {"name": f"w{i}", "steps": ["a", "b"]}, 201)
                for i in range(CALLS)
            ],
        )
        workflow_id = _post(client, "/workflows", {"name": "main", "steps": ["a"]}, 201)["id"]
        appended = _average(
            log,
            [
                lambda i=i: _post(client, f"/workflows/{workflow_id}/steps", {"name": f"s{i}"}, 201)
                for i in range(CALLS)
            ],
        )
        small_id = _post(client, "/workflows", {"name": "small", "steps": ["a", "b"]}, 201)["id"]
        runs: list[int] = []
        started = _average(
            log,
            [
                lambda: runs.append(
                    _post(client, "/runs", {"workflow_id": small_id, "title": "t"}, 201)["id"]
                )
                for _ in range(2 * CALLS)
            ],
        )
        # Each kind of id comes in blocks of 1,000 from its own counter: take the
        # first block of action ids before measuring, as a warm container has.
        warm_up = _post(client, "/runs", {"workflow_id": small_id, "title": "t"}, 201)["id"]
        _post(client, f"/runs/{warm_up}/reject", {"actor": "a"}, 200)
        approved = _average(
            log,
            [
                lambda run_id=run_id: _post(client, f"/runs/{run_id}/approve", {"actor": "a"}, 200)
                for run_id in runs[:CALLS]
            ],
        )
        rejected = _average(
            log,
            [
                lambda run_id=run_id: _post(client, f"/runs/{run_id}/reject", {"actor": "a"}, 200)
                for run_id in runs[CALLS:]
            ],
        )
    assert created <= 2
    assert appended <= 3
    assert started <= 2.05  # a Query and a PutItem, and an id block now and then
    assert approved == 2  # a Query and a TransactWriteItems
    assert rejected == 2


def test_id_blocks_add_well_under_one_request_per_entity(ddb: dynamodb.DynamoDBStorage) -> None:
    log = RequestLog(ddb)
    ids = dynamodb_ids.IdBlocks(functools.partial(ddb.counters.reserve, "run"), block=100)
    taken = [i for _ in range(1000) for i in ids.take()]
    assert len(set(taken)) == 1000
    assert log.counts["UpdateItem"] == 10


def test_id_blocks_of_two_containers_never_overlap(ddb: dynamodb.DynamoDBStorage) -> None:
    first = dynamodb_ids.IdBlocks(functools.partial(ddb.counters.reserve, "run"), block=7)
    second = dynamodb_ids.IdBlocks(functools.partial(ddb.counters.reserve, "run"), block=7)
    taken = [i for _ in range(50) for ids in (first, second) for i in ids.take(3)]
    assert len(taken) == len(set(taken)) == 300


# -- transient faults, injected on a real HTTP endpoint ---------------------------

THROTTLED = {
    "__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
    "message": "Rate of requests exceeds the allowed throughput.",
}
INTERNAL = {
    "__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
    "message": "Internal server error",
}
CONFLICTED = {
    "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
    "message": "Transaction cancelled [TransactionConflict, None]",
    "CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}],
}


@pytest.fixture
def served(tmp_path: Path, serve: None, no_backoff: None) -> Iterator[MotoServer]:
    """The app on a fresh table of the moto server, retries without waiting."""
    server = moto_server()
    with dynamodb_race_backend(tmp_path) as open_storage:
        app_module.use_storage(open_storage())
        yield server
        server.faults.clear()


@pytest.fixture
def run_id(served: MotoServer) -> int:
    """A run at its first of two steps, on a storage whose id blocks are all taken
    (a warm container: faults injected then hit the decision's own requests)."""
    with Client(app_module.app) as client:
        workflow = _post(client, "/workflows", {"name": "faults", "steps": ["a", "b"]}, 201)
        warm_up = _post(client, "/runs", {"workflow_id": workflow["id"], "title": "w"}, 201)
        _post(client, f"/runs/{warm_up['id']}/reject", {"actor": "ann"}, 200)
        return _post(client, "/runs", {"workflow_id": workflow["id"], "title": "t"}, 201)["id"]


def _decide(run_id: int, decision: str) -> Any:
    with Client(app_module.app) as client:
        return client.http.post(
            f"/runs/{run_id}/{decision}", headers=JSON, body=json.dumps({"actor": "ann"})
        )


def _get_run(run_id: int) -> dict[str, Any]:
    with Client(app_module.app) as client:
        return client.http.get(f"/runs/{run_id}").json_body


@pytest.mark.parametrize(
    "status, body", [(400, THROTTLED), (500, INTERNAL)], ids=["throttled", "internal-error"]
)
def test_exhausted_retries_answer_503_and_write_nothing(
    served: MotoServer, run_id: int, status: int, body: dict[str, Any]
) -> None:
    before = _get_run(run_id)
    fault = served.inject("TransactWriteItems", Fault(status, body))
    response = _decide(run_id, "approve")
    assert response.status_code == 503
    assert set(response.json_body) == {"error"}
    assert "retry" in response.json_body["error"]
    assert fault.seen == dynamodb_client.MAX_ATTEMPTS
    fault.remaining = 0
    assert _get_run(run_id) == before


def test_a_few_throttled_requests_are_retried_transparently(
    served: MotoServer, run_id: int
) -> None:
    fault = served.inject("TransactWriteItems", Fault(400, THROTTLED, remaining=2))
    response = _decide(run_id, "approve")
    assert response.status_code == 200
    assert fault.seen == 2
    assert response.json_body["current_step"]["name"] == "b"
    assert len(response.json_body["actions"]) == 1


def test_conflicts_past_the_clients_retries_are_a_lost_race_decided_again(
    served: MotoServer, run_id: int
) -> None:
    # One client round of conflicts: the engine reads the run again and decides again.
    fault = served.inject(
        "TransactWriteItems", Fault(400, CONFLICTED, remaining=dynamodb_client.CONFLICT_RETRIES + 1)
    )
    response = _decide(run_id, "approve")
    assert response.status_code == 200, response.json_body
    assert fault.seen == dynamodb_client.CONFLICT_RETRIES + 1
    assert response.json_body["current_step"]["name"] == "b"
    assert [action["actor"] for action in _get_run(run_id)["actions"]] == ["ann"]


def test_conflicts_past_the_engines_attempts_answer_409_and_write_nothing(
    served: MotoServer, run_id: int
) -> None:
    before = _get_run(run_id)
    fault = served.inject("TransactWriteItems", Fault(400, CONFLICTED))
    response = _decide(run_id, "reject")
    fault.remaining = 0
    assert response.status_code == 409
    assert "retry" in response.json_body["error"]
    assert fault.seen == engine.DECISION_ATTEMPTS * (dynamodb_client.CONFLICT_RETRIES + 1)
    assert _get_run(run_id) == before


def test_conflicts_past_the_retries_on_a_write_no_engine_decides_again_answer_503(
    served: MotoServer,
) -> None:
    fault = served.inject("TransactWriteItems", Fault(400, CONFLICTED))
    with Client(app_module.app) as client:
        response = _post(client, "/workflows", {"name": "raced", "steps": ["a"]}, 503)
        fault.remaining = 0
        assert fault.seen == dynamodb_client.CONFLICT_RETRIES + 1
        assert "retry" in response["error"]
        assert client.http.get("/workflows").json_body["items"] == []


def test_a_decision_that_ran_out_of_attempts_leaves_its_idempotency_key_free(
    served: MotoServer, run_id: int
) -> None:
    keyed = {**JSON, "Idempotency-Key": "contended-1"}
    body = json.dumps({"actor": "ann"})
    with Client(app_module.app) as client:
        fault = served.inject("TransactWriteItems", Fault(400, CONFLICTED))
        refused = client.http.post(f"/runs/{run_id}/approve", headers=keyed, body=body)
        fault.remaining = 0
        retried = client.http.post(f"/runs/{run_id}/approve", headers=keyed, body=body)
    assert refused.status_code == 409
    assert retried.status_code == 200, retried.json_body
    assert "Idempotent-Replayed" not in retried.headers
    assert [action["actor"] for action in retried.json_body["actions"]] == ["ann"]


def test_a_passing_transaction_conflict_is_invisible(served: MotoServer, run_id: int) -> None:
    served.inject("TransactWriteItems", Fault(400, CONFLICTED, remaining=1))
    response = _decide(run_id, "reject")
    assert response.status_code == 200
    assert response.json_body["status"] == "rejected"
    assert len(response.json_body["actions"]) == 1


def test_a_transaction_that_would_outgrow_an_item_answers_409(served: MotoServer) -> None:
    # What DynamoDB answers (moto raises a plain ValidationException instead).
    too_large = {
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "message": "Transaction cancelled [None, ValidationError]",
        "CancellationReasons": [
            {"Code": "None"},
            {
                "Code": "ValidationError",
                "Message": "Item size to update has exceeded the maximum allowed size",
            },
        ],
    }
    with Client(app_module.app) as client:
        workflow = _post(client, "/workflows", {"name": "full", "steps": ["a"]}, 201)
        fault = served.inject("TransactWriteItems", Fault(400, too_large))
        response = client.http.post(
            f"/workflows/{workflow['id']}/steps", headers=JSON, body=json.dumps({"name": "b"})
        )
        fault.remaining = 0
        assert response.status_code == 409
        assert fault.seen == 1
        assert client.http.get(f"/workflows/{workflow['id']}").json_body == workflow


def test_failing_reads_answer_503(served: MotoServer, run_id: int) -> None:
    served.inject("Query", Fault(500, INTERNAL))
    with Client(app_module.app) as client:
        response = client.http.get(f"/runs/{run_id}")
    assert response.status_code == 503
    assert set(response.json_body) == {"error"}


def test_unreachable_endpoint_answers_503(unreachable_dynamodb: None) -> None:
    with Client(app_module.app) as client:
        response = client.http.get("/workflows/1")
    assert response.status_code == 503
    assert set(response.json_body) == {"error"}


def test_missing_table_answers_503_and_the_log_names_the_fix(
    ddb: dynamodb.DynamoDBStorage, caplog: pytest.LogCaptureFixture
) -> None:
    app_module.use_storage(dynamodb.DynamoDBStorage(ddb.client, "no-such-table"))
    with Client(app_module.app) as client:
        response = client.http.get("/workflows/1")
    assert response.status_code == 503
    # Clients learn nothing of the table; the operator's log says what to do.
    assert "no-such-table" not in response.json_body["error"]
    assert "make dynamodb-table" not in response.json_body["error"]
    logged = [r.getMessage() for r in caplog.records if r.name == "approval-workflows.storage"]
    assert len(logged) == 1
    assert "'no-such-table'" in logged[0] and "make dynamodb-table" in logged[0]


# -- Idempotency-Key ----------------------------------------------------------------


def _keyed(key: str) -> dict[str, str]:
    return {**JSON, "Idempotency-Key": key}


def test_a_key_costs_one_put_and_one_update_and_a_replay_one_put(
    ddb: dynamodb.DynamoDBStorage,
) -> None:
    log = RequestLog(ddb)
    with Client(app_module.app) as client:
        workflow = _post(client, "/workflows", {"name": "keyed", "steps": ["a", "b"]}, 201)
        warm_up = _post(client, "/runs", {"workflow_id": workflow["id"], "title": "w"}, 201)
        _post(client, f"/runs/{warm_up['id']}/reject", {"actor": "ann"}, 200)
        run = _post(client, "/runs", {"workflow_id": workflow["id"], "title": "t"}, 201)
        path, body = f"/runs/{run['id']}/approve", json.dumps({"actor": "ann"})

        log.reset()
        assert client.http.post(path, headers=_keyed("k"), body=body).status_code == 200
        first = dict(log.counts)
        log.reset()
        assert client.http.post(path, headers=_keyed("k"), body=body).status_code == 200
        replayed = dict(log.counts)
    # Without a key approve is Query, TransactWriteItems.
    assert first == {"PutItem": 1, "Query": 1, "TransactWriteItems": 1, "UpdateItem": 1}
    assert replayed == {"PutItem": 1}


def _decide_keyed(run_id: int, key: str) -> Any:
    with Client(app_module.app) as client:
        return client.http.post(
            f"/runs/{run_id}/approve", headers=_keyed(key), body=json.dumps({"actor": "ann"})
        )


def test_a_503_releases_the_key_for_the_retry(served: MotoServer, run_id: int) -> None:
    fault = served.inject("TransactWriteItems", Fault(500, INTERNAL))
    assert _decide_keyed(run_id, "k").status_code == 503
    fault.remaining = 0

    retried = _decide_keyed(run_id, "k")

    assert retried.status_code == 200
    assert "Idempotent-Replayed" not in retried.headers
    assert len(_get_run(run_id)["actions"]) == 1
    assert _decide_keyed(run_id, "k").headers["Idempotent-Replayed"] == "true"


def test_a_claim_that_cannot_be_written_answers_503_and_does_nothing(
    served: MotoServer, run_id: int
) -> None:
    before = _get_run(run_id)
    fault = served.inject("PutItem", Fault(500, INTERNAL))
    assert _decide_keyed(run_id, "k").status_code == 503
    fault.remaining = 0
    assert _get_run(run_id) == before
    assert _decide_keyed(run_id, "k").status_code == 200


def test_a_response_that_cannot_be_kept_is_answered_and_the_key_stays_in_flight(
    served: MotoServer, run_id: int
) -> None:
    fault = served.inject("UpdateItem", Fault(500, INTERNAL))
    first = _decide_keyed(run_id, "k")
    fault.remaining = 0

    assert first.status_code == 200
    assert len(first.json_body["actions"]) == 1
    # Until the lease ends; then a retry would run again (README, "Safe retries").
    assert _decide_keyed(run_id, "k").status_code == 409
    assert len(_get_run(run_id)["actions"]) == 1


@pytest.mark.parametrize(
    "partial",
    [
        {":status": {"N": "200"}},
        {":status": {"N": "200"}, ":parts": {"N": "2"}},
    ],
    ids=["a-status-without-a-body", "one-part-of-two"],
)
def test_a_key_record_missing_a_part_is_in_flight_never_a_500(
    ddb: dynamodb.DynamoDBStorage, partial: dict[str, Any]
) -> None:
    from chalicelib.domain import errors, idempotency

    first = idempotency.new_claim("k", "fp", 1_900_000_000.0)
    assert ddb.claim_idempotency_key(first) is None
    sets = "response_status = :status" + (
        ", response_parts = :parts" if ":parts" in partial else ""
    )
    ddb.client.update_item(
        TableName=ddb.table,
        Key={"PK": {"S": "IDEM#k"}, "SK": {"S": "#IDEM"}},
        UpdateExpression=f"SET {sets}",
        ExpressionAttributeValues=partial,
    )
    if ":parts" in partial:
        ddb.client.put_item(
            TableName=ddb.table,
            Item={"PK": {"S": "IDEM#k"}, "SK": {"S": "#IDEM#PART#0001"}, "part": {"B": b"x"}},
        )

    with pytest.raises(errors.RequestInProgress):
        ddb.claim_idempotency_key(idempotency.new_claim("k", "fp", first.now + 1))
    retry = idempotency.new_claim("k", "fp", first.lease_until)
    if ":parts" in partial:
        # The item says it was answered, so no retry may run the request again;
        # without its body it stays in flight until the key expires.
        with pytest.raises(errors.RequestInProgress):
            ddb.claim_idempotency_key(retry)
        day_later = idempotency.new_claim("k", "fp", first.expires_at)
        assert ddb.claim_idempotency_key(day_later) is None
    else:
        assert ddb.claim_idempotency_key(retry) is None


def test_each_kind_of_id_counts_from_1_as_on_sqlite(ddb: dynamodb.DynamoDBStorage) -> None:
    with Client(app_module.app) as client:
        workflow = _post(client, "/workflows", {"name": "po", "steps": ["a", "b"]}, 201)
        step = _post(client, f"/workflows/{workflow['id']}/steps", {"name": "c"}, 201)
        run = _post(client, "/runs", {"workflow_id": workflow["id"], "title": "t"}, 201)
        decided = _post(client, f"/runs/{run['id']}/approve", {"actor": "ann"}, 200)

    assert workflow["id"] == 1
    assert [s["id"] for s in workflow["steps"]] + [step["id"]] == [1, 2, 3]
    assert run["id"] == 1
    assert decided["actions"][0]["id"] == 1


def test_a_decision_whose_transaction_is_sent_twice_is_recorded_once(
    ddb: dynamodb.DynamoDBStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry of a transaction that was applied (botocore after a read timeout)
    is refused by its own writes on endpoints that ignore ClientRequestToken:
    the decision stands as recorded, and is not decided again on the next step."""
    from chalicelib import engine

    workflow = engine.create_workflow(ddb, "Twice", steps=["A", "B", "C"])
    run = engine.start_run(ddb, workflow.id, "t")
    send = ddb.client.transact_write_items

    def sent_twice(**params: Any) -> Any:
        send(**params)
        return send(**params)  # refused: its conditions see the first one's writes

    monkeypatch.setattr(ddb.client, "transact_write_items", sent_twice)
    decided = engine.approve(ddb, run.id, "ann")
    monkeypatch.undo()

    stored = ddb.get_run(run.id)
    assert stored == decided
    assert [(a.step_name, a.actor) for a in stored.actions] == [("A", "ann")]
    assert stored.current_step == workflow.steps[1]


@pytest.fixture
def sent_twice(ddb: dynamodb.DynamoDBStorage, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every transaction sent twice: the second, refused by the first one's
    writes, is what botocore's retry after a read timeout meets."""
    send = ddb.client.transact_write_items

    def twice(**params: Any) -> Any:
        send(**params)
        return send(**params)

    monkeypatch.setattr(ddb.client, "transact_write_items", twice)
    yield
    monkeypatch.undo()


def test_a_workflow_whose_creation_is_sent_twice_is_created_once(
    ddb: dynamodb.DynamoDBStorage, sent_twice: None
) -> None:
    from chalicelib import engine

    created = engine.create_workflow(ddb, "Twice", steps=["A"])
    assert ddb.get_workflow(created.id) == created
    assert [w.name for w in ddb.list_workflows(None, 10).items] == ["Twice"]
    with pytest.raises(errors.Conflict, match="already exists"):
        engine.create_workflow(ddb, "Twice", steps=["B"])


def test_a_run_whose_start_is_sent_twice_is_started_once(
    ddb: dynamodb.DynamoDBStorage, sent_twice: None
) -> None:
    from chalicelib import engine

    workflow = engine.create_workflow(ddb, "Twice", steps=["A"])
    run = engine.start_run(ddb, workflow.id, "t")
    assert ddb.get_run(run.id) == run
    assert [e.type for e in ddb.list_events(f"runs/{run.id}", None, 10).items] == [
        "approval.run.started",
        "approval.step.activated",
    ]


def test_a_deadline_whose_reminder_is_sent_twice_is_applied_once(
    ddb: dynamodb.DynamoDBStorage, sent_twice: None
) -> None:
    from chalicelib import engine
    from chalicelib.domain.lifecycle import OnDeadline
    from chalicelib.domain.models import Deadline, StepRule

    step = StepRule("A", deadline=Deadline(60, OnDeadline.REMIND))
    workflow = engine.create_workflow(
        ddb, "Twice", steps=[step], clock=lambda: "2030-01-01T00:00:00.000Z"
    )
    run = engine.start_run(ddb, workflow.id, "t", clock=lambda: "2030-01-01T00:00:00.000Z")
    assert engine.sweep(ddb, lambda: "2030-01-01T00:05:00.000Z") == 1
    assert ddb.get_run(run.id).deadline_passed
    types = [e.type for e in ddb.list_events(f"runs/{run.id}", None, 10).items]
    assert types.count("approval.step.reminded") == 1


def test_a_table_made_without_its_stream_is_the_table_otherwise(tmp_path: Path) -> None:
    """The tests' tables (ensure_table's stream=False) are the deployed table's
    definition but for the stream; by default the stream is on."""
    from moto import mock_aws

    from chalicelib.storage.dynamodb import schema as dynamodb_schema
    from tests.support.backends import aws_env, client

    def described(table: str) -> dict[str, Any]:
        found: dict[str, Any] = dict(admin.describe_table(TableName=table)["Table"])
        return {
            "keys": found["KeySchema"],
            "attributes": sorted(found["AttributeDefinitions"], key=str),
            "indexes": sorted(
                (index["IndexName"], index["KeySchema"], index["Projection"])
                for index in found["GlobalSecondaryIndexes"]
            ),
            "ttl": admin.describe_time_to_live(TableName=table)["TimeToLiveDescription"],
        }

    with aws_env(), mock_aws():
        admin = client()
        assert dynamodb_schema.ensure_table(admin, "with")
        assert dynamodb_schema.ensure_table(admin, "without", stream=False)
        with_stream = admin.describe_table(TableName="with")["Table"]
        assert with_stream["StreamSpecification"] == {
            "StreamEnabled": True,
            "StreamViewType": "NEW_IMAGE",
        }
        assert "LatestStreamArn" in with_stream
        without = admin.describe_table(TableName="without")["Table"]
        assert "LatestStreamArn" not in without
        assert not without.get("StreamSpecification", {}).get("StreamEnabled", False)
        assert described("with") == described("without")
        # An existing table is left as it is: its stream is not turned off.
        assert not dynamodb_schema.ensure_table(admin, "with", stream=False)
        assert "LatestStreamArn" in admin.describe_table(TableName="with")["Table"]
