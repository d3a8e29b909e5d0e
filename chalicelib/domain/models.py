"""The service's records, as the engine and the storage adapters exchange them.

Immutable records rather than frozen dataclasses: importing dataclasses (and
the inspect module it pulls in) and generating five frozen classes took 6.8 ms
of every cold start, more than a third of Chalice's own import. They are
declared as typing.NamedTuple classes, and made at run time by
chalicelib.domain.record, which makes a class in a tenth of typing's time (the same
fields, constructor, immutability, equality and `_replace`). Keep
dataclasses out of the import path of app.py.
"""

from __future__ import annotations

from typing import Any, Generic, Optional, TypeVar, Union

from chalicelib.domain.record import Record

IN_PROGRESS = "in_progress"
COMPLETED = "completed"
REJECTED = "rejected"
CANCELLED = "cancelled"
# The spec's schema also allows "pending", which no run ever has.
RUN_STATUSES = (IN_PROGRESS, COMPLETED, REJECTED, CANCELLED)

APPROVE = "approve"
REJECT = "reject"
CANCEL = "cancel"

REMIND = "remind"
ESCALATE = "escalate"
# on_deadline: what the sweeper does once a step's deadline has passed (REJECT too).
DEADLINE_ACTIONS = (REMIND, ESCALATE, REJECT)

# Principals that a step's approvers list: a user, or every member of a group.
USER_PREFIX = "user:"
GROUP_PREFIX = "group:"


class Deadline(Record):
    """How long a step may wait for its decision, and what happens after."""

    seconds: int
    action: str  # one of DEADLINE_ACTIONS
    # ESCALATE: the principals ("user:<id>", "group:<name>") who may decide too.
    escalate_to: tuple[str, ...] = ()


class Step(Record):
    id: int
    workflow_id: int
    name: str
    step_order: int
    # Who may decide it ("user:<id>", "group:<name>"); empty: anyone.
    approvers: tuple[str, ...] = ()
    # Distinct approvals that complete it.
    required_approvals: int = 1
    deadline: Optional[Deadline] = None

    def to_dict(self) -> dict[str, Any]:
        deadline = self.deadline
        return {
            "id": self.id,
            "workflow_id": self.workflow_id,
            "name": self.name,
            "step_order": self.step_order,
            "approvers": list(self.approvers),
            "required_approvals": self.required_approvals,
            "deadline_seconds": deadline.seconds if deadline else None,
            "on_deadline": deadline.action if deadline else None,
            "escalate_to": list(deadline.escalate_to) if deadline else [],
        }

    def admits(
        self, actor: str, groups: frozenset[str], escalated_to: tuple[str, ...] = ()
    ) -> bool:
        """Whether `actor`, a member of `groups`, may decide this step (its
        approvers, and those it was escalated to once its deadline passed)."""
        if not self.approvers:
            return True
        principals = (*self.approvers, *escalated_to)
        return USER_PREFIX + actor in principals or any(
            GROUP_PREFIX + group in principals for group in groups
        )

    def about(self) -> dict[str, int]:
        """The ids of what this record is about, for the access log."""
        return {"workflow_id": self.workflow_id}


class StepRule(Record):
    """A step as a workflow's definition gives it, before it is stored."""

    name: str
    approvers: tuple[str, ...] = ()
    required_approvals: int = 1
    deadline: Optional[Deadline] = None

    def stored(self, step_id: int, workflow_id: int, order: int) -> Step:
        """The step this definition is, once stored with its id and order."""
        return Step(
            step_id,
            workflow_id,
            self.name,
            order,
            self.approvers,
            self.required_approvals,
            self.deadline,
        )


class Policy(Record):
    """A workflow's separation-of-duties flags, which its runs decide under."""

    # The run's requester may approve or reject it.
    allow_self_approval: bool = False
    # Nobody may approve more than one step of a run.
    distinct_approvers: bool = False
    # A rejection must say why.
    reject_requires_comment: bool = False

    def to_dict(self) -> dict[str, bool]:
        return self._asdict()


# The flags of a workflow that sets none: the strictest separation of duties
# but for distinct approvers and reasons for rejections, which are opt-in.
DEFAULT_POLICY = Policy()


class Workflow(Record):
    id: int
    name: str
    description: str
    created_at: str
    steps: tuple[Step, ...] = ()
    policy: Policy = DEFAULT_POLICY

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "created_at": self.created_at,
            **self.policy.to_dict(),
            "steps": [step.to_dict() for step in self.steps],
        }

    def listed(self) -> dict[str, Any]:
        """The workflow as lists show it: all of it, steps included."""
        return self.to_dict()

    def about(self) -> dict[str, int]:
        return {"workflow_id": self.id}


class Action(Record):
    id: int
    run_id: int
    step_id: int
    step_name: str
    action: str
    actor: str
    comment: str
    created_at: str
    # Its link in the run's audit chain (chalicelib/domain/audit.py); None only where
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


class Run(Record):
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
    # (chalicelib/domain/audit.py); None as for Action.hash.
    head_hash: Optional[str] = None
    # Who approved the current step so far, in order (empty once the run ended).
    current_step_approved_by: tuple[str, ...] = ()
    # When the run reached its current step (None once it ended).
    current_step_since: Optional[str] = None
    # Its workflow's flags, which every decision on it is checked against.
    policy: Policy = DEFAULT_POLICY
    # Everyone who approved a step of it, once each, in order.
    approvers: tuple[str, ...] = ()
    # The sequence of the run's last event (chalicelib/domain/events.py), where the
    # storage keeps it with the run (DynamoDB); 0 where it counts otherwise.
    event_seq: int = 0
    # When the current step's deadline passes (None: it has none, or the run
    # ended), and whether it has passed and its action (remind, escalate) was
    # applied: chalicelib/domain/deadlines.py.
    current_step_due_at: Optional[str] = None
    deadline_passed: bool = False
    # How many actions its history holds, where the storage read the run
    # without them (a decision whose answer leaves them out); None: count
    # `actions`.
    action_count: Optional[int] = None

    @classmethod
    def started(
        cls, run_id: int, workflow: Workflow, title: str, now: str, requested_by: Optional[str]
    ) -> Run:
        """A new run of `workflow`, at its first step since `now`, under its policy."""
        return cls(
            run_id,
            workflow.id,
            title,
            IN_PROGRESS,
            workflow.steps[0],
            now,
            now,
            (),
            requested_by,
            current_step_since=now,
            policy=workflow.policy,
            current_step_due_at=step_due_at(workflow.steps[0], now),
        )

    @property
    def current_step_id(self) -> Optional[int]:
        return self.current_step.id if self.current_step else None

    @property
    def history_length(self) -> int:
        """How many actions the run's history holds, read or not."""
        return len(self.actions) if self.action_count is None else self.action_count

    @property
    def current_step_escalated_to(self) -> tuple[str, ...]:
        """Who may decide the current step besides its approvers: its escalate_to
        principals, once its deadline passed with on_deadline escalate."""
        deadline = self.current_step.deadline if self.current_step else None
        if self.deadline_passed and deadline and deadline.action == ESCALATE:
            return deadline.escalate_to
        return ()

    def approved_another_step(self, actor: str) -> bool:
        """Whether `actor` approved a step of this run other than the current one
        (one visit per step: approving the current one twice is refused anyway)."""
        return actor in self.approvers and actor not in self.current_step_approved_by

    def to_dict(self) -> dict[str, Any]:
        return {**self.listed(), "actions": [action.to_dict() for action in self.actions]}

    def about(self) -> dict[str, int]:
        return {"workflow_id": self.workflow_id, "run_id": self.id}

    def decided(self, decision: Decision, action: Action, head_hash: str) -> Run:
        """The run as `decision` leaves it, `action` (its record, whose hash is
        `head_hash`) last in its history."""
        return self._replace(
            status=decision.status,
            current_step=decision.next_step,
            updated_at=decision.at,
            # A history that was not read stays unread: only counted.
            actions=(*self.actions, action) if self.action_count is None else (),
            action_count=None if self.action_count is None else self.action_count + 1,
            head_hash=head_hash,
            current_step_approved_by=decision.approved_by,
            current_step_since=(
                None
                if decision.next_step is None
                else (self.current_step_since if decision.stays else decision.at)
            ),
            approvers=(
                (*self.approvers, decision.actor)
                if decision.action == APPROVE and decision.actor not in self.approvers
                else self.approvers
            ),
            current_step_due_at=(
                self.current_step_due_at
                if decision.stays
                else step_due_at(decision.next_step, decision.at)
            ),
            deadline_passed=self.deadline_passed and decision.stays,
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
            "current_step_approved_by": list(self.current_step_approved_by),
            "current_step_since": self.current_step_since,
            "current_step_due_at": self.current_step_due_at,
            "current_step_escalated_to": list(self.current_step_escalated_to),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "head_hash": self.head_hash,
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


class RunAudit(Record):
    """A run's audit chain, recomputed from what is stored (chalicelib/domain/audit.py)."""

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


class Decision(Record):
    """One decision on a run's current step (an approval, a rejection, a
    cancellation), and where it leads: `next_step` is the step the run is at
    afterwards (the current one while its quorum is not met; None once the
    run ended), `approved_by` who approved that step by then."""

    action: str
    actor: str
    comment: str
    status: str
    next_step: Optional[Step]
    at: str
    approved_by: tuple[str, ...] = ()

    @property
    def stays(self) -> bool:
        """Whether the run stays at its step (an approval short of the quorum)."""
        return bool(self.approved_by)


class Event(Record):
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


class Slice(Record, Generic[Listed]):
    """What the storage read for one page: its items, and whether any follow
    (after `position`, where that is not the last item's id: a storage may read
    entries it does not show)."""

    items: tuple[Listed, ...]
    more: bool
    # Where the next page starts, where that is not after the last item (the
    # inbox reads entries it may then leave out).
    resume: Any = None


class Page(Record):
    """One page of a list, and the cursor of the next (None after the last)."""

    items: tuple[Union[Workflow, Run, Event], ...]
    next_cursor: Optional[str]

    def to_dict(self) -> dict[str, Any]:
        return {"items": [item.listed() for item in self.items], "next_cursor": self.next_cursor}

    def about(self) -> dict[str, int]:
        return {}
