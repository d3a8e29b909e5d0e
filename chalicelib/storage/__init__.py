"""The storage interface every backend implements, and the factory that picks one."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Protocol

from chalicelib.domain.models import (
    DEFAULT_POLICY,
    Decision,
    Event,
    Policy,
    Run,
    Slice,
    Step,
    StepRule,
    Workflow,
)
from chalicelib.storage import failures

# os.path, not pathlib: pathlib is not imported by Chalice, and importing it
# cost every cold start 1.2 ms.
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
DEFAULT_SQLITE_PATH = os.path.join(PROJECT_DIR, ".data", "workflows.sqlite3")


class Storage(Protocol):
    """Durable state of workflows and runs; every mutation is one atomic write."""

    def create_workflow(
        self,
        name: str,
        description: str,
        steps: Sequence[StepRule],
        now: str,
        policy: Policy = DEFAULT_POLICY,
    ) -> Workflow:
        """Store a workflow with its first steps and its policy flags; Conflict if
        the name is taken.

        Every write here records the events of its change in the same atomic
        write (chalicelib/domain/events.py), each the next of its subject's stream."""
        ...

    def get_workflow(self, workflow_id: int) -> Workflow:
        """The workflow with its steps in step_order; NotFound if absent."""
        ...

    def append_step(self, workflow_id: int, step: StepRule, now: str) -> Step:
        """Append a step at max(step_order) + 1, atomically; NotFound if absent."""
        ...

    def create_run(
        self, workflow: Workflow, title: str, now: str, requested_by: Optional[str] = None
    ) -> Run:
        """Store a new run in progress at the workflow's first step."""
        ...

    def get_run(self, run_id: int, history: bool = True) -> Run:
        """The run with its current step (and that step's rules), its workflow's
        policy and its actions, oldest first; NotFound if absent. Without
        `history`, its actions are not read, only counted (action_count): what
        a decision needs, whatever the length of the history."""
        ...

    def next_step(self, workflow_id: int, after_order: int) -> Optional[Step]:
        """The step that follows step_order `after_order`, or None after the last."""
        ...

    def record_decision(self, run: Run, decision: Decision) -> Run:
        """Record the decision and move the run (or keep it at its step, one more
        approval counted), only if its history is still as read: nothing
        recorded since. Otherwise raise StaleRun and write nothing."""
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
        self,
        actor: str,
        groups: frozenset[str],
        after: Optional[tuple[str, int]],
        limit: int,
    ) -> Slice[Run]:
        """At most `limit` runs in progress whose current step admits `actor` or one
        of `groups` (or anyone), after (current_step_since, id) `after` in that
        order; without actions. It may leave out runs that decision.awaits
        refuses, and may include some: the engine applies the rule."""
        ...

    def due_runs(self, now: str, limit: int) -> list[int]:
        """At most `limit` runs whose current step's deadline passed by `now` and
        is still to apply, soonest due first."""
        ...

    def record_deadline(self, run: Run, at: str) -> Run:
        """Mark the current step's deadline passed (its remind or escalate applied)
        with its event, only if the run is still as read and the deadline still
        to apply; otherwise raise StaleRun and write nothing."""
        ...

    def list_events(self, subject: str, after_sequence: Optional[int], limit: int) -> Slice[Event]:
        """At most `limit` events of `subject` after `after_sequence` (None: the
        first), oldest first."""
        ...


if TYPE_CHECKING:
    from chalicelib.delivery.dispatch import Outbox
    from chalicelib.domain.idempotency import KeyStore

    class Backend(Storage, KeyStore, Outbox, Protocol):
        """What each adapter is: the service's state, the Idempotency-Key store
        beside it (chalicelib/domain/idempotency.py) and the events' delivery state
        (chalicelib/delivery/dispatch.py), so that all share one database."""

else:
    # At run time only a name in annotations: the protocols it joins are not
    # imported until a request needs them (a cold start's GET does not).
    Backend = Storage


def create_storage() -> Backend:
    """The backend that the environment names (WORKFLOW_STORAGE, default sqlite)."""
    kind = os.environ.get("WORKFLOW_STORAGE", "sqlite").strip().lower()
    if kind == "sqlite":
        from chalicelib.storage.sqlite import adapter as sqlite

        path = os.environ.get("WORKFLOW_SQLITE_PATH") or DEFAULT_SQLITE_PATH
        return sqlite.SQLiteStorage(path)
    if kind == "dynamodb":
        from chalicelib.storage.dynamodb import adapter as dynamodb

        return dynamodb.DynamoDBStorage(dynamodb.create_client(), dynamodb.table_name())
    raise failures.unavailable(
        f"WORKFLOW_STORAGE is {kind!r}, which is no storage: set it to 'sqlite' (the default) "
        "or 'dynamodb'"
    )
