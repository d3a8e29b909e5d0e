"""When the storage cannot answer: what the client is told, and what the log says.

A client gets a 503 whose message names nothing inside the service: no table,
no file path, no DynamoDB error code, no setting. The operator gets one log
line that names all of them and says what to change.
"""

from __future__ import annotations

import logging

from chalicelib import log_lines
from chalicelib.domain import errors

PUBLIC_MESSAGE = "The storage is not available; retry later"

# Standard error, one line per failure (log_lines.own_logger).
LOGGER = log_lines.own_logger("approval-workflows.storage")


def unavailable(reason: str, *, transient: bool = False) -> errors.Unavailable:
    """Log `reason` (what failed, naming what it must, and what to set) as one
    line, and return the error to raise, whose message names none of it.

    transient: a passing fault (throttling, a server error) rather than a
    configuration mistake; logged as a warning instead of an error."""
    LOGGER.log(logging.WARNING if transient else logging.ERROR, " ".join(reason.split()))
    return errors.Unavailable(PUBLIC_MESSAGE)
