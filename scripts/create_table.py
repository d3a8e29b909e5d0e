"""Create the service's DynamoDB table if it does not exist (idempotent).

The endpoint, region and credentials come from boto3's usual configuration
(AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, AWS_PROFILE, ...); the table name from
WORKFLOW_TABLE.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib.storage import dynamodb  # noqa: E402


def main() -> int:
    table = dynamodb.table_name()
    created = dynamodb.ensure_table(dynamodb.create_client(), table)
    print(f"DynamoDB table {table!r} {'created' if created else 'already exists'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
