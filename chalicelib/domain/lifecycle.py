"""A run's life, named once: the actions its history records, the statuses it
takes, and what a step's deadline does once it passes. What each action does
is the rules' (decision.py's diagram, transitions.py); this module only names.

Each is a StrEnum: a member is a str, its value, so what is stored, sent and
hashed is the same text as before the names were members. The SQLite schema's
CHECKs are made from them (storage/sqlite/migrations.py); the OpenAPI
document's enums and the page's types are held to them by
tests/unit/test_lifecycle.py. A `match` over one ends with
`typing.assert_never`, so mypy names a member no branch handles.

A module of its own, apart from models.py, for the cold start: making an enum
class costs about 0.9 million instructions, the three 2.8 million, a seventh
of what the service adds to bare Chalice's cold start, and a read needs none
of them (a record read from storage carries the stored text, which equals its
member). The rules, the writes and the parsers of requests import it.
"""

from __future__ import annotations

from enum import StrEnum


class ActionKind(StrEnum):
    """What an entry of a run's history records (models.Action.action)."""

    APPROVE = "approve"
    REJECT = "reject"
    # Withdraw the run (its requester, or an administrator).
    CANCEL = "cancel"
    # A step whose condition does not hold for the run's input, passed by the service.
    SKIP = "skip"
    # Send the run back for changes; and resubmit it: a new round from the first step.
    RETURN = "return"
    RESUBMIT = "resubmit"
    # The current step awaits other approvers from now on (an administrator's).
    REASSIGN = "reassign"
    # The run continues at a step of a newer version of its workflow (an administrator's).
    MOVE = "move"


class RunStatus(StrEnum):
    """Where a run is in its life (models.Run.status). The spec's schema also
    allows "pending", which no run ever has (only the SQLite schema names it)."""

    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    # Sent back for changes: waiting for its requester to resubmit (or cancel) it.
    RETURNED = "returned"


class OnDeadline(StrEnum):
    """What a step's deadline does once it passed (models.Deadline.action)."""

    REMIND = "remind"
    ESCALATE = "escalate"
    # The run is rejected, by system:deadline: a rejection, the action's own name.
    REJECT = ActionKind.REJECT.value


# What a caller may do with a run (every action but the service's skip), in the
# order GET /runs/{id}/permissions answers for them.
CALLER_ACTIONS = (
    ActionKind.APPROVE,
    ActionKind.REJECT,
    ActionKind.CANCEL,
    ActionKind.RETURN,
    ActionKind.RESUBMIT,
    ActionKind.REASSIGN,
    ActionKind.MOVE,
)
# The caller actions that are an administrator's: changes of a run, not decisions.
ADMINISTERED = (ActionKind.REASSIGN, ActionKind.MOVE)
