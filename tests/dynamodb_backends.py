"""DynamoDB backends for the parametrized fixtures in conftest.py.

`dynamodb_backend` runs on moto's in-process mock (fast); `dynamodb_race_backend`
on a moto server that answers one request at a time, so that conditional writes
are atomic as in DynamoDB and the races left in a test are the service's own.
Every opener call gives a new DynamoDBStorage, as a new Lambda container would:
its own id blocks, the same table.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Callable, Iterator, Optional
from unittest import mock

from chalicelib.storage import Storage, dynamodb
from tests.dynamodb_server import MotoServer

Opener = Callable[[], Storage]

_AWS_ENV = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SECURITY_TOKEN": "testing",
            "AWS_SESSION_TOKEN": "testing"}
_server: Optional[MotoServer] = None


@contextlib.contextmanager
def aws_env(**extra: str) -> Iterator[None]:
    with mock.patch.dict(os.environ, {**_AWS_ENV, **extra}):
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
            if name not in extra:
                os.environ.pop(name, None)
        yield


@contextlib.contextmanager
def dynamodb_backend(tmp_path: Path) -> Iterator[Opener]:
    """A fresh table in moto's in-process mock."""
    from moto import mock_aws

    with aws_env(), mock_aws():
        client = dynamodb.create_client()
        dynamodb.ensure_table(client, "workflows")
        yield lambda: dynamodb.DynamoDBStorage(client, "workflows")


def moto_server() -> MotoServer:
    """One serialising moto server for the whole test session."""
    global _server
    if _server is None:
        _server = MotoServer().__enter__()
    return _server


@contextlib.contextmanager
def dynamodb_race_backend(tmp_path: Path) -> Iterator[Opener]:
    """A fresh table on the serialising moto server, one client per storage."""
    server = moto_server()
    with aws_env(AWS_ENDPOINT_URL_DYNAMODB=server.endpoint):
        table = f"race-{uuid.uuid4().hex}"
        admin = dynamodb.create_client()
        dynamodb.ensure_table(admin, table)
        yield lambda: dynamodb.DynamoDBStorage(dynamodb.create_client(), table)
        # moto copies every table in a transaction: keep the server small.
        admin.delete_table(TableName=table)
