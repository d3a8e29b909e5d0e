"""The service's records: what the rules compute, the engine hands on and the
storage adapters store. Records and nothing else: how a change is computed is
chalicelib/domain/transitions.py, the records a write takes chalicelib/domain/
changes.py, how a record is shown chalicelib/api/representations.py.

Immutable records rather than frozen dataclasses: importing dataclasses (and
the inspect module it pulls in) and generating five frozen classes took 6.8 ms
of every cold start, more than a third of Chalice's own import. They are
declared as typing.NamedTuple classes, and made at run time by
chalicelib.domain.record, which makes a class in a tenth of typing's time (the same
fields, constructor, immutability, equality and `_replace`). Keep
dataclasses out of the import path of app.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar

from chalicelib.domain.errors import Conflict, Forbidden, WorkflowError
from chalicelib.domain.record import Record

if TYPE_CHECKING:
    # Named in annotations only: a read makes none of their classes (lifecycle.py).
    from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus

# Returns a run may have, unless its workflow says otherwise (0: none).
DEFAULT_MAX_RETURNS = 3

# Principals that a step's approvers list: a user, or every member of a group.
USER_PREFIX = "user:"
GROUP_PREFIX = "group:"
# Ids are 64-bit in SQLite and exact up to 2**53 in JSON numbers everywhere.
MAX_ID = 2**53 - 1

# The inbox key of a step that names no approvers: anyone may decide it.
ANYONE = "*"


class Deadline(Record):
    """How long a step may wait for its decision, and what happens after."""

    seconds: int
    action: OnDeadline
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
    # When it applies: a condition over the run's input (chalicelib/domain/
    # conditions.py); None: always. A run reaching it skips it otherwise.
    when: Optional[dict[str, Any]] = None
    # Who else is told when a run arrives at it (chalicelib/domain/
    # notifications.py): on a step open to anyone, the only ones told.
    notify: tuple[str, ...] = ()


class StepRule(Record):
    """A step as a workflow's definition gives it, before it is stored."""

    name: str
    approvers: tuple[str, ...] = ()
    required_approvals: int = 1
    deadline: Optional[Deadline] = None
    when: Optional[dict[str, Any]] = None
    notify: tuple[str, ...] = ()

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
            self.when,
            self.notify,
        )


class Policy(Record):
    """A workflow's separation-of-duties flags, which its runs decide under."""

    # The run's requester may approve or reject it.
    allow_self_approval: bool = False
    # Nobody may approve more than one step of a run.
    distinct_approvers: bool = False
    # A rejection must say why.
    reject_requires_comment: bool = False


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
    # The JSON Schema its runs' input must meet (None: any object).
    input_schema: Optional[dict[str, Any]] = None
    # How many times a run may be sent back for changes (0: never).
    max_returns: int = DEFAULT_MAX_RETURNS
    # Which of its versions this is (1, 2, ...): as a workflow is shown, its
    # newest; every version keeps its own steps, policy and schema.
    version: int = 1
    # Retired: no new run may start (its runs in progress go on).
    retired: bool = False
    # When this version was published (its first: when the workflow was defined).
    version_created_at: Optional[str] = None


class Action(Record):
    id: int
    run_id: int
    step_id: int
    step_name: str
    action: ActionKind
    actor: str
    comment: str
    created_at: str
    # Its link in the run's audit chain (chalicelib/domain/audit.py); None only
    # before it is chained, or where someone removed it from the store.
    hash: Optional[str] = None
    # Whom the actor decided for, through a delegation (None: for themselves).
    on_behalf_of: Optional[str] = None
    # The round of the run it was recorded in (a resubmit starts the next).
    round: int = 1
    # A resubmit that changed the input: the new input's digest (audit.input_digest).
    input_digest: Optional[str] = None
    # How the decision came: "api" (every API call, the page's included),
    # "email-link" or "slack" (lifecycle.CHANNELS).
    channel: str = "api"
    # A reassign: whom the step awaits from it on (None for every other action).
    approvers: Optional[tuple[str, ...]] = None
    # A move: the version of the workflow the run continues on (None otherwise).
    workflow_version: Optional[int] = None
    # An action that brings the run to a step (an approval meeting its step's
    # quorum, a resubmit): that step's digest as it stood then (audit.step_digest).
    next_step_digest: Optional[str] = None
    # A move: the digest of the version's definition moved to, of its first
    # `definition_steps` steps (audit.definition_digest).
    definition_digest: Optional[str] = None
    definition_steps: Optional[int] = None


class Run(Record):
    id: int
    workflow_id: int
    title: str
    status: RunStatus
    current_step: Optional[Step]
    created_at: str
    updated_at: str
    actions: tuple[Action, ...] = ()
    requested_by: Optional[str] = None
    # The last action's hash, or the genesis hash while it has none
    # (chalicelib/domain/audit.py); None only before the run is chained, or
    # where someone removed it from the store.
    head_hash: Optional[str] = None
    # Who approved the current step so far, in order (empty once the run ended).
    current_step_approved_by: tuple[str, ...] = ()
    # When the run reached its current step (None once it ended).
    current_step_since: Optional[str] = None
    # Its workflow's flags, which every decision on it is checked against.
    policy: Policy = DEFAULT_POLICY
    # Everyone who approved a step of it, once each, in order.
    approvers: tuple[str, ...] = ()
    # The storage's own mark of the run as it read it, for its conditional
    # write (DynamoDB: the sequence of the run's last event): passed on
    # untouched by the rules, which never read it.
    revision: object = None
    # When the current step's deadline passes (None: it has none, or the run
    # ended), and whether it has passed and its action (remind, escalate) was
    # applied: chalicelib/domain/deadlines.py.
    current_step_due_at: Optional[str] = None
    deadline_passed: bool = False
    # How many of its first actions were not read: `actions` are its last
    # ones (all of them, where its history was read; none, or those a change
    # recorded, where the storage read the run without it).
    unread_actions: int = 0
    # What is being approved: a JSON object given at the start (empty when none
    # was given), changed only by a resubmit that gives a new one; the audit
    # chain binds it (its genesis, and that resubmit's entry).
    input: dict[str, Any] = {}  # noqa: RUF012 (records are immutable: never changed in place)
    # Which round of approvals the run is in: 1, and one more per resubmit.
    round: int = 1
    # For each of current_step_approved_by, whom they approved for through a
    # delegation ("" where for themselves).
    current_step_on_behalf_of: tuple[str, ...] = ()
    # The digest its genesis holds, where a resubmit changed the input since
    # ("" for an empty first input); None: the digest of `input`.
    genesis_input_digest: Optional[str] = None
    # How many times it may be sent back for changes, by its workflow.
    max_returns: int = DEFAULT_MAX_RETURNS
    # The version of its workflow it runs on, for its whole life (its steps,
    # their rules and its policy are that version's): set at its start, changed
    # only by a move to a newer version.
    workflow_version: int = 1
    # The version it started on, where a move changed it since (None: it runs
    # on the version it started on); its genesis names it.
    genesis_version: Optional[int] = None
    # The digest of its version's definition as it stood at its start, and how
    # many steps that had (audit.definition_digest); its genesis binds both.
    # None: a run started before definitions were bound.
    definition_digest: Optional[str] = None
    definition_steps: Optional[int] = None

    @property
    def current_step_id(self) -> Optional[int]:
        return self.current_step.id if self.current_step else None

    @property
    def history_length(self) -> int:
        """How many actions the run's history holds, read or not."""
        return self.unread_actions + len(self.actions)

    @property
    def current_step_escalated_to(self) -> tuple[str, ...]:
        """Who may decide the current step besides its approvers: its escalate_to
        principals, once its deadline passed with on_deadline escalate."""
        deadline = self.current_step.deadline if self.current_step else None
        if not (self.deadline_passed and deadline):
            return ()
        from chalicelib.domain.lifecycle import OnDeadline  # a run past its deadline only

        return deadline.escalate_to if deadline.action == OnDeadline.ESCALATE else ()


class RunAudit(Record):
    """A run's audit chain, recomputed from what is stored (chalicelib/domain/audit.py)."""

    run_id: int
    workflow_id: int
    genesis: dict[str, Any]
    head_hash: Optional[str]
    first_invalid_seq: Optional[int]
    entries: tuple[dict[str, Any], ...]
    # The fields of the stored state the history does not lead to (replay.STATE_FIELDS).
    state_mismatches: tuple[str, ...] = ()
    # The run's input as stored, which the genesis's input_digest is of.
    input: dict[str, Any] = {}  # noqa: RUF012 (records are immutable)
    # The digests the chain binds that the stored definitions no longer give
    # (audit.definitions_unbound): where, which, of which version.
    digest_mismatches: tuple[dict[str, Any], ...] = ()


class Decision(Record):
    """One decision on a run's current step (an approval, a rejection, a
    cancellation), and where it leads: `next_step` is the step the run is at
    afterwards (the current one while its quorum is not met; None once the
    run ended), `approved_by` who approved that step by then."""

    action: ActionKind
    actor: str
    comment: str
    status: RunStatus
    next_step: Optional[Step]
    at: str
    approved_by: tuple[str, ...] = ()
    # Whom the actor decided for, through a delegation (None: themselves).
    on_behalf_of: Optional[str] = None
    # For each of approved_by, whom they approved for ("" where themselves).
    approved_for: tuple[str, ...] = ()
    # How it came (Action.channel).
    channel: str = "api"

    @property
    def stays(self) -> bool:
        """Whether the run stays at its step (an approval short of the quorum)."""
        return bool(self.approved_by)


class Delegation(Record):
    """A delegator's rights to decide, lent to a delegate (a user or a group)
    for a window of time, on every workflow or on one."""

    id: int
    delegator: str
    # "user:<name>" or "group:<name>".
    delegate: str
    workflow_id: Optional[int]
    starts_at: str
    ends_at: str
    reason: str
    created_at: str
    created_by: str
    revoked_at: Optional[str] = None
    revoked_by: Optional[str] = None

    def active_at(self, at: str) -> bool:
        """Whether it lends its rights at `at`: within its window, not revoked
        by then (the service's timestamps compare as text)."""
        revoked = self.revoked_at is not None and self.revoked_at <= at
        return not revoked and self.starts_at <= at < self.ends_at

    def covers(self, workflow_id: int) -> bool:
        return self.workflow_id is None or self.workflow_id == workflow_id


class Refusal(Record):
    """Why a caller may not make a decision now: a reason code (decision.REASONS), what
    it means in words, and whether it is about the run's state (a conflict)
    rather than about the caller (forbidden)."""

    code: str
    message: str
    conflict: bool = False

    def error(self) -> WorkflowError:
        """The domain error a decision route answers it with."""
        return (Conflict if self.conflict else Forbidden)(self.message)


class Permissions(Record):
    """What `actor` may do with a run now: a refusal, or None where they may,
    for each of lifecycle.CALLER_ACTIONS, in that order; and for whom (None: for
    themselves; a delegator where only a delegation lends the right)."""

    run_id: int
    workflow_id: int
    actor: str
    refusals: tuple[Optional[Refusal], ...]
    on_behalf_of: tuple[Optional[str], ...] = ()


class Event(Record):
    """One recorded event: its place in its subject's stream (`runs/<id>` or
    `workflows/<id>`, from 1, gap-free) and its CloudEvent exactly as delivered."""

    id: str
    subject: str
    sequence: int
    type: str
    body: str


# A CloudEvent's `sequence` (the Sequence extension) is a string that sorts as
# text in the order of the events: the number, zero-padded to SEQUENCE_DIGITS,
# enough for any number a 64-bit integer holds (SQLite's, and far beyond what
# a stream on DynamoDB could ever count to).
SEQUENCE_DIGITS = 20
SEQUENCE_END = 10**SEQUENCE_DIGITS


def sequence_text(sequence: int) -> str:
    """The `sequence` attribute of a subject's `sequence`th event: "00000000000000000001"."""
    if not 0 < sequence < SEQUENCE_END:
        raise ValueError(f"a sequence is from 1 to {SEQUENCE_DIGITS} digits, not {sequence}")
    return f"{sequence:0{SEQUENCE_DIGITS}d}"


class EventDraft(Record):
    """An event made but for its place in its subject's stream, which the storage
    allocates inside the write that records it: its CloudEvent's JSON text is
    written but for its `sequence`, between `head` and `tail`."""

    id: str
    subject: str
    type: str
    time: str
    head: str
    tail: str

    def numbered(self, sequence: int) -> Event:
        """The event as the `sequence`th of its subject: what is stored is what is delivered."""
        return Event(self.id, self.subject, sequence, self.type, self.body(sequence))

    def body(self, sequence: int) -> str:
        """The event's CloudEvent as the `sequence`th of its subject."""
        return f'{self.head}"{sequence_text(sequence)}"{self.tail}'


class Pending(Record):
    """An event not delivered yet, and how its delivery went so far."""

    event: Event
    attempts: int
    next_attempt_at: Optional[str]


class Awaiting(Record):
    """A run in a caller's inbox, and for whom they may decide it: themselves
    (None), or a delegator whose delegation lends them the right."""

    run: Run
    on_behalf_of: Optional[str] = None


class Contact(Record):
    """Where a principal is told that something waits for them or was decided
    (chalicelib/domain/notifications.py): an email address, a Slack id, or both."""

    # "user:<name>" or "group:<name>", as it was first written.
    principal: str
    email: Optional[str]
    # A user's Slack user id (U..., W...), a group's channel id (C...).
    slack: Optional[str]
    # None: no contact is set (who has none is told nothing).
    updated_at: Optional[str]
    updated_by: Optional[str] = None


Listed = TypeVar("Listed", Workflow, Run, Event, Awaiting, Delegation, Contact)


class Slice(Record, Generic[Listed]):
    """What the storage read for one page: its items, and whether any follow
    (after `position`, where that is not the last item's id: a storage may read
    entries it does not show)."""

    items: tuple[Listed, ...]
    more: bool
    # Where the next page starts, where that is not after the last item (the
    # inbox reads entries it may then leave out).
    resume: Any = None


class Page(Record, Generic[Listed]):
    """One page of a list, and the cursor of the next (None after the last)."""

    items: tuple[Listed, ...]
    next_cursor: Optional[str]
