"""The DynamoDB table's definition: keys, list indexes and Time to Live.

What `make dynamodb-table` (scripts/create_table.py) creates, `make package`
(scripts/package.py) deploys and the tests set up; the adapter in dynamodb.py
only reads and writes the items (its docstring explains the design).
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
# The run lists of tables made before the sharded ones (whole items, one
# partition per list), and the attributes that put runs into them (runs also
# carried all_pk = RUNS). scripts/migrate_list_indexes.py moves a table off them.
LEGACY_INDEX_KEYS = {
    "by_workflow": "workflow_pk",
    "by_status": "status_pk",
    "by_workflow_status": "workflow_status_pk",
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

# Every index: name -> (partition key, sort key) attributes.
INDEXES: dict[str, tuple[str, str]] = {
    **{index: (key, "id") for index, key in INDEX_KEYS.items()},
    DUE_INDEX: (DUE_KEY, DUE_AT),
}
PROJECTIONS[DUE_INDEX] = {"ProjectionType": "KEYS_ONLY"}


def index_definition(index: str) -> dict[str, Any]:
    """An index of INDEXES as CreateTable, UpdateTable and CloudFormation spell it."""
    partition, sort = INDEXES[index]
    return {
        "IndexName": index,
        "KeySchema": [
            {"AttributeName": partition, "KeyType": "HASH"},
            {"AttributeName": sort, "KeyType": "RANGE"},
        ],
        "Projection": PROJECTIONS[index],
    }


def attribute_definitions(indexes: Any = INDEXES) -> list[dict[str, str]]:
    """The key attributes of the table and of `indexes` (names of INDEXES)."""
    return _attributes(name for index in indexes for name in INDEXES[index])


def _attributes(names: Any) -> list[dict[str, str]]:
    return [
        {"AttributeName": name, "AttributeType": "N" if name == "id" else "S"}
        for name in sorted({"PK", "SK", *names})
    ]


def _table_keys(indexes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": _attributes(
            key["AttributeName"] for index in indexes for key in index["KeySchema"]
        ),
        "BillingMode": "PAY_PER_REQUEST",
        # Carries the event items to the relay (chalicelib/delivery/relay.py) when deployed.
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
        "GlobalSecondaryIndexes": indexes,
    }


TABLE_KEYS: dict[str, Any] = _table_keys([index_definition(index) for index in INDEXES])

# The table's indexes on the way from the legacy run lists to these, one index
# added or deleted per step (DynamoDB and CloudFormation take one per update):
# step 0 is the legacy table, step MIGRATION_STEPS is TABLE_KEYS.
_NEW_RUN_INDEXES = [index for index in INDEX_KEYS if index != ALL_INDEX]
MIGRATION_STEPS = len(_NEW_RUN_INDEXES) + len(LEGACY_INDEX_KEYS)


def migration_table_keys(step: int) -> dict[str, Any]:
    """The table definition after `step` of MIGRATION_STEPS index changes."""
    if not 0 <= step <= MIGRATION_STEPS:
        raise ValueError(f"the index steps are 0 to {MIGRATION_STEPS}, not {step}")
    if step == MIGRATION_STEPS:
        return TABLE_KEYS
    added = _NEW_RUN_INDEXES[:step]
    kept = list(LEGACY_INDEX_KEYS)[max(0, step - len(_NEW_RUN_INDEXES)) :]
    legacy = [
        {
            "IndexName": index,
            "KeySchema": [
                {"AttributeName": LEGACY_INDEX_KEYS[index], "KeyType": "HASH"},
                {"AttributeName": "id", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
        for index in kept
    ]
    return _table_keys(
        [
            index_definition(ALL_INDEX),
            *legacy,
            *(index_definition(index) for index in added),
            index_definition(DUE_INDEX),
        ]
    )


# The attribute DynamoDB's Time to Live reads (epoch seconds). Like TABLE_KEYS,
# ensure_table and scripts/package.py both take it from here.
TTL_ATTRIBUTE = "expires_at"


def ensure_table(client: DynamoDBClient, table: str, *, stream: bool = True) -> bool:
    """Create the table, wait until it is active and turn its Time to Live on;
    False if it already existed (its TTL is turned on all the same, and the
    indexes of INDEXES it lacks are added: see ensure_indexes).

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
    if not created:
        ensure_indexes(client, table)
    ensure_time_to_live(client, table)
    return created


def ensure_indexes(client: DynamoDBClient, table: str) -> list[str]:
    """Add the indexes of INDEXES that `table` lacks, one at a time (DynamoDB
    builds one new index per UpdateTable), each waited for until it is active
    and holds the items that were there before it; the names added."""
    added = []
    for index in INDEXES:
        if index in _index_status(client, table):
            continue
        creation: Any = {
            "TableName": table,
            "AttributeDefinitions": attribute_definitions([index]),
            "GlobalSecondaryIndexUpdates": [{"Create": index_definition(index)}],
        }
        client.update_table(**creation)
        _wait_for_indexes(client, table)
        added.append(index)
    return added


def drop_legacy_indexes(client: DynamoDBClient, table: str) -> list[str]:
    """Delete the run lists of LEGACY_INDEX_KEYS that `table` still has, one at a
    time; the names deleted. Only once no running code reads them."""
    dropped = []
    for index in LEGACY_INDEX_KEYS:
        if index not in _index_status(client, table):
            continue
        client.update_table(
            TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": index}}]
        )
        _wait_for_indexes(client, table)
        dropped.append(index)
    return dropped


def _index_status(client: DynamoDBClient, table: str) -> dict[str, str]:
    described = client.describe_table(TableName=table)["Table"]
    return {
        index["IndexName"]: index.get("IndexStatus", "ACTIVE")
        for index in described.get("GlobalSecondaryIndexes", [])
    }


def _wait_for_indexes(client: DynamoDBClient, table: str, seconds: float = 3600) -> None:
    """Until the table and every index of it are active (an index is built from
    the table's items before it turns active; on a big table that takes a while)."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        described = client.describe_table(TableName=table)["Table"]
        busy = described.get("TableStatus") != "ACTIVE" or any(
            index.get("IndexStatus", "ACTIVE") != "ACTIVE" or index.get("Backfilling")
            for index in described.get("GlobalSecondaryIndexes", [])
        )
        if not busy:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the indexes of DynamoDB table {table!r} are still being built")
        time.sleep(1)


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
