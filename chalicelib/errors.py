"""Domain errors: what went wrong, in the engine's words (no HTTP here)."""
from __future__ import annotations

from typing import Any


class WorkflowError(Exception):
    """Base of every error the engine raises on purpose."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(WorkflowError):
    """The caller sent something the service cannot accept."""


class NotFound(WorkflowError):
    """The workflow, run or step named does not exist."""


class Conflict(WorkflowError):
    """The request is valid but the current state forbids it."""


class Unavailable(WorkflowError):
    """The storage could not answer in time; the caller may retry later."""


class StaleRun(Conflict):
    """The run is no longer at the step the caller decided on."""

    def __init__(self, message: str = "Run is no longer at the step decided on; reload it",
                 **details: Any) -> None:
        super().__init__(message, **details)


class IdempotencyMismatch(WorkflowError):
    """The Idempotency-Key was first used for a different request."""

    def __init__(self, message: str = "This Idempotency-Key was used for a different "
                 "request (method, path or body); use a new key", **details: Any) -> None:
        super().__init__(message, **details)


class RequestInProgress(Conflict):
    """The first request with this Idempotency-Key has not answered yet."""

    def __init__(self, message: str = "A request with this Idempotency-Key is still in "
                 "progress; retry shortly", **details: Any) -> None:
        super().__init__(message, **details)
