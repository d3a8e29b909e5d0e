"""Create the service's DynamoDB table if it does not exist (idempotent).

The endpoint, region and credentials come from boto3's usual configuration,
the table name from WORKFLOW_TABLE. The definition is `dynamodb_schema.TABLE_KEYS`,
the one `make package` deploys, but without its stream unless `--stream` is
given: where this table is used the events are sent from the table itself
(docs/deploy.md), and a stream nobody reads costs memory and time on a local
endpoint (moto keeps every record).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib.domain import errors
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import schema as dynamodb_schema

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def main(client: DynamoDBClient | None = None, stream: bool = False) -> int:
    """0 once the table exists with its Time to Live on (and, with `stream`,
    the deployed table's stream, if it is created now). Otherwise one line on
    standard error, no traceback: what to set (exit 2), or what the endpoint
    refused or why it could not be reached (exit 1)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        table = dynamodb_client.table_name()
        if client is None:
            client = dynamodb_client.create_client()  # falls back to AWS_REGION itself
    except errors.Unavailable:
        return 2  # the storage module has logged what to set, in one line
    where = client.meta.endpoint_url
    try:
        created = dynamodb_schema.ensure_table(client, table, stream=stream)
    except NoCredentialsError:
        return _fail(
            f"No AWS credentials were found to create DynamoDB table {table!r} at {where}: "
            "set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        consequence = (
            "; without Time to Live, expired Idempotency-Keys stay in the table "
            "(the service still treats them as expired)"
            if "TimeToLive" in exc.operation_name
            else ""
        )
        return _fail(
            f"{where} refused {exc.operation_name} for DynamoDB table {table!r} "
            f"({error.get('Code', '')}: {error.get('Message', '')}){consequence}"
        )
    except BotoCoreError as exc:
        # Unreachable (after the client's retries), or the table never became active.
        return _fail(f"DynamoDB table {table!r} could not be created at {where}: {exc}")
    print(f"DynamoDB table {table!r} {'created' if created else 'already exists'} at {where}")
    return 0


def _fail(reason: str) -> int:
    print(" ".join(reason.split()), file=sys.stderr)
    return 1


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--stream", action="store_true", help="with the stream the deployed relay reads"
    )
    sys.exit(main(stream=parser.parse_args().stream))
