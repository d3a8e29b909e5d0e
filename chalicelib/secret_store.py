"""Secrets by reference: a value from SSM Parameter Store on Lambda, from the
environment locally.

A secret named by the variable NAME is read from the SecureString parameter
that NAME_PARAMETER names, if that is set (the deployed function: its
configuration holds only the parameter's name, never the secret), and from
NAME itself otherwise (local runs and tests). The parameter wins when both are
set, so a function that names one never signs with a value left in its
configuration, and never falls back to anything when it cannot be read.

A parameter is read the first time a request needs it and kept for the
container's life: one GetParameter per container, none at import and none for
requests that need no secret. So a new value reaches a container only when it
starts (docs/deploy.md says how to roll it out). A failed read raises
Unavailable (503) and is not kept: the next request tries again.

boto3 is imported only when a parameter is read: `import app` stays light.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

PARAMETER_SUFFIX = "_PARAMETER"
# One read per container; retries are few and short, as a request waits for them.
MAX_ATTEMPTS = 3
LOGGER = logging.getLogger("approval-workflows.secrets")

# Parameter name -> its decrypted value, for the life of the container.
_values: dict[str, str] = {}


def value(variable: str) -> Optional[str]:
    """The secret `variable` names, by reference or by value; None if neither is set."""
    parameter = os.environ.get(variable + PARAMETER_SUFFIX, "").strip()
    if parameter:
        return _parameter(parameter)
    return os.environ.get(variable) or None


def _parameter(name: str) -> str:
    if name not in _values:
        _values[name] = _read(name)
    return _values[name]


def _read(name: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = _client().get_parameter(Name=name, WithDecryption=True)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        # The parameter's name is for the operator's log, not for the caller.
        LOGGER.warning("SSM parameter %s could not be read: %s", name, code)
        raise errors.Unavailable(
            f"A secret the service needs could not be read ({code}); retry shortly"
        ) from exc
    except BotoCoreError as exc:
        LOGGER.warning("SSM parameter %s could not be read: %s", name, exc)
        raise errors.Unavailable("SSM Parameter Store could not be reached; retry shortly") from exc
    return answer["Parameter"]["Value"]


def _client() -> SSMClient:
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=2,
        read_timeout=5,
    )
    session = boto3.session.Session()
    # Lambda sets only AWS_REGION, which botocore does not read.
    region = session.region_name or os.environ.get("AWS_REGION")
    return session.client("ssm", region_name=region, config=config)
