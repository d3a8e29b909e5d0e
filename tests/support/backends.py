"""The storage backends the suite runs on, for the parametrized fixtures in conftest.py.

A backend is a context manager that takes the test's tmp_path, prepares an empty
store and yields an *opener*: a zero-argument callable that opens one more
storage on that same data (the first call gives the `storage` fixture; the race
tests call it again, once per thread, as separate Lambda containers would).

- `sqlite_backend`: a real SQLite file per test.
- `dynamodb_backend`: a fresh table in moto's in-process mock (fast).
- `dynamodb_race_backend`: a fresh table on a moto server that answers one
  request at a time (scripts/moto_server.py), so that conditional writes are
  atomic as in DynamoDB and the races left in a test are the service's own.
  moto's in-process mock does not make a condition check and its write atomic.

The SQLite file is on tmpfs (/dev/shm) where there is one with room: on a
disk, the SQLite tests wait for fsync (each commit, and the WAL checkpoint of
each connection closed), the more so as the disk is busy: the contract and
API tests on SQLite took 13.3 s on a quiet disk and 38.7 s on a busy one,
and 11.4 s and 17.4 s on tmpfs. It is the same SQLite doing the same writes,
only not waiting for a disk. Elsewhere the file is in the test's tmp_path.

Both DynamoDB backends create their tables without the stream the deployed
table has (ensure_table's `stream=False`): no test of theirs reads it, and moto
pays for it on every write, more as the table grows. Delivery through the
stream is tested on a table of its own, with it (contract/test_relay.py).

moto is made cheaper in three ways that change nothing it answers, each held
to that by tests/contract/test_moto_patches.py: a transaction copies the
items it names to roll back from, not the whole table once per item of it
(lean_transactions of scripts/moto_server.py, as `make run-dynamodb` runs
it); it writes the attribute values of its answers as it holds them, without
looking each up along botocore's model (moto_attribute_values.py); and it
registers the same callbacks on every start of its mock (moto_callbacks.py).
The in-process table is copied from the first one made, not created with
four calls each time. Together these took the DynamoDB half of
tests/api/test_api_runs.py from 9.5 s to 4.4 s, and a test that pages
through 150 runs from 8.2 s to 1.7 s.

Every DynamoDB client comes from one boto3 session per test process: creating a
session parses botocore's service models (0.3 to 0.6 s), a client from an
existing one takes about 0.03 s. Clients are thread-safe, and every client is
made here, on the test's own thread, so the session is never shared across
threads while it works.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Optional
from unittest import mock

from chalicelib.storage import Backend
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import schema as dynamodb_schema
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from tests.support import moto_attribute_values, moto_callbacks

if TYPE_CHECKING:
    import boto3
    from moto.dynamodb.models.table import Table
    from mypy_boto3_dynamodb import DynamoDBClient

    from scripts.moto_server import MotoServer

Opener = Callable[[], Backend]
BackendFactory = Callable[[Path], AbstractContextManager[Opener]]

_AWS_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
}
TMPFS = "/dev/shm"
TMPFS_ROOM = 512 * 1024 * 1024
_server: Optional[MotoServer] = None
_tables = itertools.count(1)
_empty_tables: dict[str, Table] = {}


@contextlib.contextmanager
def sqlite_backend(tmp_path: Path) -> Iterator[Opener]:
    """A real SQLite file per test; every opener call is a new SQLiteStorage on it."""
    with _scratch_directory(tmp_path) as directory:
        path = str(directory / "workflows.sqlite3")
        opened: list[SQLiteStorage] = []

        def open_storage() -> Backend:
            storage = SQLiteStorage(path)
            opened.append(storage)
            return storage

        yield open_storage
        # close() closes the calling thread's connection; connections of finished
        # threads went with their thread-local storage.
        for storage in opened:
            storage.close()


@contextlib.contextmanager
def _scratch_directory(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory on tmpfs, removed afterwards; tmp_path without one
    (or with too little room: a container's /dev/shm may be 64 MB)."""
    if not _tmpfs_has_room():
        yield tmp_path
        return
    import shutil
    import tempfile

    directory = tempfile.mkdtemp(prefix="approval-workflows-test-", dir=TMPFS)
    try:
        yield Path(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@functools.cache
def _tmpfs_has_room() -> bool:
    if not (os.path.isdir(TMPFS) and os.access(TMPFS, os.W_OK)):
        return False
    stats = os.statvfs(TMPFS)
    return stats.f_bavail * stats.f_frsize >= TMPFS_ROOM


@contextlib.contextmanager
def aws_env(**extra: str) -> Iterator[None]:
    """Fake credentials and no profile or endpoint but those in `extra`."""
    with mock.patch.dict(os.environ, {**_AWS_ENV, **extra}):
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
            if name not in extra:
                os.environ.pop(name, None)
        yield


@functools.cache
def session() -> boto3.session.Session:
    """The test process's one boto3 session (made with the fake credentials)."""
    import boto3

    with aws_env():
        return boto3.session.Session()


def client(endpoint: Optional[str] = None) -> DynamoDBClient:
    """A DynamoDB client from the shared session, at moto's mock or at `endpoint`."""
    extra = {"AWS_ENDPOINT_URL_DYNAMODB": endpoint} if endpoint else {}
    with aws_env(**extra):
        return dynamodb_client.create_client(session())


@functools.cache
def _mock_client() -> DynamoDBClient:
    """One client for moto's in-process mock: moto answers it while a mock is on."""
    from moto.core.models import patch_client

    mock_client = client()
    patch_client(mock_client)
    return mock_client


@contextlib.contextmanager
def dynamodb_backend(tmp_path: Path) -> Iterator[Opener]:
    """A fresh table in moto's in-process mock."""
    from moto import mock_aws

    _install_moto_patches()
    with aws_env(), mock_aws():
        mock_client = _mock_client()
        _add_empty_table(mock_client, "workflows")
        yield lambda: dynamodb.DynamoDBStorage(mock_client, "workflows")


def _add_empty_table(mock_client: DynamoDBClient, name: str) -> None:
    """ensure_table(stream=False)'s table, in the mock just started: made with
    its four calls the first time in this process and copied from that one
    after, as moto holds it (the calls took 8 of the 12.6 ms that setting up
    a DynamoDB test took; a copy of the empty table takes a fraction of one)."""
    import copy

    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][_AWS_ENV["AWS_DEFAULT_REGION"]].tables
    if name not in _empty_tables:
        dynamodb_schema.ensure_table(mock_client, name, stream=False)
        _empty_tables[name] = copy.deepcopy(tables[name])
    tables[name] = copy.deepcopy(_empty_tables[name])


def _install_moto_patches() -> None:
    """What makes moto cheaper here without changing what it answers (each
    module says what it changes, and the contract tests hold it to that)."""
    from scripts.moto_server import lean_transactions

    lean_transactions()
    moto_attribute_values.install()
    moto_callbacks.install()


def moto_server() -> MotoServer:
    """One serialising moto server for the whole test process."""
    global _server
    if _server is None:
        from scripts.moto_server import MotoServer

        _install_moto_patches()
        _server = MotoServer().__enter__()
    return _server


@contextlib.contextmanager
def dynamodb_race_backend(tmp_path: Path) -> Iterator[Opener]:
    """A fresh table on the serialising moto server, one client per storage."""
    server = moto_server()
    with aws_env(AWS_ENDPOINT_URL_DYNAMODB=server.endpoint):
        table = f"race-{os.getpid()}-{next(_tables)}"
        admin = client(server.endpoint)
        dynamodb_schema.ensure_table(admin, table, stream=False)
        yield lambda: dynamodb.DynamoDBStorage(client(server.endpoint), table)
        # moto copies every table in a transaction: keep the server small.
        admin.delete_table(TableName=table)


BACKENDS: dict[str, BackendFactory] = {
    "sqlite": sqlite_backend,
    "dynamodb": dynamodb_backend,
}

RACE_BACKENDS: dict[str, BackendFactory] = {
    "sqlite": sqlite_backend,
    "dynamodb": dynamodb_race_backend,
}
