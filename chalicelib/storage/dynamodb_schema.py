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
    ],
    "BillingMode": "PAY_PER_REQUEST",
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
