"""`make dynamodb-table` says what went wrong in one line, never a traceback:
no region, no credentials, an endpoint that refuses a call or cannot be reached."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chalicelib.storage.dynamodb import schema as dynamodb_schema
from scripts.moto_server import Fault, MotoServer
from tests.support.processes import command_env, free_port, make, own_lines

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
UNKNOWN_OPERATION = {
    "__type": "com.amazonaws.dynamodb.v20120810#UnknownOperationException",
    "message": "Unknown operation",
}


@pytest.fixture
def moto() -> Iterator[MotoServer]:
    """A moto server of this test's own, so its faults reach no other test."""
    with MotoServer() as server:
        yield server


def _fails_in_one_line(tmp_path: Path, expected: str, **variables: str) -> str:
    result = make("dynamodb-table", command_env(tmp_path, **variables))
    lines = own_lines(result.stderr)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    return lines[0]


def test_without_a_region_it_says_what_to_set(tmp_path: Path) -> None:
    _fails_in_one_line(tmp_path, "set AWS_REGION or AWS_DEFAULT_REGION", **CREDENTIALS)


def test_without_credentials_it_says_what_to_set(tmp_path: Path) -> None:
    # Nothing listens there: were credentials found, no request would leave the machine.
    _fails_in_one_line(
        tmp_path,
        "set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        AWS_DEFAULT_REGION="eu-west-1",
        AWS_ENDPOINT_URL_DYNAMODB=f"http://127.0.0.1:{free_port()}",
    )


def test_an_unreachable_endpoint_is_one_line(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    line = _fails_in_one_line(
        tmp_path,
        f"could not be created at {endpoint}: Could not connect",
        AWS_DEFAULT_REGION="eu-west-1",
        AWS_ENDPOINT_URL_DYNAMODB=endpoint,
        **CREDENTIALS,
    )
    assert "'approval-workflows'" in line


@pytest.mark.parametrize("operation", ["DescribeTimeToLive", "UpdateTimeToLive"])
def test_an_endpoint_without_time_to_live_is_one_line(
    tmp_path: Path, moto: MotoServer, operation: str
) -> None:
    moto.inject(operation, Fault(400, UNKNOWN_OPERATION))
    line = _fails_in_one_line(
        tmp_path,
        f"{moto.endpoint} refused {operation} for DynamoDB table",
        AWS_DEFAULT_REGION="eu-west-1",
        AWS_ENDPOINT_URL_DYNAMODB=moto.endpoint,
        **CREDENTIALS,
    )
    assert "(UnknownOperationException: Unknown operation)" in line
    assert "expired Idempotency-Keys stay in the table" in line


def test_a_reachable_endpoint_gets_the_table_once(tmp_path: Path, moto: MotoServer) -> None:
    env = command_env(
        tmp_path,
        AWS_DEFAULT_REGION="eu-west-1",
        AWS_ENDPOINT_URL_DYNAMODB=moto.endpoint,
        **CREDENTIALS,
    )
    table = f"table-{uuid.uuid4().hex}"
    first = make("dynamodb-table", env, f"WORKFLOW_TABLE={table}")
    again = make("dynamodb-table", env, f"WORKFLOW_TABLE={table}")
    assert (first.returncode, again.returncode) == (0, 0), first.stderr + again.stderr
    assert f"DynamoDB table {table!r} created at {moto.endpoint}" in first.stdout
    assert f"DynamoDB table {table!r} already exists at {moto.endpoint}" in again.stdout
    # Lean: no stream, which nothing reads where this table is used; the
    # indexes and Time to Live of the deployed table.
    import boto3

    client = boto3.client(
        "dynamodb",
        endpoint_url=moto.endpoint,
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    described = client.describe_table(TableName=table)["Table"]
    assert "LatestStreamArn" not in described
    assert described.get("StreamSpecification", {}).get("StreamEnabled", False) is False
    assert {index["IndexName"] for index in described["GlobalSecondaryIndexes"]} == set(
        dynamodb_schema.INDEXES
    )
    ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED"
