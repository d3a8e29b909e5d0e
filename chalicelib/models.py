"""The service's records, as the engine and the storage adapters exchange them.

Immutable named tuples rather than frozen dataclasses: importing dataclasses
(and the inspect module it pulls in) and generating five frozen classes took
6.8 ms of every cold start, more than a third of Chalice's own import; these
take 0.7 ms. Keep dataclasses out of the import path of app.py.

Annotations here are evaluated when a class is made, not postponed (no
`from __future__ import annotations`): NamedTuple turns each postponed one
into a ForwardRef and compiles it, which made this module take 1.4 ms of a
cold start instead of 1.0. Names defined further down are quoted. The same
holds for the other modules of named tuples on the import path of app.py.
"""

from typing import Any, Generic, NamedTuple, Optional, TypeVar, Union

IN_PROGRESS = "in_progress"
COMPLETED = "completed"
REJECTED = "rejected"
# The spec's schema also allows "pending", which no run ever has.
RUN_STATUSES = (IN_PROGRESS, COMPLETED, REJECTED)

APPROVE = "approve"
REJECT = "reject"


class Step(NamedTuple):
    id: int
    workflow_id: int
    name: str
    step_order: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workflow_id": self.workflow_id,
            "name": self.name,
            "step_order": self.step_order,
        }

    def about(self) -> dict[str, int]:
        """The ids of what this record is about, for the access log."""
        return {"workflow_id": self.workflow_id}


class Workflow(NamedTuple):
    id: int
    name: str
    description: str
    created_at: str
    steps: tuple[Step, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "created_at": self.created_at,
            "steps": [step.to_dict() for step in self.steps],
        }

    def listed(self) -> dict[str, Any]:
        """The workflow as lists show it: all of it, steps included."""
        return self.to_dict()

    def about(self) -> dict[str, int]:
        return {"workflow_id": self.id}


class Action(NamedTuple):
    id: int
    run_id: int
    step_id: int
    step_name: str
    action: str
    actor: str
    comment: str
    created_at: str
    # Its link in the run's audit chain (chalicelib/audit.py); None only where
    # the chain does not reach it yet (DynamoDB history from before the chain,
    # until scripts/backfill_audit_chain.py runs) or someone removed it.
    hash: Optional[str] = None

    @classmethod
    def recording(cls, action_id: int, run: "Run", decision: "Decision", hash: str) -> "Action":
        """The record of `decision` on `run`'s current step, with its id and chain hash."""
        step = run.current_step
        assert step is not None, "only a run in progress has a decision to record"
        return cls(
            action_id,
            run.id,
            step.id,
            step.name,
            decision.action,
            decision.actor,
            decision.comment,
            decision.at,
            hash,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "step_id": self.step_id,
            "step_name": self.step_name,
            "action": self.action,
            "actor": self.actor,
            "comment": self.comment,
            "created_at": self.created_at,
            "hash": self.hash,
        }


class Run(NamedTuple):
    id: int
    workflow_id: int
    title: str
    status: str
    current_step: Optional[Step]
    created_at: str
    updated_at: str
    actions: tuple[Action, ...] = ()
    requested_by: Optional[str] = None
    # The last action's hash, or the genesis hash while it has none
    # (chalicelib/audit.py); None as for Action.hash.
    head_hash: Optional[str] = None

    @property
    def current_step_id(self) -> Optional[int]:
        return self.current_step.id if self.current_step else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.listed(), "actions": [action.to_dict() for action in self.actions]}

    def about(self) -> dict[str, int]:
        return {"workflow_id": self.workflow_id, "run_id": self.id}

    def decided(self, decision: "Decision", action: Action, head_hash: str) -> "Run":
        """The run as `decision` leaves it, `action` (its record, whose hash is
        `head_hash`) last in its history."""
        return self._replace(
            status=decision.status,
            current_step=decision.next_step,
            updated_at=decision.at,
            actions=(*self.actions, action),
            head_hash=head_hash,
        )

    def listed(self) -> dict[str, Any]:
        """The run as lists show it: everything but its actions."""
        return {
            "id": self.id,
            "workflow_id": self.workflow_id,
            "title": self.title,
            "requested_by": self.requested_by,
            "status": self.status,
            "current_step_id": self.current_step_id,
            "current_step": self.current_step.to_dict() if self.current_step else None,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "head_hash": self.head_hash,
        }


class RunAudit(NamedTuple):
    """A run's audit chain, recomputed from what is stored (chalicelib/audit.py)."""

    run_id: int
    workflow_id: int
    genesis: dict[str, Any]
    head_hash: Optional[str]
    first_invalid_seq: Optional[int]
    entries: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "genesis": self.genesis,
            "head_hash": self.head_hash,
            "valid": self.first_invalid_seq is None,
            "first_invalid_seq": self.first_invalid_seq,
            "entries": list(self.entries),
        }

    def about(self) -> dict[str, int]:
        return {"workflow_id": self.workflow_id, "run_id": self.run_id}


class Decision(NamedTuple):
    """One approver's decision on a run's current step, and where it leads."""

    action: str
    actor: str
    comment: str
    status: str
    next_step: Optional[Step]
    at: str


Listed = TypeVar("Listed", Workflow, Run)


class Slice(NamedTuple, Generic[Listed]):
    """What the storage read for one page: its items, and whether any follow
    (after `position`, where that is not the last item's id: a storage may read
    entries it does not show)."""

    items: tuple[Listed, ...]
    more: bool
    position: Optional[int] = None


class Page(NamedTuple):
    """One page of a list, and the cursor of the next (None after the last)."""

    items: tuple[Union[Workflow, Run], ...]
    next_cursor: Optional[str]

    def to_dict(self) -> dict[str, Any]:
        return {"items": [item.listed() for item in self.items], "next_cursor": self.next_cursor}

    def about(self) -> dict[str, int]:
        return {}
