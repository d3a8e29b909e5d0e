"""The DynamoDB table's definition: keys, list indexes and Time to Live.

What `make dynamodb-table` (scripts/create_table.py) creates, `make package`
deploys (deploy/stack.yaml's table, held to it by a test) and the tests set up;
the adapter only reads and writes the items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TimeToLiveSpecificationTypeDef

# The list indexes: name -> partition key attribute. Every one sorts by `id`.
# `all` lists workflows (whole items: a page is one Query); the run lists hold
# keys only, each sharded over WORKFLOW_LIST_SHARDS partitions (see
# dynamodb_lists.py: a page is one Query per shard and one BatchGetItem).
ALL_INDEX = "all"
RUNS_INDEX = "runs"
RUNS_BY_WORKFLOW_INDEX = "runs_by_workflow"
RUNS_BY_STATUS_INDEX = "runs_by_status"
RUNS_BY_WORKFLOW_STATUS_INDEX = "runs_by_workflow_status"
INDEX_KEYS = {
    ALL_INDEX: "all_pk",
    RUNS_INDEX: "runs_pk",
    RUNS_BY_WORKFLOW_INDEX: "workflow_runs_pk",
    RUNS_BY_STATUS_INDEX: "status_runs_pk",
    RUNS_BY_WORKFLOW_STATUS_INDEX: "workflow_status_runs_pk",
}
# What each index copies of an item: workflows whole; runs their keys only, so
# that a decision that leaves a run's list keys as they were writes no index.
PROJECTIONS: dict[str, Any] = {
    index: {"ProjectionType": "ALL" if index == ALL_INDEX else "KEYS_ONLY"} for index in INDEX_KEYS
}
# The sparse index of what falls due at a time (dynamodb.py): an item is in it
# while it carries DUE_KEY (a kind: DELIVERY_DUE for events not delivered yet,
# DEADLINE_DUE for runs whose current step has a deadline still to apply),
# sorted by DUE_AT, an ISO 8601 UTC timestamp. Keys only: what is found is
# then read from the table.
DUE_INDEX = "due"
DUE_KEY = "due_pk"
DUE_AT = "due_at"
DELIVERY_DUE = "DELIVERY"
DEADLINE_DUE = "DEADLINE"

# A workflow's runs by when they started (GET /workflows/{id}/stats): the
# partitions of runs_by_workflow (WF#<wid>#<shard>, so that a busy workflow's
# starts spread over its shards) sorted by created_at. Keys only, and neither
# key ever changes: a run's start writes its entry, and nothing else does.
RUNS_STARTED_INDEX = "runs_by_workflow_started"
CREATED_AT = "created_at"

# Every index: name -> (partition key, sort key) attributes.
INDEXES: dict[str, tuple[str, str]] = {
    **{index: (key, "id") for index, key in INDEX_KEYS.items()},
    DUE_INDEX: (DUE_KEY, DUE_AT),
    RUNS_STARTED_INDEX: (INDEX_KEYS[RUNS_BY_WORKFLOW_INDEX], CREATED_AT),
}
PROJECTIONS[DUE_INDEX] = {"ProjectionType": "KEYS_ONLY"}
PROJECTIONS[RUNS_STARTED_INDEX] = {"ProjectionType": "KEYS_ONLY"}


def index_definition(index: str) -> dict[str, Any]:
    """An index of INDEXES as CreateTable and CloudFormation spell it."""
    partition, sort = INDEXES[index]
    return {
        "IndexName": index,
        "KeySchema": [
            {"AttributeName": partition, "KeyType": "HASH"},
            {"AttributeName": sort, "KeyType": "RANGE"},
        ],
        "Projection": PROJECTIONS[index],
    }


# The table as CreateTable takes it.
TABLE_KEYS: dict[str, Any] = {
    "KeySchema": [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ],
    "AttributeDefinitions": [
        {"AttributeName": name, "AttributeType": "N" if name == "id" else "S"}
        for name in sorted({"PK", "SK", *(key for pair in INDEXES.values() for key in pair)})
    ],
    "BillingMode": "PAY_PER_REQUEST",
    # Carries the event items to the relay (chalicelib/delivery/relay.py) when deployed.
    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    "GlobalSecondaryIndexes": [index_definition(index) for index in INDEXES],
}

# The attribute DynamoDB's Time to Live reads (epoch seconds), which ensure_table
# turns on and deploy/stack.yaml's table names (a test holds the two alike).
TTL_ATTRIBUTE = "expires_at"


def ensure_table(client: DynamoDBClient, table: str, *, stream: bool = True) -> bool:
    """Create the table, wait until it is active and turn its Time to Live on;
    False if it already existed (its TTL is turned on all the same).

    `stream=False` creates it without the stream TABLE_KEYS gives it, for a
    table nothing relays from: `make run-dynamodb`'s, which sends the events
    itself (WORKFLOW_EVENT_DELIVERY=table), and the tests' (moto copies every
    write into the stream, and its transactions take twice as long for it). A
    stream is only left out at creation: a table that exists is left as it is."""
    keys = {k: v for k, v in TABLE_KEYS.items() if stream or k != "StreamSpecification"}
    try:
        client.create_table(TableName=table, **keys)
        created = True
    except client.exceptions.ResourceInUseException:
        created = False
    client.get_waiter("table_exists").wait(
        TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    ensure_time_to_live(client, table)
    return created


def time_to_live_specification() -> TimeToLiveSpecificationTypeDef:
    """The table's TTL, as UpdateTimeToLive and CloudFormation both spell it."""
    return {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}


def ensure_time_to_live(client: DynamoDBClient, table: str) -> None:
    """Turn TTL on TTL_ATTRIBUTE on, unless it is on (DynamoDB refuses it twice)."""
    ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    if (
        ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
        and ttl.get("AttributeName") == TTL_ATTRIBUTE
    ):
        return
    client.update_time_to_live(
        TableName=table, TimeToLiveSpecification=time_to_live_specification()
    )
