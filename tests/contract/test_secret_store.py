"""Secrets by reference: the cursor key from moto's SSM Parameter Store, read once
per container, and from the environment when no parameter is named."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from chalicelib import cursors, secret_store
from chalicelib.domain import errors
from tests.support.backends import aws_env

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

VARIABLE = cursors.SECRET_VARIABLE
PARAMETER_VARIABLE = VARIABLE + secret_store.PARAMETER_SUFFIX
NAME = "/approval-workflows/cursor-secret"


@pytest.fixture
def new_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing read yet, and no secret configured."""
    monkeypatch.setattr(secret_store, "_values", {})
    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.delenv(PARAMETER_VARIABLE, raising=False)


@pytest.fixture
def ssm(new_container: None) -> Iterator[SSMClient]:
    """moto's in-process SSM, reached through boto3's environment."""
    import boto3
    from moto import mock_aws

    with aws_env(), mock_aws():
        yield boto3.client("ssm")


def put(ssm: SSMClient, value: str, name: str = NAME) -> None:
    ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)


def test_without_a_parameter_the_secret_is_the_variables_value(
    new_container: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert secret_store.value(VARIABLE) is None
    monkeypatch.setenv(VARIABLE, "local key")
    assert secret_store.value(VARIABLE) == "local key"


def test_a_named_parameter_is_read_decrypted_and_wins_over_the_value(
    ssm: SSMClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(ssm, "key from parameter store")
    monkeypatch.setenv(VARIABLE, "a value left in the configuration")
    monkeypatch.setenv(PARAMETER_VARIABLE, NAME)

    assert secret_store.value(VARIABLE) == "key from parameter store"


def test_a_parameter_is_read_once_per_container(
    ssm: SSMClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read = secret_store._read

    def counted(name: str) -> str:
        reads.append(name)
        return read(name)

    monkeypatch.setattr(secret_store, "_read", counted)
    put(ssm, "first")
    monkeypatch.setenv(PARAMETER_VARIABLE, NAME)

    assert secret_store.value(VARIABLE) == "first"
    put(ssm, "second")
    assert secret_store.value(VARIABLE) == "first"
    assert reads == [NAME]

    monkeypatch.setattr(secret_store, "_values", {})  # a new container
    assert secret_store.value(VARIABLE) == "second"


def test_a_missing_parameter_is_unavailable_and_not_remembered(
    ssm: SSMClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PARAMETER_VARIABLE, NAME)

    with pytest.raises(errors.Unavailable, match="ParameterNotFound") as raised:
        secret_store.value(VARIABLE)
    assert NAME not in raised.value.message  # the operator's log names it, not the caller

    put(ssm, "created since")
    assert secret_store.value(VARIABLE) == "created since"


def test_an_unreachable_parameter_store_is_unavailable(
    new_container: None, no_backoff: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PARAMETER_VARIABLE, NAME)
    with aws_env(AWS_ENDPOINT_URL_SSM="http://127.0.0.1:9"):
        with pytest.raises(errors.Unavailable, match="could not be reached"):
            secret_store.value(VARIABLE)


def test_cursors_are_signed_with_the_parameters_value(
    ssm: SSMClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(ssm, "k" * 64)
    monkeypatch.setenv(PARAMETER_VARIABLE, NAME)

    cursor = cursors.issue("runs", {}, 7)

    assert cursor == cursors.issue("runs", {}, 7, secret="k" * 64)
    assert cursor != cursors.issue("runs", {}, 7, secret=cursors.DEVELOPMENT_SECRET)
    assert cursors.position(cursor, "runs", {}) == 7
