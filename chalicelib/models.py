"""The service's records, as the engine and the storage adapters exchange them.

Immutable named tuples rather than frozen dataclasses: importing dataclasses
(and the inspect module it pulls in) and generating five frozen classes took
6.8 ms of every cold start, more than a third of Chalice's own import; these
take 0.7 ms. Keep dataclasses out of the import path of app.py.
"""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, Optional, TypeVar, Union

IN_PROGRESS = "in_progress"
COMPLETED = "completed"
REJECTED = "rejected"
# The spec's schema also allows "pending", which no run ever has.
RUN_STATUSES = (IN_PROGRESS, COMPLETED, REJECTED)

APPROVE = "approve"
REJECT = "reject"


REMIND = "remind"
ESCALATE = "escalate"
# on_deadline: what the sweeper does once a step's deadline has passed (REJECT too).
DEADLINE_ACTIONS = (REMIND, ESCALATE, REJECT)


class Deadline(NamedTuple):
    """How long a step may wait for its decision, and what happens after."""

    seconds: int
    action: str  # one of DEADLINE_ACTIONS
    # ESCALATE: the principals ("user:<id>", "group:<name>") who may decide too.
    escalate_to: tuple[str, ...] = ()


class Step(NamedTuple):
    id: int
    workflow_id: int
    name: str
    step_order: int
    deadline: Optional[Deadline] = None

    def to_dict(self) -> dict[str, Any]:
        deadline = self.deadline
        return {
            "id": self.id,
            "workflow_id": self.workflow_id,
            "name": self.name,
            "step_order": self.step_order,
            "deadline_seconds": deadline.seconds if deadline else None,
            "on_deadline": deadline.action if deadline else None,
            "escalate_to": list(deadline.escalate_to) if deadline else [],
        }

    def about(self) -> dict[str, int]:
        """The ids of what this record is about, for the access log."""
        return {"workflow_id": self.workflow_id}


class NewStep(NamedTuple):
    """A step to define: its name, and its deadline if it has one."""

    name: str
    deadline: Optional[Deadline] = None


def new_step(spec: Union[str, NewStep]) -> NewStep:
    """A step's definition from its name alone, or as given."""
    return NewStep(spec) if isinstance(spec, str) else spec


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
    def recording(cls, action_id: int, run: Run, decision: Decision, hash: str) -> Action:
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
    # The sequence of the run's last event (chalicelib/events.py), where the
    # storage keeps it with the run (DynamoDB); 0 where it counts otherwise.
    event_seq: int = 0
    # When the current step's deadline passes (None: it has none, or the run
    # ended), and whether it has passed and its action (remind, escalate) was
    # applied: chalicelib/deadlines.py.
    current_step_due_at: Optional[str] = None
    deadline_passed: bool = False

    @property
    def current_step_escalated_to(self) -> tuple[str, ...]:
        """Who may decide the current step besides its approvers: its escalate_to
        principals, once its deadline passed with on_deadline escalate."""
        deadline = self.current_step.deadline if self.current_step else None
        if self.deadline_passed and deadline and deadline.action == ESCALATE:
            return deadline.escalate_to
        return ()

    @property
    def current_step_id(self) -> Optional[int]:
        return self.current_step.id if self.current_step else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.listed(), "actions": [action.to_dict() for action in self.actions]}

    def about(self) -> dict[str, int]:
        return {"workflow_id": self.workflow_id, "run_id": self.id}

    def decided(self, decision: Decision, action: Action, head_hash: str) -> Run:
        """The run as `decision` leaves it, `action` (its record, whose hash is
        `head_hash`) last in its history."""
        moved = decision.next_step != self.current_step
        return self._replace(
            status=decision.status,
            current_step=decision.next_step,
            updated_at=decision.at,
            actions=(*self.actions, action),
            head_hash=head_hash,
            current_step_due_at=(
                step_due_at(decision.next_step, decision.at) if moved else self.current_step_due_at
            ),
            deadline_passed=self.deadline_passed and not moved,
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
            "current_step_due_at": self.current_step_due_at,
            "current_step_escalated_to": list(self.current_step_escalated_to),
        }


def step_due_at(step: Optional[Step], since: str) -> Optional[str]:
    """When `step`'s deadline passes if a run reaches it at `since` (ISO 8601
    UTC); None when it has no deadline."""
    if step is None or step.deadline is None:
        return None
    from datetime import datetime, timedelta  # only runs of steps with deadlines

    start = datetime.fromisoformat(since.replace("Z", "+00:00"))
    due = start + timedelta(seconds=step.deadline.seconds)
    return due.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


class Event(NamedTuple):
    """One recorded event: its place in its subject's stream (`runs/<id>` or
    `workflows/<id>`, from 1, gap-free) and its CloudEvent exactly as delivered."""

    id: str
    subject: str
    sequence: int
    type: str
    body: str

    def listed(self) -> dict[str, Any]:
        import json

        envelope: dict[str, Any] = json.loads(self.body)
        return envelope


Listed = TypeVar("Listed", Workflow, Run, Event)


class Slice(NamedTuple, Generic[Listed]):
    """What the storage read for one page: its items, and whether any follow."""

    items: tuple[Listed, ...]
    more: bool


class Page(NamedTuple):
    """One page of a list, and the cursor of the next (None after the last)."""

    items: tuple[Union[Workflow, Run, Event], ...]
    next_cursor: Optional[str]

    def to_dict(self) -> dict[str, Any]:
        return {"items": [item.listed() for item in self.items], "next_cursor": self.next_cursor}

    def about(self) -> dict[str, int]:
        return {}
