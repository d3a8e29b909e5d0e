"""List pages signed with the cursor key the deployed function reads from SSM
Parameter Store (moto), and the documented 503 when it cannot be read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from chalicelib import cursors, secret_store
from tests.support.backends import aws_env
from tests.support.shapes import assert_error

if TYPE_CHECKING:
    from tests.support.api import Api

PARAMETER_VARIABLE = cursors.SECRET_VARIABLE + secret_store.PARAMETER_SUFFIX
NAME = "/approval-workflows/cursor-secret"
KEY = "a key only parameter store knows, " + "k" * 32


@pytest.fixture
def by_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The function's configuration names the parameter; nothing is read yet."""
    monkeypatch.setattr(secret_store, "_values", {})
    monkeypatch.delenv(cursors.SECRET_VARIABLE, raising=False)
    monkeypatch.setenv(PARAMETER_VARIABLE, NAME)


@pytest.fixture
def parameter_store(by_reference: None) -> Iterator[None]:
    """moto's SSM holding the key (inside the DynamoDB backend's mock, if any)."""
    import boto3
    from moto import mock_aws

    with aws_env(), mock_aws():
        boto3.client("ssm").put_parameter(Name=NAME, Value=KEY, Type="SecureString")
        yield


def test_pages_are_signed_with_the_key_from_parameter_store(
    api: Api, parameter_store: None
) -> None:
    ids = [api.create_workflow(f"W{i}")["id"] for i in range(3)]

    first = api.get("/workflows?limit=2").json_body
    cursor = first["next_cursor"]
    assert cursor == cursors.issue("workflows", {}, ids[1], secret=KEY)
    rest = api.get(f"/workflows?limit=2&cursor={cursor}").json_body
    assert [w["id"] for w in first["items"] + rest["items"]] == ids


def test_a_page_that_needs_an_unreadable_key_answers_503(
    api: Api, by_reference: None, no_backoff: None
) -> None:
    api.create_workflow("One")
    api.create_workflow("Two")

    with aws_env(AWS_ENDPOINT_URL_SSM="http://127.0.0.1:9"):
        assert_error(api.get("/workflows?limit=1"), 503)
        # A page that signs no cursor does not need the key.
        assert api.get("/workflows").status_code == 200
