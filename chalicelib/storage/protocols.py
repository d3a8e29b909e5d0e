"""What every backend stores, as protocols: the type checker's view of an adapter.

A storage writes what the rules computed (chalicelib/domain/transitions.py)
and reads it back: each change is one atomic write, conditional only on the
state it was computed from (its optimistic guard) and on keys being free
(uniqueness). It stamps what it allocates, ids and event sequence numbers, and
decides nothing else: no rule of the domain is restated in SQL or in a
condition expression, and no module here imports one.

Nothing needs these classes at run time: chalicelib.storage names them for
annotations, and loads this module only where one is asked for by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Protocol

from chalicelib.domain.models import (
    Action,
    Contact,
    Delegation,
    Event,
    Pending,
    Run,
    Slice,
    Step,
    Workflow,
)


class Storage(Protocol):
    """Durable state of workflows and runs; every mutation is one atomic write
    that records the events of its change with it, each numbered the next of
    its subject's stream."""

    def create_workflow(self, definition: WorkflowDefinition) -> Workflow:
        """Store the workflow `definition` makes with the ids given to it and its
        steps; Conflict if its name is taken."""
        ...

    def get_workflow(self, workflow_id: int) -> Workflow:
        """The workflow with its steps in step_order; NotFound if absent."""
        ...

    def append_step(self, append: StepAppend) -> Step:
        """Store the step `append` makes at max(step_order) + 1, atomically;
        NotFound if its workflow is absent."""
        ...

    def steps_after(self, workflow_id: int, after_order: int, version: int = 1) -> tuple[Step, ...]:
        """The steps of the workflow's `version` that follow step_order
        `after_order`, in order (none after the last)."""
        ...

    def publish_version(self, publish: VersionPublish) -> Workflow:
        """Store the version `publish` makes, with its steps' ids, as its
        workflow's newest, only if the workflow is still at
        publish.read_version (else LostWrite); NotFound if it is absent."""
        ...

    def get_workflow_version(self, workflow_id: int, version: int) -> Workflow:
        """The workflow as it stands at `version` (its steps, policy, schema);
        NotFound if either is absent."""
        ...

    def get_version(self, workflow_id: int, version: int) -> Workflow:
        """The definition `version` of the workflow holds, what its runs decide
        under: as get_workflow_version, but for the workflow's flag, not read
        (`retired` False); NotFound if absent."""
        ...

    def list_versions(
        self, workflow_id: int, after_version: Optional[int], limit: int
    ) -> Slice[Workflow]:
        """At most `limit` versions of the workflow after `after_version`
        (None: the first), oldest first; NotFound if the workflow is absent."""
        ...

    def set_retired(self, retirement: Retirement) -> Workflow:
        """Store retirement.after's flag and its event, only if the workflow's
        flag is still as retirement.before was read (else LostWrite)."""
        ...

    def create_run(self, start: RunStart) -> Run:
        """Store the run `start` makes with the id given to it, at its workflow's
        first step, with its events and its inbox keys."""
        ...

    def get_run(self, run_id: int, history: bool = True) -> Run:
        """The run with its current step (and that step's rules), its workflow's
        policy and its actions, oldest first; NotFound if absent. Without
        `history`, its actions are not read, only counted (unread_actions):
        what a decision needs, whatever the length of the history."""
        ...

    def last_actions(self, run_id: int, count: int) -> tuple[Action, ...]:
        """The run's last `count` actions (fewer if it has fewer), in history
        order: what proves the approvals its current step holds."""
        ...

    def record_change(self, change: RunChange) -> Run:
        """Write `change` (its run after, its action, its events, its inbox keys)
        only if the run is still as change.before was read: the same history
        and deadline state, and, for a completion, no step after the one it
        found last. Otherwise raise LostWrite and write nothing."""
        ...

    def list_workflows(self, after_id: Optional[int], limit: int) -> Slice[Workflow]:
        """At most `limit` workflows after id `after_id` (None: the first), by id, with steps."""
        ...

    def list_runs(
        self,
        workflow_id: Optional[int],
        status: Optional[str],
        before_id: Optional[int],
        limit: int,
    ) -> Slice[Run]:
        """At most `limit` runs before id `before_id` (None: the newest), newest first, of
        that workflow and status where given; without actions."""
        ...

    def inbox(
        self, keys: Sequence[str], after: Optional[tuple[str, int]], limit: int
    ) -> Slice[Run]:
        """At most `limit` runs, without actions, whose current step holds them in
        the inbox of one of `keys` (chalicelib/domain/decision.py), each once,
        after (current_step_since, id) `after` in that order. Who among those
        keys may decide them is the engine's to say, not the storage's."""
        ...

    def runs_started_between(
        self, workflow_id: int, start: str, end: str, max_runs: int, max_actions: int
    ) -> Slice[Run]:
        """The workflow's runs whose created_at is from `start` (inclusive) to
        `end` (exclusive), by (created_at, id), each with its whole history: the
        first that `max_runs` runs and `max_actions` actions in all hold, and
        whether the window holds more (`more`)."""
        ...

    def due_runs(self, now: str, limit: int) -> list[int]:
        """At most `limit` runs whose current step's deadline passed by `now` and
        is still to apply, soonest due first."""
        ...

    def list_events(self, subject: str, after_sequence: Optional[int], limit: int) -> Slice[Event]:
        """At most `limit` events of `subject` after `after_sequence` (None: the
        first), oldest first."""
        ...

    # -- delegations ----------------------------------------------------------

    def create_delegation(self, grant: DelegationGrant) -> Delegation:
        """Store the delegation `grant` makes with the id given to it, and its event."""
        ...

    def get_delegation(self, delegation_id: int) -> Delegation:
        """The delegation, revoked or ended ones too; NotFound if absent."""
        ...

    def revoke_delegation(self, revocation: DelegationRevocation) -> Delegation:
        """Store `revocation.after` and its event, only if the delegation is still
        as `revocation.before` was read; Conflict if it was revoked meanwhile."""
        ...

    def delegations_to(self, delegates: Sequence[str], now: str) -> tuple[Delegation, ...]:
        """The delegations to any of `delegates` (canonical principals, as
        names.canonical_principal gives them) that are not revoked and end
        after `now`, by id."""
        ...

    def list_delegations(
        self,
        delegator: Optional[str],
        delegate: Optional[str],
        active_at: Optional[str],
        after_id: Optional[int],
        limit: int,
    ) -> Slice[Delegation]:
        """At most `limit` delegations after id `after_id`, by id ascending: of
        `delegator` (a canonical name), to `delegate` (a canonical principal),
        active at `active_at` (neither revoked then nor outside their window),
        where given."""
        ...


class Outbox(Protocol):
    """The delivery state the storage keeps beside each recorded event
    (chalicelib/delivery/dispatch.py sends them)."""

    def pending_subjects(self, now: str, limit: int) -> list[str]:
        """Subjects with an event not delivered yet that is due at `now` (or
        waits behind one that is); at most `limit`, each once."""
        ...

    def pending_batch(self, subject: str) -> list[Pending]:
        """The subject's first event not delivered yet and the events after it
        that one `mark_delivered` records with it (on DynamoDB the rest of the
        action item that carries it; on SQLite none), in order; empty if none
        is pending."""
        ...

    def mark_delivered(self, pending: Pending, now: str, count: int = 1) -> None:
        """Record that the event was delivered, and the `count - 1` after it of
        the batch it heads (again: harmless)."""
        ...

    def mark_failed(self, pending: Pending, next_attempt_at: str) -> None:
        """Record one more failed attempt, and when to try again."""
        ...


class Notices(Protocol):
    """What telling people takes (chalicelib/delivery/notifier.py): their
    contacts, a marker per notification sent, and the one-time action links
    (stored by their token's SHA-256 only)."""

    def put_contact(self, contact: Contact) -> Contact:
        """Store `contact`, replacing the one of the same principal (by its key)."""
        ...

    def get_contact(self, principal_key: str) -> Contact:
        """The contact of the principal with that canonical key; NotFound if none."""
        ...

    def delete_contact(self, principal_key: str) -> Contact:
        """Remove the contact and answer it as it was; NotFound if none."""
        ...

    def list_contacts(self, after_key: Optional[str], limit: int) -> Slice[Contact]:
        """At most `limit` contacts after key `after_key` (None: the first), by key."""
        ...

    def contacts_of(self, principal_keys: Sequence[str]) -> tuple[Contact, ...]:
        """The contacts of those keys that have one, in the keys' order."""
        ...

    def claim_notice(self, once_key: str, claim: str) -> bool:
        """Put the "sent" marker of `once_key`, holding the caller's unique
        `claim`, if no marker is there; whether this call put it (only then
        may the caller send)."""
        ...

    def release_notice(self, once_key: str, claim: str) -> None:
        """Remove the marker, if it still holds `claim` (its send failed:
        another attempt may claim it again)."""
        ...

    def put_links(self, links: Sequence[ActionLink]) -> None:
        """Store new action links (keyed by their digest)."""
        ...

    def get_link(self, digest: str) -> Optional[ActionLink]:
        """The link whose token hashes to `digest`, if any."""
        ...

    def use_link(self, link: ActionLink, at: str) -> bool:
        """Mark `link` used at `at`, only if neither it nor another link of its
        person for its run, round and step was used; whether it was."""
        ...

    def unuse_link(self, link: ActionLink) -> None:
        """Undo use_link (the decision it was used for was refused)."""
        ...

    def contact_of_slack_user(self, slack_id: str) -> Optional[Contact]:
        """The user's contact whose Slack id is `slack_id`, if any (the first by key)."""
        ...

    def put_slack_post(self, post: SlackPost) -> None:
        """Remember a Slack message posted about a run's step (to update it later)."""
        ...

    def slack_posts(self, run_id: int, round_: int, step_id: int) -> tuple[SlackPost, ...]:
        """The Slack messages posted about that step of that round of the run."""
        ...


if TYPE_CHECKING:
    from chalicelib.domain.changes import (
        DelegationGrant,
        DelegationRevocation,
        Retirement,
        RunChange,
        RunStart,
        StepAppend,
        VersionPublish,
        WorkflowDefinition,
    )
    from chalicelib.domain.idempotency import KeyStore
    from chalicelib.domain.links import ActionLink
    from chalicelib.domain.notifications import SlackPost

    class Backend(Storage, KeyStore, Outbox, Notices, Protocol):
        """What each adapter is: the service's state, the Idempotency-Key store
        beside it (chalicelib/domain/idempotency.py) and the events' delivery
        state, so that all share one database."""

else:
    # At run time a name for annotations only: the protocols it joins are not
    # imported for it.
    Backend = Storage
