"""Create the service's DynamoDB table if it does not exist (idempotent).

The endpoint, region and credentials come from boto3's usual configuration
(AWS_ENDPOINT_URL_DYNAMODB, AWS_DEFAULT_REGION or AWS_REGION, AWS_PROFILE, ...);
the table name from WORKFLOW_TABLE. The definition is `dynamodb_schema.TABLE_KEYS`, the
same one `make package` deploys.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib import errors
from chalicelib.storage import dynamodb, dynamodb_schema

if TYPE_CHECKING:
    from botocore.client import BaseClient


def main(client: BaseClient | None = None) -> int:
    try:
        table = dynamodb.table_name()
    except errors.Unavailable as exc:
        print(exc.message, file=sys.stderr)
        return 2
    if client is None:
        client = dynamodb.create_client()  # falls back to AWS_REGION itself
    created = dynamodb_schema.ensure_table(client, table)
    where = client.meta.endpoint_url
    print(f"DynamoDB table {table!r} {'created' if created else 'already exists'} at {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
