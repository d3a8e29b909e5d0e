"""The DynamoDB table an operator's script works on: WORKFLOW_TABLE, where
boto3's usual configuration (endpoint, region, credentials) points."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb.adapter import DynamoDBStorage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def open_table(client: Optional[DynamoDBClient] = None) -> Optional[DynamoDBStorage]:
    """The storage on WORKFLOW_TABLE; None, with the reason on stderr, when it is not set."""
    try:
        table = dynamodb_client.table_name()
    except errors.Unavailable as exc:
        print(exc.message, file=sys.stderr)
        return None
    return DynamoDBStorage(client or dynamodb_client.create_client(), table)
