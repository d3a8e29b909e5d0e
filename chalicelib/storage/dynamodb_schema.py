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
ALL_INDEX = "all"
BY_WORKFLOW_INDEX = "by_workflow"
BY_STATUS_INDEX = "by_status"
BY_WORKFLOW_STATUS_INDEX = "by_workflow_status"
INDEX_KEYS = {
    ALL_INDEX: "all_pk",
    BY_WORKFLOW_INDEX: "workflow_pk",
    BY_STATUS_INDEX: "status_pk",
    BY_WORKFLOW_STATUS_INDEX: "workflow_status_pk",
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

TABLE_KEYS: dict[str, Any] = {
    "KeySchema": [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ],
    "AttributeDefinitions": [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
        {"AttributeName": "id", "AttributeType": "N"},
        *({"AttributeName": key, "AttributeType": "S"} for key in INDEX_KEYS.values()),
        {"AttributeName": DUE_KEY, "AttributeType": "S"},
        {"AttributeName": DUE_AT, "AttributeType": "S"},
    ],
    "BillingMode": "PAY_PER_REQUEST",
    # Carries the event items to the relay (chalicelib/relay.py) when deployed.
    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    "GlobalSecondaryIndexes": [
        {
            "IndexName": index,
            "KeySchema": [
                {"AttributeName": key, "KeyType": "HASH"},
                {"AttributeName": "id", "KeyType": "RANGE"},
            ],
            # A page is read whole from the index: no follow-up read per item.
            "Projection": {"ProjectionType": "ALL"},
        }
        for index, key in INDEX_KEYS.items()
    ]
    + [
        {
            "IndexName": DUE_INDEX,
            "KeySchema": [
                {"AttributeName": DUE_KEY, "KeyType": "HASH"},
                {"AttributeName": DUE_AT, "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
    ],
}
# The attribute DynamoDB's Time to Live reads (epoch seconds). Like TABLE_KEYS,
# ensure_table and scripts/package.py both take it from here.
TTL_ATTRIBUTE = "expires_at"


def ensure_table(client: DynamoDBClient, table: str) -> bool:
    """Create the table, wait until it is active and turn its Time to Live on;
    False if it already existed (its TTL is turned on all the same)."""
    try:
        client.create_table(TableName=table, **TABLE_KEYS)
        created = True
    except client.exceptions.ResourceInUseException:
        created = False
    client.get_waiter("table_exists").wait(
        TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    ensure_indexes(client, table)
    ensure_time_to_live(client, table)
    return created


def ensure_indexes(client: DynamoDBClient, table: str) -> None:
    """Add the indexes of TABLE_KEYS that a table made before them lacks, one at
    a time (DynamoDB builds one per UpdateTable); they fill in the background."""
    described = client.describe_table(TableName=table)["Table"]
    present = {index["IndexName"] for index in described.get("GlobalSecondaryIndexes", [])}
    for index in TABLE_KEYS["GlobalSecondaryIndexes"]:
        if index["IndexName"] in present:
            continue
        names = {key["AttributeName"] for key in index["KeySchema"]}
        client.update_table(
            TableName=table,
            AttributeDefinitions=[
                definition
                for definition in TABLE_KEYS["AttributeDefinitions"]
                if definition["AttributeName"] in names
            ],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
        client.get_waiter("table_exists").wait(
            TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )


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
