"""SQLite storage: the spec's schema (migrations.py), one connection per thread, WAL.

Every change is one write transaction, taken with BEGIN IMMEDIATE: its write
lock makes the store's allocations (ids, event sequence numbers, a step's
order) and its writes one step. A run's change is conditional on the run as it
was read (its history's head and its deadline's state) and nothing else: the
rules that computed it (chalicelib/domain/) are not restated here.

The inboxes are rows of run_inbox, one per key the rules name for a waiting
run, written and deleted by the change that moves the run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Action, Event, Run, Slice, Step, Upgrades, Workflow
from chalicelib.storage.sqlite import rows
from chalicelib.storage.sqlite.connections import next_id
from chalicelib.storage.sqlite.delegations import Delegations
from chalicelib.storage.sqlite.idempotency import IdempotencyKeys
from chalicelib.storage.sqlite.outbox import OutboxState, record_events

if TYPE_CHECKING:
    from chalicelib.domain.changes import RunChange, RunStart, StepAppend, WorkflowDefinition

# Workflows whose steps a storage keeps in memory (steps are only appended, so
# what it knows stays true); past this many it forgets the oldest.
KNOWN_WORKFLOWS = 1024


class SQLiteStorage(OutboxState, IdempotencyKeys, Delegations):
    """Storage in one SQLite file (connections.py): the service's state (here),
    its Idempotency-Keys (idempotency.py), its events' delivery (outbox.py) and
    the delegations (delegations.py)."""

    def __init__(self, path: str, upgrades: Optional[Upgrades] = None) -> None:
        super().__init__(path, upgrades)
        # workflow id -> its steps, as last read or written, for steps_after: a
        # decision then reads its run and nothing else, as on DynamoDB. Steps
        # are only ever appended, so every step known is right, and a step
        # after the last one known is checked for by the write that completes
        # a run (it fails, the steps are forgotten and read again on the retry).
        self._known_steps: dict[int, tuple[Step, ...]] = {}

    # -- workflows -------------------------------------------------------

    def create_workflow(self, definition: WorkflowDefinition) -> Workflow:
        with self._write() as conn:
            first_step = next_id(conn, "workflow_steps")
            step_ids = tuple(range(first_step, first_step + definition.steps))
            defined = definition.made(next_id(conn, "workflows"), step_ids)
            workflow = defined.workflow
            try:
                conn.execute(
                    "INSERT INTO workflows (id, name, description, created_at, "
                    "allow_self_approval, distinct_approvers, reject_requires_comment, "
                    "input_schema, max_returns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        workflow.id,
                        workflow.name,
                        workflow.description,
                        workflow.created_at,
                        *workflow.policy,
                        rows.document(workflow.input_schema),
                        workflow.max_returns,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise errors.Conflict(f"A workflow named {workflow.name!r} already exists") from exc
            for step in workflow.steps:
                _insert_step(conn, step)
            record_events(conn, defined.events)
        return self._remember(workflow)

    def get_workflow(self, workflow_id: int) -> Workflow:
        conn = self._connection()
        row = conn.execute(
            f"SELECT {rows.WORKFLOW_COLUMNS} FROM workflows w WHERE id = ?", (workflow_id,)
        ).fetchone()
        if row is None:
            raise errors.workflow_not_found(workflow_id)
        steps = conn.execute(
            f"SELECT {rows.STEP_COLUMNS} FROM workflow_steps WHERE workflow_id = ? "
            "ORDER BY step_order",
            (workflow_id,),
        ).fetchall()
        return self._remember(rows.workflow(row, tuple(rows.step(step) for step in steps)))

    def list_workflows(self, after_id: Optional[int], limit: int) -> Slice[Workflow]:
        conn = self._connection()
        read = conn.execute(
            f"SELECT {rows.WORKFLOW_COLUMNS} FROM workflows w WHERE id > ? ORDER BY id LIMIT ?",
            (after_id or 0, limit + 1),
        ).fetchall()
        page = read[:limit]
        # The steps of the whole page in one statement, not one per workflow.
        # Steps are only ever appended, so reading them second shows each
        # workflow as it was at one moment after the first statement.
        steps: dict[int, list[Step]] = {row[0]: [] for row in page}
        if page:
            for step in conn.execute(
                f"SELECT {rows.STEP_COLUMNS} FROM workflow_steps WHERE workflow_id IN "
                f"({', '.join('?' * len(page))}) ORDER BY workflow_id, step_order",
                list(steps),
            ):
                steps[step[1]].append(rows.step(step))
        workflows = tuple(rows.workflow(row, tuple(steps[row[0]])) for row in page)
        return Slice(workflows, len(read) > limit)

    def append_step(self, append: StepAppend) -> Step:
        # The write lock taken by BEGIN IMMEDIATE makes max()+1 and the insert
        # one step: no other writer can slip in between.
        workflow_id = append.workflow_id
        with self._write() as conn:
            if (
                conn.execute("SELECT 1 FROM workflows WHERE id = ?", (workflow_id,)).fetchone()
                is None
            ):
                raise errors.workflow_not_found(workflow_id)
            (max_order,) = conn.execute(
                "SELECT COALESCE(MAX(step_order), 0) FROM workflow_steps WHERE workflow_id = ?",
                (workflow_id,),
            ).fetchone()
            appended = append.made(next_id(conn, "workflow_steps"), max_order + 1)
            _insert_step(conn, appended.step)
            record_events(conn, appended.events)
        step = appended.step
        known = self._known_steps.get(workflow_id)
        if known is not None:
            if len(known) == step.step_order - 1:
                self._known_steps[workflow_id] = (*known, step)
            else:  # another process appended meanwhile: read them again when needed
                self._known_steps.pop(workflow_id, None)
        return step

    def steps_after(self, workflow_id: int, after_order: int) -> tuple[Step, ...]:
        """From the steps this storage knows of the workflow (read once): those
        known after `after_order`; a step appended after the last one known is
        checked for by the write that completes a run (record_change)."""
        steps = self._known_steps.get(workflow_id)
        if steps is None:
            found = (
                self._connection()
                .execute(
                    f"SELECT {rows.STEP_COLUMNS} FROM workflow_steps "
                    "WHERE workflow_id = ? ORDER BY step_order ASC",
                    (workflow_id,),
                )
                .fetchall()
            )
            steps = tuple(rows.step(row) for row in found)
            if steps:
                self._remember_steps(workflow_id, steps)
        return tuple(step for step in steps if step.step_order > after_order)

    def _remember(self, workflow: Workflow) -> Workflow:
        """Keep the steps of `workflow`, as just read or written, for steps_after."""
        if workflow.steps:
            self._remember_steps(workflow.id, workflow.steps)
        return workflow

    def _remember_steps(self, workflow_id: int, steps: tuple[Step, ...]) -> None:
        known = self._known_steps
        if workflow_id not in known and len(known) >= KNOWN_WORKFLOWS:
            known.pop(next(iter(known)), None)
        known[workflow_id] = steps

    # -- runs ------------------------------------------------------------

    def create_run(self, start: RunStart) -> Run:
        with self._write() as conn:
            started = start.made(next_id(conn, "workflow_runs"))
            run = started.run
            conn.execute(
                "INSERT INTO workflow_runs (id, workflow_id, title, status, current_step_id, "
                "created_at, updated_at, requested_by, current_step_since, "
                "current_step_due_at, head_hash, input) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    run.workflow_id,
                    run.title,
                    run.status,
                    run.current_step_id,
                    run.created_at,
                    run.updated_at,
                    run.requested_by,
                    run.current_step_since,
                    run.current_step_due_at,
                    run.head_hash,
                    rows.document(run.input),
                ),
            )
            action_ids = _insert_actions(conn, started.actions)
            _enter_inboxes(conn, run, started.enters)
            record_events(conn, started.events, new_subject=True)
        return started.recorded(action_ids)

    def get_run(self, run_id: int, history: bool = True) -> Run:
        if not history:
            # The run and how many actions it has, one snapshot: the count walks
            # the run's entries of the actions' run_id index, no action row.
            row = (
                self._connection()
                .execute(
                    f"SELECT {rows.RUN_COLUMNS}, (SELECT count(*) FROM workflow_actions "
                    f"WHERE run_id = r.id) FROM {rows.RUN_FROM} WHERE r.id = ?",
                    (run_id,),
                )
                .fetchone()
            )
            if row is None:
                raise errors.run_not_found(run_id)
            return rows.listed_run(row)._replace(action_count=row[rows.ACTIONS_FROM])
        # One statement, so the run and its history are one snapshot without a
        # read transaction around two queries: a row per action (one if none),
        # each repeating the run's columns. Foreign keys guarantee every
        # action's step, so joining it LEFT drops nothing the inner join kept.
        read = (
            self._connection()
            .execute(
                f"SELECT {rows.RUN_COLUMNS}, {rows.ACTION_COLUMNS} FROM {rows.RUN_FROM} "
                "LEFT JOIN workflow_actions wa ON wa.run_id = r.id "
                "LEFT JOIN workflow_steps ws ON ws.id = wa.step_id "
                "WHERE r.id = ? ORDER BY wa.id ASC",
                (run_id,),
            )
            .fetchall()
        )
        if not read:
            raise errors.run_not_found(run_id)
        actions = (
            tuple(Action(*row[rows.ACTIONS_FROM :]) for row in read)
            if read[0][rows.ACTIONS_FROM] is not None
            else ()
        )
        return rows.listed_run(read[0])._replace(actions=actions)

    def last_actions(self, run_id: int, count: int) -> tuple[Action, ...]:
        found = (
            self._connection()
            .execute(
                f"SELECT {rows.ACTION_COLUMNS} FROM workflow_actions wa "
                "JOIN workflow_steps ws ON ws.id = wa.step_id "
                "WHERE wa.run_id = ? ORDER BY wa.id DESC LIMIT ?",
                (run_id, count),
            )
            .fetchall()
        )
        return tuple(Action(*row) for row in reversed(found))

    def list_runs(
        self,
        workflow_id: Optional[int],
        status: Optional[str],
        before_id: Optional[int],
        limit: int,
    ) -> Slice[Run]:
        # Keyset pagination: with the id bound and LIMIT, a page is one walk of
        # at most limit + 1 entries of an index however deep it lies in the list.
        bounds = {"r.id < ?": before_id, "r.workflow_id = ?": workflow_id, "r.status = ?": status}
        given = {condition: value for condition, value in bounds.items() if value is not None}
        where = f"WHERE {' AND '.join(given)} " if given else ""
        return self._runs(f"{where}ORDER BY r.id DESC", tuple(given.values()), limit)

    def inbox(
        self, keys: Sequence[str], after: Optional[tuple[str, int]], limit: int
    ) -> Slice[Run]:
        # Each key's inbox walked from `after` on in (since, run id) order, at
        # most limit + 1 entries each, merged, each run once.
        walk = (
            "SELECT * FROM (SELECT since, run_id FROM run_inbox WHERE principal = ? "
            + ("AND (since, run_id) > (?, ?) " if after else "")
            + "ORDER BY since, run_id LIMIT ?)"
        )
        values: list[object] = []
        for key in keys:
            values += [key, *(after or ()), limit + 1]
        found = (
            self._connection()
            .execute(
                f"SELECT {rows.RUN_COLUMNS} FROM ({' UNION '.join([walk] * len(keys))}) i "
                "JOIN workflow_runs r ON r.id = i.run_id "
                "LEFT JOIN workflow_steps s ON s.id = r.current_step_id "
                "JOIN workflows w ON w.id = r.workflow_id ORDER BY i.since, i.run_id LIMIT ?",
                (*values, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(rows.listed_run(row) for row in found[:limit]), len(found) > limit)

    def _runs(self, where: str, values: tuple[object, ...], limit: int) -> Slice[Run]:
        """At most `limit` runs, without actions, that `where` (and its ORDER BY) picks."""
        read = (
            self._connection()
            .execute(
                f"SELECT {rows.RUN_COLUMNS} FROM {rows.RUN_FROM} {where} LIMIT ?",
                (*values, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(rows.listed_run(row) for row in read[:limit]), len(read) > limit)

    def record_change(self, change: RunChange) -> Run:
        before, after = change.before, change.after
        sets = rows.changed_state(before, after)
        assert sets, "every change moves the run's head or its deadline"
        guard = "id = ? AND head_hash IS ? AND deadline_passed = ?"
        guarded: tuple[object, ...] = (before.id, before.head_hash, int(before.deadline_passed))
        if change.last_step_order is not None:
            # A completion, computed from its workflow's steps as read: none
            # after the one decided (a step appended since: the run goes on to it).
            guard += (
                " AND NOT EXISTS (SELECT 1 FROM workflow_steps "
                "WHERE workflow_id = ? AND step_order > ?)"
            )
            guarded += (before.workflow_id, change.last_step_order)
        with self._write() as conn:
            # The guard: the run as it was read. The head moves with every
            # action, the deadline's state with its remind or escalate: only
            # one change can be computed from a given state and written.
            moved = conn.execute(
                f"UPDATE workflow_runs SET {', '.join(f'{name} = ?' for name in sets)} "
                f"WHERE {guard}",
                (*sets.values(), *guarded),
            ).rowcount
            if moved != 1:
                if change.last_step_order is not None:
                    # Perhaps a step was appended after the last one known: the
                    # retry reads them again.
                    self._known_steps.pop(before.workflow_id, None)
                raise errors.LostWrite()
            action_ids = _insert_actions(conn, change.actions)
            _move_in_inboxes(conn, change)
            record_events(conn, change.events)
        return change.recorded(action_ids)

    # -- deadlines ---------------------------------------------------------

    def due_runs(self, now: str, limit: int) -> list[int]:

        rows = (
            self._connection()
            .execute(
                "SELECT id FROM workflow_runs WHERE current_step_due_at IS NOT NULL "
                "AND deadline_passed = 0 AND current_step_due_at <= ? "
                "ORDER BY current_step_due_at LIMIT ?",
                (now, limit),
            )
            .fetchall()
        )
        return [run_id for (run_id,) in rows]

    # -- events ------------------------------------------------------------

    def list_events(self, subject: str, after_sequence: Optional[int], limit: int) -> Slice[Event]:

        rows = (
            self._connection()
            .execute(
                "SELECT id, subject, sequence, type, body FROM events "
                "WHERE subject = ? AND sequence > ? ORDER BY sequence LIMIT ?",
                (subject, after_sequence or 0, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(Event(*row) for row in rows[:limit]), len(rows) > limit)


def _insert_actions(conn: sqlite3.Connection, actions: Sequence[Action]) -> list[int]:
    """The actions appended to their run's history, in order; their new ids."""
    return [
        rows.last_id(
            conn.execute(
                "INSERT INTO workflow_actions (run_id, step_id, action, actor, comment, "
                "created_at, hash, on_behalf_of, round, input_digest) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    action.run_id,
                    action.step_id,
                    action.action,
                    action.actor,
                    action.comment,
                    action.created_at,
                    action.hash,
                    action.on_behalf_of,
                    action.round,
                    action.input_digest,
                ),
            )
        )
        for action in actions
    ]


def _insert_step(conn: sqlite3.Connection, step: Step) -> None:
    conn.execute(
        f"INSERT INTO workflow_steps ({rows.STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (step.id, *rows.step_values(step)),
    )


def _enter_inboxes(conn: sqlite3.Connection, run: Run, keys: Sequence[str]) -> None:
    """The run's rows in the inboxes of `keys`, at when it reached its step."""
    _each(
        conn,
        "INSERT INTO run_inbox (principal, since, run_id) VALUES (?, ?, ?)",
        [(key, run.current_step_since, run.id) for key in keys],
    )


def _move_in_inboxes(conn: sqlite3.Connection, change: RunChange) -> None:
    """The run's rows out of the inboxes the change leaves and into those it
    enters; an inbox it stays in (the next step's approvers are the last's)
    has its row moved to when the run reached its new step, in one statement."""
    before, after = change.before, change.after
    stays = [key for key in change.leaves if key in change.enters]
    was, now = before.current_step_since, after.current_step_since
    if was != now:
        _each(
            conn,
            "UPDATE run_inbox SET since = ? WHERE principal = ? AND since = ? AND run_id = ?",
            [(now, key, was, before.id) for key in stays],
        )
    _each(
        conn,
        "DELETE FROM run_inbox WHERE principal = ? AND since = ? AND run_id = ?",
        [(key, was, before.id) for key in change.leaves if key not in stays],
    )
    _enter_inboxes(conn, after, [key for key in change.enters if key not in stays])


def _each(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
    """`sql` for each of `rows`: most steps name one principal, for which a
    plain execute costs less than executemany's setup."""
    if len(rows) == 1:
        conn.execute(sql, rows[0])
    elif rows:
        conn.executemany(sql, rows)
