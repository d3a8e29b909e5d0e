"""Fixtures and tiers.

Tiers, one folder each, marked by folder (`-m` selects them):

    unit       pure rules, no storage                      make test-fast
    contract   the storage adapters and the engine         make test-fast
    api        routes through chalice.test.Client          make test-fast
    races      storms of concurrent writers                make test
    fuzz       schemathesis against the served document    make test
    packaging  `make package`'s template, cfn-lint         make test
    local      the make targets, run as a user runs them      make test
    browser    the approvers' page in headless Chromium    make test

Which suites run on which backends, and why:

- contract/test_storage_contract.py, the idempotency store contract and every
  api/ test: every backend of BACKENDS (SQLite file; moto in process), through
  the parametrized `storage` fixture. This is the one contract: both adapters
  must behave identically, so it is checked on both.
- contract/test_engine.py: SQLite only. The engine is pure over the Storage
  protocol; what it needs from storage is pinned on both backends by the
  contract suite and the API tests above.
- browser/: every backend of BACKENDS, as api/: the page's server runs in
  process, and the page sends one request at a time.
- races/ and fuzz/: RACE_BACKENDS (SQLite; moto served one request at a time,
  because moto in process does not make a condition and its write atomic).
- contract/test_dynamodb_*.py and contract/test_sqlite_*.py: one backend each,
  for what only that backend has (request budgets, 1 MB pages, item sizes).

Fixtures build on each other: storage_factory -> storage -> client -> api.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chalice.test import Client

import app as app_module
from chalicelib.storage import Backend
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import client as dynamodb_client
from tests.support import tokens
from tests.support.api import Api
from tests.support.backends import (
    BACKENDS,
    RACE_BACKENDS,
    Opener,
    aws_env,
    dynamodb_backend,
    session,
)

# The test OpenID provider and the service signing in through it (`provider`).
pytest_plugins = ["tests.support.signin"]

# The service binds through the driver alone (chalicelib/storage/sqlite/
# connections.py), without the default datetime adapters and converters that
# the sqlite3 package registers with it once anything imports the package, as
# the suite's own tools do. Dropped here, so that a datetime bound by mistake
# fails the suite as it would fail the deployed service.
sqlite3.adapters.clear()
sqlite3.converters.clear()

TIERS = ("unit", "contract", "api", "races", "fuzz", "packaging", "local", "browser")
LONGEST_FIRST = ("fuzz", "races", "packaging", "local", "browser", "api", "contract", "unit")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier, the folder it lives in, and run the longest
    tiers first: with `-n 2`, pytest-xdist hands the first tests out one each, so
    the two fuzzing runs (time-bound) take a core each while the rest queues."""
    tests_dir = Path(__file__).parent
    for item in items:
        tier = item.path.relative_to(tests_dir).parts[0]
        assert tier in TIERS, f"{item.nodeid} is in no tier folder ({', '.join(TIERS)})"
        item.add_marker(tier)
    items.sort(key=lambda item: LONGEST_FIRST.index(item.path.relative_to(tests_dir).parts[0]))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fails a test marked xdist_group that pytest-xdist could not group: it
    schedules by a suffix it adds to node ids, and a pytest that no longer lets
    it (9.2, pytest-dev/pytest-xdist#1386) would otherwise spread each group
    over the workers without a word."""
    if (
        getattr(item.config.option, "loadgroup", False)
        and item.get_closest_marker("xdist_group")
        and "@" not in item.nodeid
    ):
        pytest.fail(
            "--dist loadgroup could not group this test: this pytest and pytest-xdist "
            "disagree on node ids (pin them as requirements-dev.txt does)",
            pytrace=False,
        )


@pytest.fixture(params=list(BACKENDS))
def storage_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """A zero-argument callable opening another storage on this test's (empty) data."""
    with BACKENDS[request.param](tmp_path) as open_storage:
        yield open_storage


@pytest.fixture
def storage(storage_factory: Opener) -> Backend:
    """An empty store on the backend this test runs with."""
    return storage_factory()


@pytest.fixture(params=list(RACE_BACKENDS))
def race_storage_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Like storage_factory, on a backend that refuses lost races as production does."""
    with RACE_BACKENDS[request.param](tmp_path) as open_storage:
        yield open_storage


@pytest.fixture
def secret_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """WORKFLOW_AUTH=jwt with tokens signed by tests.support.tokens.SECRET."""
    monkeypatch.setenv("WORKFLOW_AUTH", "jwt")
    monkeypatch.setenv("WORKFLOW_JWT_ISSUER", tokens.ISSUER)
    monkeypatch.setenv("WORKFLOW_JWT_SECRET", tokens.SECRET)


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app serves from whatever storage the test hands `app.use_storage`
    (without it, from one it would create), and forgets it afterwards."""
    yield
    app_module.use_storage(None)


@pytest.fixture
def ddb(tmp_path: Path, serve: None) -> Iterator[dynamodb.DynamoDBStorage]:
    """DynamoDB only: the app on a fresh table in moto's in-process mock."""
    with dynamodb_backend(tmp_path) as open_storage:
        storage = open_storage()
        assert isinstance(storage, dynamodb.DynamoDBStorage)
        app_module.use_storage(storage)
        yield storage


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB retries happen as configured, without waiting between them."""
    import botocore.retries.standard

    monkeypatch.setattr(
        botocore.retries.standard.ExponentialBackoff, "delay_amount", lambda self, context: 0
    )
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


@pytest.fixture
def unreachable_dynamodb(no_backoff: None, serve: None) -> None:
    """DynamoDB only: the app on an endpoint where nothing listens."""
    with aws_env(AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:9"):
        unreachable = dynamodb_client.create_client(session())
    app_module.use_storage(dynamodb.DynamoDBStorage(unreachable, "any"))


@pytest.fixture
def client(storage: Backend, serve: None) -> Iterator[Client]:
    """Chalice's test client, the app serving from `storage`."""
    app_module.use_storage(storage)
    with Client(app_module.app) as test_client:
        yield test_client


@pytest.fixture
def api(client: Client) -> Api:
    return Api(client)
