"""Fixtures: every test that asks for `storage` (or what builds on it) runs once per backend.

Fixtures build on each other: storage_factory -> storage -> client -> api.

A backend is a context manager that takes the test's tmp_path, prepares an empty
store and yields an *opener*: a zero-argument callable that opens one more
Storage on that same data (the first call gives the `storage` fixture; the
concurrency tests call it again, once per thread). Adding DynamoDB is one line in
each mapping below, with the backend functions of tests/dynamodb_backends.py
(moto's `mock_aws` and a fresh table; each opener call a new DynamoDBStorage).

RACE_BACKENDS is the same mapping for the concurrency tests. It is separate
because moto's in-process mock does not make a condition check and its write
atomic (issue 3, "Known facts"): DynamoDB races must run against moto served one
request at a time on loopback, which is slower, so only the race tests pay for it.
"""
from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Optional

import pytest
from chalice.test import Client, HTTPResponse

import app as app_module
from chalicelib.storage import Storage, dynamodb
from chalicelib.storage.sqlite import SQLiteStorage
from tests import openapi_contract
from tests.dynamodb_backends import aws_env, dynamodb_backend, dynamodb_race_backend

Opener = Callable[[], Storage]
Backend = Callable[[Path], ContextManager[Opener]]


@contextlib.contextmanager
def sqlite_backend(tmp_path: Path) -> Iterator[Opener]:
    """A real SQLite file per test; every opener call is a new SQLiteStorage on it."""
    path = str(tmp_path / "workflows.sqlite3")
    opened: list[SQLiteStorage] = []

    def open_storage() -> Storage:
        storage = SQLiteStorage(path)
        opened.append(storage)
        return storage

    yield open_storage
    # close() closes the calling thread's connection; connections of finished
    # threads went with their thread-local storage.
    for storage in opened:
        storage.close()


BACKENDS: dict[str, Backend] = {
    "sqlite": sqlite_backend,
    "dynamodb": dynamodb_backend,
}

RACE_BACKENDS: dict[str, Backend] = {
    "sqlite": sqlite_backend,
    "dynamodb": dynamodb_race_backend,
}


@pytest.fixture(params=list(BACKENDS))
def storage_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """A zero-argument callable opening another Storage on this test's (empty) data."""
    with BACKENDS[request.param](tmp_path) as open_storage:
        yield open_storage


@pytest.fixture
def storage(storage_factory: Opener) -> Storage:
    """An empty store on the backend this test runs with."""
    return storage_factory()


@pytest.fixture(params=list(RACE_BACKENDS))
def race_storage_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Like storage_factory, on a backend that refuses lost races as production does."""
    with RACE_BACKENDS[request.param](tmp_path) as open_storage:
        yield open_storage


@pytest.fixture
def ddb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dynamodb.DynamoDBStorage]:
    """DynamoDB only: the app on a fresh table in moto's in-process mock."""
    with dynamodb_backend(tmp_path) as open_storage:
        storage = open_storage()
        assert isinstance(storage, dynamodb.DynamoDBStorage)
        monkeypatch.setattr(app_module, "_STORAGE", storage)
        yield storage


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB retries happen as configured, without waiting between them."""
    import botocore.retries.standard

    monkeypatch.setattr(botocore.retries.standard.ExponentialBackoff, "delay_amount",
                        lambda self, context: 0)
    monkeypatch.setattr(dynamodb.time, "sleep", lambda seconds: None)


@pytest.fixture
def unreachable_dynamodb(no_backoff: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB only: the app on an endpoint where nothing listens."""
    with aws_env(AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:9"):
        monkeypatch.setattr(app_module, "_STORAGE",
                            dynamodb.DynamoDBStorage(dynamodb.create_client(), "any"))


@pytest.fixture
def client(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """Chalice's test client, with the app's lazily created storage set to ours."""
    monkeypatch.setattr(app_module, "_STORAGE", storage)
    with Client(app_module.app) as test_client:
        yield test_client


JSON_HEADERS = {"Content-Type": "application/json"}
_NO_BODY = object()


class Api:
    """The request sequences the API tests repeat (create, append, start, approve, reject).

    The typed helpers assert the success status and return the parsed body;
    `request`, `get` and `post` return the raw response for tests of failures.
    Every response is first checked against the OpenAPI document (status, headers, body).
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self._names = itertools.count(1)

    # -- raw requests --------------------------------------------------------

    def request(self, method: str, path: str, body: Any = _NO_BODY, *,
                raw: Optional[bytes] = None,
                headers: Optional[dict[str, str]] = None) -> HTTPResponse:
        if raw is None:
            raw = b"" if body is _NO_BODY else json.dumps(body).encode("utf-8")
        response = self.client.http.request(method, path, headers=headers or JSON_HEADERS,
                                            body=raw)
        openapi_contract.assert_conforms(method, path, response.status_code,
                                         response.headers, response.body)
        return response

    def get(self, path: str) -> HTTPResponse:
        return self.request("GET", path)

    def post(self, path: str, body: Any = _NO_BODY, **kwargs: Any) -> HTTPResponse:
        return self.request("POST", path, body, **kwargs)

    # -- successful sequences ------------------------------------------------

    def create_workflow(self, name: Optional[str] = None, steps: Any = None,
                        description: Optional[str] = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name or f"Workflow {next(self._names)}"}
        if steps is not None:
            body["steps"] = list(steps)
        if description is not None:
            body["description"] = description
        return self._expect(201, self.post("/workflows", body))

    def append_step(self, workflow_id: int, name: str) -> dict[str, Any]:
        return self._expect(201, self.post(f"/workflows/{workflow_id}/steps", {"name": name}))

    def get_workflow(self, workflow_id: int) -> dict[str, Any]:
        return self._expect(200, self.get(f"/workflows/{workflow_id}"))

    def start_run(self, workflow_id: int, title: str = "Laptop purchase") -> dict[str, Any]:
        return self._expect(201, self.post("/runs", {"workflow_id": workflow_id,
                                                     "title": title}))

    def get_run(self, run_id: int) -> dict[str, Any]:
        return self._expect(200, self.get(f"/runs/{run_id}"))

    def approve(self, run_id: int, actor: str = "alice",
                comment: Optional[str] = None) -> dict[str, Any]:
        return self._expect(200, self.post(f"/runs/{run_id}/approve",
                                           _decision(actor, comment)))

    def reject(self, run_id: int, actor: str = "bob",
               comment: Optional[str] = None) -> dict[str, Any]:
        return self._expect(200, self.post(f"/runs/{run_id}/reject",
                                           _decision(actor, comment)))

    def started_run(self, steps: Any = ("Manager", "Finance", "Legal"),
                    title: str = "Laptop purchase") -> tuple[dict[str, Any], dict[str, Any]]:
        """A new workflow with `steps` and a run of it, just started."""
        workflow = self.create_workflow(steps=steps)
        return workflow, self.start_run(workflow["id"], title)

    @staticmethod
    def _expect(status: int, response: HTTPResponse) -> dict[str, Any]:
        assert response.status_code == status, (response.status_code, response.body)
        body = response.json_body
        assert isinstance(body, dict), response.body
        return body


def _decision(actor: str, comment: Optional[str]) -> dict[str, Any]:
    return {"actor": actor} if comment is None else {"actor": actor, "comment": comment}


@pytest.fixture
def api(client: Client) -> Api:
    return Api(client)
