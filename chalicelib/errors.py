"""Domain errors: what went wrong, in the engine's words (no HTTP here)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chalicelib.models import Step


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
    """A decision lost the race: the run left the step the caller decided on."""

    def __init__(self, step: "Step") -> None:
        super().__init__(f"Run is no longer at step {step.name!r}: another decision "
                         "was recorded first; reload the run")
