"""Configuration mistakes and storage faults answer a 503 that names nothing
internal, and the log names what to fix.

The app builds its storage from the environment here (no `use_storage`), as
`make run` and Lambda do, on a real SQLite file or a real HTTP endpoint: the
one-request-at-a-time moto server, or a closed port.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
from chalice.test import Client

import app as app_module
from chalicelib.storage.dynamodb import adapter as dynamodb
from scripts.moto_server import Fault, MotoServer
from tests.support.api import Api
from tests.support.backends import client as dynamodb_client
from tests.support.backends import dynamodb_race_backend, moto_server

CLOSED_PORT = "http://127.0.0.1:9"
STORAGE_LOGGER = "approval-workflows.storage"
# Every variable through which boto3 could find a region or credentials outside the test.
AWS_VARIABLES = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, serve: None) -> Iterator[Any]:
    """Set the environment the app will build its storage from (nothing of the
    machine's AWS configuration leaks in; no credentials from the network)."""
    for name in (*AWS_VARIABLES, "WORKFLOW_STORAGE", "WORKFLOW_TABLE", "WORKFLOW_SQLITE_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    app_module.use_storage(None)

    def set_env(**variables: str) -> None:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)

    yield set_env


def _answers_503_logging(
    caplog: pytest.LogCaptureFixture, fix: str, internal: tuple[str, ...]
) -> list[logging.LogRecord]:
    """GET and keyed POST answer the documented 503 with a message naming none
    of `internal`; the storage log says `fix`, in one line per failed request."""
    caplog.clear()
    with Client(app_module.app) as test_client:
        api = Api(test_client)
        answers = [
            api.get("/workflows/1"),
            api.post(
                "/workflows",
                {"name": "Unstored"},
                headers={"Content-Type": "application/json", "Idempotency-Key": "k-1"},
            ),
        ]
    for answer in answers:
        assert answer.status_code == 503
        assert set(answer.json_body) == {"error"}
        message = answer.json_body["error"]
        assert "retry" in message
        for name in (*internal, "WORKFLOW_", "AWS_", "Exception", "sqlite", "DynamoDB"):
            assert name.lower() not in message.lower(), (name, message)
    logged = [record for record in caplog.records if record.name == STORAGE_LOGGER]
    assert len(logged) == len(answers)
    for record in logged:
        line = record.getMessage()
        assert "\n" not in line
        assert fix in line, line
    return logged


def test_an_unknown_storage_kind_answers_503_and_logs_the_choices(
    configure: Any, caplog: pytest.LogCaptureFixture
) -> None:
    configure(WORKFLOW_STORAGE="mongo")
    _answers_503_logging(caplog, "set it to 'sqlite' (the default) or 'dynamodb'", ("mongo",))


def _not_a_database(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("Not a database, but a page of notes. " * 100)
    return path


def _under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "plain-file").write_text("")
    return tmp_path / "plain-file" / "workflows.sqlite3"


@pytest.mark.parametrize(
    "unusable",
    [
        lambda tmp_path: tmp_path,
        _under_a_file,
        lambda tmp_path: _under_a_file(tmp_path).parent / "deeper" / "workflows.sqlite3",
        # procfs refuses new files even to root, which a chmod would not stop.
        lambda tmp_path: Path("/proc/workflows.sqlite3"),
        _not_a_database,
    ],
    ids=["a-directory", "under-a-file", "deeper-under-a-file", "read-only", "not-a-database"],
)
def test_an_unusable_sqlite_path_answers_503_and_logs_the_path(
    configure: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path, unusable: Any
) -> None:
    path = unusable(tmp_path)
    configure(WORKFLOW_SQLITE_PATH=str(path))
    logged = _answers_503_logging(
        caplog, f"{str(path)!r} (WORKFLOW_SQLITE_PATH) cannot be used", (path.name,)
    )
    assert all(
        "Set WORKFLOW_SQLITE_PATH to a file in a writable directory" in record.getMessage()
        for record in logged
    )


def test_dynamodb_without_a_region_answers_503_and_logs_what_to_set(
    configure: Any, caplog: pytest.LogCaptureFixture
) -> None:
    configure(
        WORKFLOW_STORAGE="dynamodb",
        WORKFLOW_TABLE="secret-table",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
    )
    _answers_503_logging(caplog, "set AWS_REGION or AWS_DEFAULT_REGION", ("secret-table",))


def test_dynamodb_without_credentials_answers_503_and_logs_what_to_set(
    configure: Any, caplog: pytest.LogCaptureFixture
) -> None:
    configure(
        WORKFLOW_STORAGE="dynamodb",
        WORKFLOW_TABLE="secret-table",
        AWS_REGION="eu-west-1",
        AWS_ENDPOINT_URL_DYNAMODB=CLOSED_PORT,
    )
    _answers_503_logging(
        caplog,
        "no AWS credentials were found. Set AWS_PROFILE, or AWS_ACCESS_KEY_ID",
        ("secret-table",),
    )


def test_dynamodb_without_a_table_name_answers_503_and_logs_what_to_set(
    configure: Any, caplog: pytest.LogCaptureFixture
) -> None:
    configure(WORKFLOW_STORAGE="dynamodb", AWS_REGION="eu-west-1")
    _answers_503_logging(caplog, "WORKFLOW_TABLE is not set", ())


def test_dynamodb_with_an_unknown_profile_answers_503_and_logs_it(
    configure: Any, caplog: pytest.LogCaptureFixture
) -> None:
    configure(WORKFLOW_STORAGE="dynamodb", WORKFLOW_TABLE="t", AWS_PROFILE="no-such-profile")
    _answers_503_logging(caplog, "The config profile (no-such-profile) could not be found", ())


# -- DynamoDB refusing or failing requests at run time ---------------------------------

THROTTLED = {
    "__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
    "message": "Rate of requests exceeds the allowed throughput.",
}
DENIED = {
    "__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
    "message": "User is not authorized to perform: dynamodb:Query on resource: secret-arn",
}


@pytest.fixture
def moto(tmp_path: Path, serve: None, no_backoff: None) -> Iterator[MotoServer]:
    """The app on a fresh table of the moto server; faults cleared afterwards."""
    server = moto_server()
    with dynamodb_race_backend(tmp_path) as open_storage:
        app_module.use_storage(open_storage())
        try:
            yield server
        finally:
            server.faults.clear()


def _use_table(server: MotoServer, table: str, endpoint: Optional[str] = None) -> None:
    app_module.use_storage(
        dynamodb.DynamoDBStorage(dynamodb_client(endpoint or server.endpoint), table)
    )


def test_a_missing_table_answers_503_and_the_log_says_to_create_it(
    moto: MotoServer, caplog: pytest.LogCaptureFixture
) -> None:
    _use_table(moto, "secret-table")
    logged = _answers_503_logging(
        caplog,
        "on table 'secret-table' at",
        ("secret-table", "ResourceNotFound", "make dynamodb-table"),
    )
    for record in logged:
        assert "(ResourceNotFoundException" in record.getMessage()
        assert "create it with `make dynamodb-table`" in record.getMessage()
        assert record.levelname == "ERROR"


def test_refused_credentials_answer_503_and_the_log_names_the_code(
    moto: MotoServer, caplog: pytest.LogCaptureFixture
) -> None:
    moto.inject("Query", Fault(400, DENIED))
    moto.inject("PutItem", Fault(400, DENIED))
    logged = _answers_503_logging(
        caplog, "(AccessDeniedException: User is not authorized", ("AccessDenied", "secret-arn")
    )
    for record in logged:
        assert "grant the actions that docs/deploy.md lists" in record.getMessage()
        assert record.levelname == "ERROR"


def test_throttling_past_the_retries_answers_503_without_the_code_and_logs_a_warning(
    moto: MotoServer, caplog: pytest.LogCaptureFixture
) -> None:
    moto.inject("Query", Fault(400, THROTTLED))
    moto.inject("PutItem", Fault(400, THROTTLED))
    logged = _answers_503_logging(caplog, "(ThrottlingException: Rate of requests", ("Throttling",))
    for record in logged:
        assert "retries ran out" in record.getMessage()
        assert record.levelname == "WARNING"


def test_an_unreachable_endpoint_answers_503_and_the_log_names_it(
    moto: MotoServer, caplog: pytest.LogCaptureFixture
) -> None:
    _use_table(moto, "secret-table", endpoint=CLOSED_PORT)
    _answers_503_logging(caplog, f"at {CLOSED_PORT} failed: Could not connect", ("secret-table",))
