"""Domain errors: what went wrong, in the engine's words (no HTTP here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar


class WorkflowError(Exception):
    """Base of every error the engine raises on purpose."""

    # The message when none is given; the kinds that always mean one thing set it.
    default_message = ""
    # A 4xx that a retry of the same request may not meet (not kept for an
    # Idempotency-Key, as a 5xx is not: chalicelib/domain/idempotency.py).
    passing = False

    def __init__(self, message: str = "", **details: Any) -> None:
        message = message or self.default_message
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(WorkflowError):
    """The caller sent something the service cannot accept."""


class PayloadTooLarge(InvalidInput):
    """The request body is larger than the service reads."""


class Unprocessable(InvalidInput):
    """The request is well formed and valid by every rule its schema states,
    and still breaks one no schema can state (a quorum no approver list can
    meet, a rejection without the comment its workflow requires): RFC 9110's
    422, so that a fuzzer told which requests are valid can tell them apart."""


class Unauthorized(WorkflowError):
    """The caller did not prove who it is (WORKFLOW_AUTH=jwt)."""

    def __init__(self, message: str, token_given: bool = False) -> None:
        super().__init__(message)
        # A bad token is an invalid_token challenge; no token at all is a bare one.
        self.token_given = token_given


class Forbidden(WorkflowError):
    """The caller is known, and this is not theirs to do."""


class NotFound(WorkflowError):
    """The workflow, run or step named does not exist."""


class Conflict(WorkflowError):
    """The request is valid but the current state forbids it."""


class Gone(WorkflowError):
    """What was named existed, and can no longer be used (a one-time action
    link used, expired or overtaken: chalicelib/domain/links.py)."""


class Unavailable(WorkflowError):
    """The storage could not answer in time; the caller may retry later."""


class StaleRun(Conflict):
    """The run is no longer at the step the caller named (expected_step_id): the
    caller's view is stale, which is theirs to know (409)."""

    default_message = "Run is no longer at the step decided on; reload it"


class Contended(Conflict):
    """The decision lost the race for the run as often as the engine tries
    (DECISION_ATTEMPTS) and wrote nothing: a 409 the caller may retry at once.
    A passing outcome, so an Idempotency-Key does not keep it."""

    default_message = "Too many decisions on this run at once; nothing was recorded, retry shortly"
    passing = True


class LostWrite(Exception):
    """Another write changed the run (or its workflow's steps) since it was read,
    and the storage wrote nothing: the engine reads again and decides again.
    Never a caller's answer, so not a WorkflowError."""


Written = TypeVar("Written")


def until_written(
    attempts: int, attempt: Callable[[int], Written], exhausted: WorkflowError
) -> Written:
    """`attempt(n)` (a read, the rule on what it read, one conditional write)
    made again on a fresh read while its write is a LostWrite, at most
    `attempts` times; then `exhausted`, nothing written. Only the storage's
    conditional writes raise LostWrite: a refusal of the rule goes through."""
    for n in range(attempts):
        try:
            return attempt(n)
        except LostWrite:
            continue
    raise exhausted


class IdempotencyMismatch(WorkflowError):
    """The Idempotency-Key was first used for a different request."""

    default_message = (
        "This Idempotency-Key was used for a different request (method, "
        "path or body); use a new key"
    )


class RequestInProgress(Conflict):
    """The first request with this Idempotency-Key has not answered yet."""

    default_message = "A request with this Idempotency-Key is still in progress; retry shortly"


# The not-found answers every storage adapter gives, worded once.


def workflow_not_found(workflow_id: int) -> NotFound:
    return NotFound(f"Workflow {workflow_id} not found")


def run_not_found(run_id: int) -> NotFound:
    return NotFound(f"Run {run_id} not found")
