"""SQLite storage: the spec's schema verbatim, one connection per thread, WAL."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional, Union

from chalicelib.domain import audit, errors
from chalicelib.domain.models import (
    APPROVE,
    DEFAULT_POLICY,
    IN_PROGRESS,
    Action,
    Deadline,
    Decision,
    Event,
    Policy,
    Run,
    Slice,
    Step,
    StepRule,
    Workflow,
    step_due_at,
)
from chalicelib.storage.failures import unavailable

if TYPE_CHECKING:
    # Only writes make events, and only keyed POSTs and the dispatcher use the
    # idempotency and delivery records: each imports its module when it runs,
    # so that a cold start serving a read loads none of them.
    from chalicelib.delivery.dispatch import Pending
    from chalicelib.domain import events
    from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse

SCHEMA = """
CREATE TABLE IF NOT EXISTS workflows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE, description TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS workflow_steps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    name TEXT NOT NULL, step_order INTEGER NOT NULL,
    UNIQUE(workflow_id, step_order)
);
CREATE TABLE IF NOT EXISTS workflow_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id),
    title TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK(status IN ('pending','in_progress','completed','rejected','cancelled')),
    current_step_id INTEGER REFERENCES workflow_steps(id),
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS workflow_actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
    step_id INTEGER NOT NULL REFERENCES workflow_steps(id),
    action TEXT NOT NULL CHECK(action IN ('approve','reject','cancel')),
    actor TEXT NOT NULL, comment TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
-- The history join reads a run's actions; foreign keys are looked up by the
-- cascade. UNIQUE(workflow_id, step_order) already indexes the step queries.
CREATE INDEX IF NOT EXISTS workflow_actions_run ON workflow_actions(run_id, id);
-- The run lists, one index per filter: SQLite ends every index with the rowid
-- (the id), so each walks its filter's runs in id order, from the cursor on.
CREATE INDEX IF NOT EXISTS workflow_runs_workflow ON workflow_runs(workflow_id);
CREATE INDEX IF NOT EXISTS workflow_runs_status ON workflow_runs(status);
CREATE INDEX IF NOT EXISTS workflow_runs_workflow_status ON workflow_runs(workflow_id, status);
-- Idempotency-Key claims and the responses kept for them (chalicelib/domain/idempotency.py):
-- in flight while response_status is NULL. Claims delete expired rows a few at
-- a time, oldest first, through the expiry index.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL, token TEXT NOT NULL,
    lease_until REAL NOT NULL, expires_at INTEGER NOT NULL,
    response_status INTEGER, response_body TEXT, response_location TEXT
);
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys(expires_at);
"""

BUSY_TIMEOUT_MS = 10_000
# Expired idempotency keys deleted per claim: more than the one row a claim can
# add, so the table shrinks back, and a bounded cost for every request.
EXPIRED_KEYS_PER_CLAIM = 10

_STEP_COLUMNS = (
    "id, workflow_id, name, step_order, approvers, required_approvals, "
    "deadline_seconds, on_deadline, escalate_to"
)
_WORKFLOW_COLUMNS = (
    "w.id, w.name, w.description, w.created_at, "
    "w.allow_self_approval, w.distinct_approvers, w.reject_requires_comment"
)
_RUN_COLUMNS = (
    "r.id, r.workflow_id, r.title, r.status, r.created_at, r.updated_at, "
    "s.id, s.workflow_id, s.name, s.step_order, s.approvers, s.required_approvals, "
    "s.deadline_seconds, s.on_deadline, s.escalate_to, "
    "r.requested_by, r.head_hash, r.approved_by, r.current_step_since, "
    "w.allow_self_approval, w.distinct_approvers, w.reject_requires_comment, r.approvers, "
    "r.current_step_due_at, r.deadline_passed"
)
# A run's row: the run, its current step and its workflow's policy, joined.
_RUN_FROM = (
    "workflow_runs r LEFT JOIN workflow_steps s ON s.id = r.current_step_id "
    "JOIN workflows w ON w.id = r.workflow_id"
)
# Columns after the first _RUN_COLUMNS in a run's row with its actions.
_ACTIONS_FROM = 25


def _chain_recorded_history(conn: sqlite3.Connection) -> None:
    """The audit chain (chalicelib/domain/audit.py) for the runs and actions recorded
    before it, computed once from their stored values, in history order.

    Its queries name only the columns that exist at this migration, so that
    files older still migrate through it whatever later migrations add."""
    conn.execute("ALTER TABLE workflow_actions ADD COLUMN hash TEXT")
    conn.execute("ALTER TABLE workflow_runs ADD COLUMN head_hash TEXT")
    runs = conn.execute(
        "SELECT id, workflow_id, title, requested_by, created_at FROM workflow_runs ORDER BY id"
    ).fetchall()
    for run_id, workflow_id, title, requested_by, created_at in runs:
        genesis = {
            "run_id": run_id,
            "workflow_id": workflow_id,
            "title": title,
            "requested_by": requested_by,
            "created_at": created_at,
        }
        head = audit.genesis_hash(genesis)
        actions = conn.execute(
            "SELECT wa.id, wa.run_id, wa.step_id, ws.name, wa.action, wa.actor, wa.comment, "
            "wa.created_at FROM workflow_actions wa JOIN workflow_steps ws ON ws.id = wa.step_id "
            "WHERE wa.run_id = ? ORDER BY wa.id",
            (run_id,),
        ).fetchall()
        for seq, row in enumerate(actions, start=1):
            head = audit.entry_hash(head, audit.entry_of(Action(*row), seq))
            conn.execute("UPDATE workflow_actions SET hash = ? WHERE id = ?", (head, row[0]))
        conn.execute("UPDATE workflow_runs SET head_hash = ? WHERE id = ?", (head, run_id))


def _add_approver_rules(conn: sqlite3.Connection) -> None:
    """Step approvers and quorums, workflow policy flags, each run's approvals,
    the time it reached its step, and the cancelled status and cancel action.

    The spec's CHECK constraints name the statuses and actions there are:
    widening them is the one schema change SQLite's ALTER TABLE cannot make.
    Widening a CHECK that every stored row meets is the rewrite of the table's
    definition that SQLite documents as safe (lang_altertable.html, "other
    kinds of table schema changes"); a table rebuild would cascade deletes."""
    for statement in (
        "ALTER TABLE workflows ADD COLUMN allow_self_approval INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE workflows ADD COLUMN distinct_approvers INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE workflows ADD COLUMN reject_requires_comment INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE workflow_steps ADD COLUMN approvers TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE workflow_steps ADD COLUMN required_approvals INTEGER NOT NULL DEFAULT 1",
        # JSON arrays: who approved the current step, and every step, of the run.
        "ALTER TABLE workflow_runs ADD COLUMN approved_by TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE workflow_runs ADD COLUMN approvers TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE workflow_runs ADD COLUMN current_step_since TEXT",
        # Before quorums, a run reached its step with its last decision.
        "UPDATE workflow_runs SET current_step_since = updated_at WHERE status = 'in_progress'",
        "UPDATE workflow_runs SET approvers = (SELECT json_group_array(actor) FROM "
        "(SELECT actor, MIN(id) AS first FROM workflow_actions WHERE run_id = workflow_runs.id "
        "AND action = 'approve' GROUP BY actor ORDER BY first))",
        # The inbox walks the runs in progress by when they reached their step.
        "CREATE INDEX IF NOT EXISTS workflow_runs_waiting "
        "ON workflow_runs(status, current_step_since)",
    ):
        conn.execute(statement)
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    for table, old, new in (
        ("workflow_runs", "'completed','rejected')", "'completed','rejected','cancelled')"),
        ("workflow_actions", "'approve','reject')", "'approve','reject','cancel')"),
    ):
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = ? "
            "AND instr(sql, ?) = 0",
            (old, new, table, new),
        )
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")


def _create_outbox(conn: sqlite3.Connection) -> None:
    """The outbox: every event, recorded in the transaction of its transition
    (chalicelib/domain/events.py), and its delivery (chalicelib/delivery/dispatch.py). A
    subject's events are numbered from 1 (sequence); the pending ones, indexed
    apart, are what the dispatcher reads."""
    conn.execute(
        "CREATE TABLE events (id TEXT PRIMARY KEY, subject TEXT NOT NULL, "
        "sequence INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, "
        "attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at TEXT, delivered_at TEXT, "
        "UNIQUE(subject, sequence))"
    )
    conn.execute(
        "CREATE INDEX events_pending ON events(subject, sequence) WHERE delivered_at IS NULL"
    )


def _add_deadlines(conn: sqlite3.Connection) -> None:
    """Step deadlines, and each run's: when its current step is due, whether
    that deadline has passed (its remind or escalate applied). The sweeper
    reads the runs still due through a partial index."""
    for statement in (
        "ALTER TABLE workflow_steps ADD COLUMN deadline_seconds INTEGER",
        "ALTER TABLE workflow_steps ADD COLUMN on_deadline TEXT",
        "ALTER TABLE workflow_steps ADD COLUMN escalate_to TEXT",
        "ALTER TABLE workflow_runs ADD COLUMN current_step_due_at TEXT",
        "ALTER TABLE workflow_runs ADD COLUMN deadline_passed INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX workflow_runs_due ON workflow_runs(current_step_due_at) "
        "WHERE current_step_due_at IS NOT NULL AND deadline_passed = 0",
    ):
        conn.execute(statement)


# A change to the schema: a statement, or a function of the connection when
# SQL alone cannot make it.
Migration = Union[str, Callable[[sqlite3.Connection], None]]

# Changes to the spec's schema, applied in order when a file is opened, in the
# one transaction that sets the file's PRAGMA user_version: how many it has had.
# Older files keep working: rows from before a change read its new columns as
# NULL, unless the change fills them.
MIGRATIONS: tuple[Migration, ...] = (
    # 1: who started a run (null when nobody was named).
    "ALTER TABLE workflow_runs ADD COLUMN requested_by TEXT",
    # 2: the audit chain: actions' hash and runs' head_hash, filled in.
    _chain_recorded_history,
    # 3: approver rules, quorums, policy flags, cancel.
    _add_approver_rules,
    # 4: the events outbox.
    _create_outbox,
    # 5: step deadlines.
    _add_deadlines,
)


class SQLiteStorage:
    """Storage in one SQLite file, shared safely by threads and processes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._schema_lock = threading.Lock()
        self._schema_ready = False

    # -- connections -----------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn: Optional[sqlite3.Connection] = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        """A connection with the schema in place; Unavailable, with the log
        saying what to fix, when the path cannot hold a database."""
        try:
            return self._open()
        except (OSError, sqlite3.Error) as exc:
            if _is_busy(exc):
                raise errors.Unavailable("The database is busy; retry shortly") from exc
            # A directory, a path under a file, a place that cannot be written,
            # a file that is not a database: each is the operator's to fix.
            raise unavailable(
                f"The SQLite database {self.path!r} (WORKFLOW_SQLITE_PATH) cannot be used: "
                f"{exc}. Set WORKFLOW_SQLITE_PATH to a file in a writable directory, "
                "or leave it unset for .data/workflows.sqlite3 in the project"
            ) from exc

    def _open(self) -> sqlite3.Connection:
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        # isolation_level=None: we open every transaction ourselves, writers
        # with BEGIN IMMEDIATE so they queue on the busy timeout instead of
        # failing when a read lock would have to be upgraded.
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._ensure_schema(conn)
        except BaseException:
            # Not kept, so closed here: the next request opens a new one.
            conn.close()
            raise
        return conn

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        with self._schema_lock:
            if self._schema_ready:
                return
            _use_wal(conn)
            # A file at the latest version has its whole schema (the schema and
            # the version are written in one transaction): nothing to write,
            # and a cold start reads one PRAGMA instead of running the script.
            if conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS):
                self._schema_ready = True
                return
            conn.executescript(f"BEGIN IMMEDIATE; {SCHEMA}")
            try:
                (version,) = conn.execute("PRAGMA user_version").fetchone()
                for migration in MIGRATIONS[version:]:
                    if isinstance(migration, str):
                        conn.execute(migration)
                    else:
                        migration(conn)
                if version != len(MIGRATIONS):
                    # Only then: setting it writes the file's header, on every open.
                    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            self._schema_ready = True

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise errors.Unavailable("The database is busy; retry shortly") from exc
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- workflows -------------------------------------------------------

    def create_workflow(
        self,
        name: str,
        description: str,
        steps: Sequence[StepRule],
        now: str,
        policy: Policy = DEFAULT_POLICY,
    ) -> Workflow:
        from chalicelib.domain import events

        with self._write() as conn:
            try:
                cursor = conn.execute(
                    "INSERT INTO workflows (name, description, created_at, allow_self_approval, "
                    "distinct_approvers, reject_requires_comment) VALUES (?, ?, ?, ?, ?, ?)",
                    (name, description, now, *policy),
                )
            except sqlite3.IntegrityError as exc:
                raise errors.Conflict(f"A workflow named {name!r} already exists") from exc
            workflow_id = _last_id(cursor)
            stored = tuple(
                self._insert_step(conn, workflow_id, step, order)
                for order, step in enumerate(steps, start=1)
            )
            workflow = Workflow(workflow_id, name, description, now, stored, policy)
            _record_events(conn, events.workflow_created(workflow))
        return workflow

    def get_workflow(self, workflow_id: int) -> Workflow:
        conn = self._connection()
        row = conn.execute(
            f"SELECT {_WORKFLOW_COLUMNS} FROM workflows w WHERE id = ?", (workflow_id,)
        ).fetchone()
        if row is None:
            raise errors.workflow_not_found(workflow_id)
        steps = conn.execute(
            f"SELECT {_STEP_COLUMNS} FROM workflow_steps WHERE workflow_id = ? ORDER BY step_order",
            (workflow_id,),
        ).fetchall()
        return _workflow(row, tuple(_step(step) for step in steps))

    def list_workflows(self, after_id: Optional[int], limit: int) -> Slice[Workflow]:
        conn = self._connection()
        rows = conn.execute(
            f"SELECT {_WORKFLOW_COLUMNS} FROM workflows w WHERE id > ? ORDER BY id LIMIT ?",
            (after_id or 0, limit + 1),
        ).fetchall()
        page = rows[:limit]
        # The steps of the whole page in one statement, not one per workflow.
        # Steps are only ever appended, so reading them second shows each
        # workflow as it was at one moment after the first statement.
        steps: dict[int, list[Step]] = {row[0]: [] for row in page}
        if page:
            for step in conn.execute(
                f"SELECT {_STEP_COLUMNS} FROM workflow_steps WHERE workflow_id IN "
                f"({', '.join('?' * len(page))}) ORDER BY workflow_id, step_order",
                list(steps),
            ):
                steps[step[1]].append(_step(step))
        workflows = tuple(_workflow(row, tuple(steps[row[0]])) for row in page)
        return Slice(workflows, len(rows) > limit)

    def append_step(self, workflow_id: int, step: StepRule, now: str) -> Step:
        from chalicelib.domain import events

        # The write lock taken by BEGIN IMMEDIATE makes max()+1 and the insert
        # one step: no other writer can slip in between.
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
            stored = self._insert_step(conn, workflow_id, step, max_order + 1)
            _record_events(conn, events.step_added(stored, now))
        return stored

    def _insert_step(
        self, conn: sqlite3.Connection, workflow_id: int, step: StepRule, order: int
    ) -> Step:

        deadline = step.deadline
        cursor = conn.execute(
            "INSERT INTO workflow_steps (workflow_id, name, step_order, approvers, "
            "required_approvals, deadline_seconds, on_deadline, escalate_to) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                workflow_id,
                step.name,
                order,
                _json(step.approvers),
                step.required_approvals,
                deadline.seconds if deadline else None,
                deadline.action if deadline else None,
                _json(deadline.escalate_to) if deadline else None,
            ),
        )
        return step.stored(_last_id(cursor), workflow_id, order)

    def next_step(self, workflow_id: int, after_order: int) -> Optional[Step]:
        row = (
            self._connection()
            .execute(
                f"SELECT {_STEP_COLUMNS} FROM workflow_steps "
                "WHERE workflow_id = ? AND step_order > ? ORDER BY step_order ASC LIMIT 1",
                (workflow_id, after_order),
            )
            .fetchone()
        )
        return _step(row) if row else None

    # -- runs ------------------------------------------------------------

    def create_run(
        self, workflow: Workflow, title: str, now: str, requested_by: Optional[str] = None
    ) -> Run:
        from chalicelib.domain import events

        first = workflow.steps[0]
        with self._write() as conn:
            # The id is the genesis's first field: take it, then chain from it.
            run_id = _last_id(
                conn.execute(
                    "INSERT INTO workflow_runs (workflow_id, title, status, current_step_id, "
                    "created_at, updated_at, requested_by, current_step_since, "
                    "current_step_due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        workflow.id,
                        title,
                        IN_PROGRESS,
                        first.id,
                        now,
                        now,
                        requested_by,
                        now,
                        step_due_at(first, now),
                    ),
                )
            )
            run = Run.started(run_id, workflow, title, now, requested_by)
            run = run._replace(head_hash=audit.genesis_hash(audit.genesis_of(run)))
            conn.execute(
                "UPDATE workflow_runs SET head_hash = ? WHERE id = ?", (run.head_hash, run_id)
            )
            _record_events(conn, events.run_started(run), new_subject=True)
        return run

    def get_run(self, run_id: int, history: bool = True) -> Run:
        if not history:
            # The run and how many actions it has, one snapshot: the count walks
            # the run's entries of the actions' run_id index, no action row.
            row = (
                self._connection()
                .execute(
                    f"SELECT {_RUN_COLUMNS}, (SELECT count(*) FROM workflow_actions "
                    f"WHERE run_id = r.id) FROM {_RUN_FROM} WHERE r.id = ?",
                    (run_id,),
                )
                .fetchone()
            )
            if row is None:
                raise errors.run_not_found(run_id)
            return _listed_run(row)._replace(action_count=row[_ACTIONS_FROM])
        # One statement, so the run and its history are one snapshot without a
        # read transaction around two queries: a row per action (one if none),
        # each repeating the run's columns. Foreign keys guarantee every
        # action's step, so joining it LEFT drops nothing the inner join kept.
        rows = (
            self._connection()
            .execute(
                f"SELECT {_RUN_COLUMNS}, "
                "wa.id, wa.run_id, wa.step_id, ws.name, wa.action, wa.actor, "
                f"wa.comment, wa.created_at, wa.hash FROM {_RUN_FROM} "
                "LEFT JOIN workflow_actions wa ON wa.run_id = r.id "
                "LEFT JOIN workflow_steps ws ON ws.id = wa.step_id "
                "WHERE r.id = ? ORDER BY wa.id ASC",
                (run_id,),
            )
            .fetchall()
        )
        if not rows:
            raise errors.run_not_found(run_id)
        actions = (
            tuple(Action(*row[_ACTIONS_FROM:]) for row in rows)
            if rows[0][_ACTIONS_FROM] is not None
            else ()
        )
        return _listed_run(rows[0])._replace(actions=actions)

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
        self,
        actor: str,
        groups: frozenset[str],
        after: Optional[tuple[str, int]],
        limit: int,
    ) -> Slice[Run]:
        # The runs in progress, by when they reached their step (the waiting
        # index), that the caller may decide: decision.awaits, in SQL.
        principals = [f"user:{actor}", *(f"group:{group}" for group in sorted(groups))]
        marks = ", ".join("?" * len(principals))
        where = (
            "WHERE r.status = 'in_progress' "
            "AND (s.approvers = '[]' OR EXISTS (SELECT 1 FROM json_each(s.approvers) "
            f"WHERE value IN ({marks})) OR (r.deadline_passed AND s.on_deadline = 'escalate' "
            f"AND EXISTS (SELECT 1 FROM json_each(s.escalate_to) WHERE value IN ({marks})))) "
            "AND NOT EXISTS (SELECT 1 FROM json_each(r.approved_by) WHERE value = ?) "
            "AND (w.allow_self_approval OR r.requested_by IS NULL OR r.requested_by != ?) "
            "AND NOT (w.distinct_approvers "
            "AND EXISTS (SELECT 1 FROM json_each(r.approvers) WHERE value = ?)) "
        )
        values: tuple[object, ...] = (*principals, *principals, actor, actor, actor)
        if after is not None:
            where += "AND (r.current_step_since, r.id) > (?, ?) "
            values += after
        return self._runs(f"{where}ORDER BY r.current_step_since, r.id", values, limit)

    def _runs(self, where: str, values: tuple[object, ...], limit: int) -> Slice[Run]:
        """At most `limit` runs, without actions, that `where` (and its ORDER BY) picks."""
        rows = (
            self._connection()
            .execute(
                f"SELECT {_RUN_COLUMNS} FROM {_RUN_FROM} {where} LIMIT ?", (*values, limit + 1)
            )
            .fetchall()
        )
        return Slice(tuple(_listed_run(row) for row in rows[:limit]), len(rows) > limit)

    def record_decision(self, run: Run, decision: Decision) -> Run:
        from chalicelib.domain import events

        step = run.current_step
        assert step is not None, "only a run in progress has a decision to record"
        approvers = run.approvers
        if decision.action == APPROVE and decision.actor not in approvers:
            approvers = (*approvers, decision.actor)
        # Set status only when it changes: SQLite rewrites the entries of every
        # index on a column that SET names, even to the value it had, and the run
        # lists index status twice.
        sets = "approved_by = ?, approvers = ?"
        values: list[object] = [_json(decision.approved_by), _json(approvers)]
        if decision.stays:
            pass  # one more approval counted; the run waits at its step
        elif decision.next_step is not None and decision.status == IN_PROGRESS:
            sets += (
                ", current_step_id = ?, current_step_since = ?, current_step_due_at = ?, "
                "deadline_passed = 0"
            )
            values.extend(
                (decision.next_step.id, decision.at, step_due_at(decision.next_step, decision.at))
            )
        else:
            sets += (
                ", status = ?, current_step_id = NULL, current_step_since = NULL, "
                "current_step_due_at = NULL"
            )
            values.append(decision.status)
        with self._write() as conn:
            chained = audit.next_hash(run, decision)
            # The head as read is part of the condition: only one decision can
            # extend it, so the chain cannot fork and no two approvals of a
            # quorum read at once both count, whatever the state machine allows.
            moved = conn.execute(
                f"UPDATE workflow_runs SET {sets}, updated_at = ?, head_hash = ? "
                "WHERE id = ? AND status = ? AND current_step_id = ? AND head_hash IS ?",
                (*values, decision.at, chained, run.id, IN_PROGRESS, step.id, run.head_hash),
            ).rowcount
            if moved != 1:
                raise errors.StaleRun()
            cursor = conn.execute(
                "INSERT INTO workflow_actions (run_id, step_id, action, actor, comment, "
                "created_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    step.id,
                    decision.action,
                    decision.actor,
                    decision.comment,
                    decision.at,
                    chained,
                ),
            )
            action = Action.recording(_last_id(cursor), run, decision, chained)
            decided = run.decided(decision, action, chained)
            _record_events(conn, events.decided(run, decision, decided))
        return decided

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

    def record_deadline(self, run: Run, at: str) -> Run:
        from chalicelib.domain import events

        step = run.current_step
        assert step is not None, "only a run in progress has a deadline"
        after = run._replace(deadline_passed=True)
        with self._write() as conn:
            # The condition of a decision, and that the deadline is still to apply.
            moved = conn.execute(
                "UPDATE workflow_runs SET deadline_passed = 1 WHERE id = ? AND status = ? "
                "AND current_step_id = ? AND head_hash IS ? AND deadline_passed = 0",
                (run.id, IN_PROGRESS, step.id, run.head_hash),
            ).rowcount
            if moved != 1:
                raise errors.StaleRun()
            _record_events(conn, events.deadline_passed(run, after, at))
        return after

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

    # -- delivery (chalicelib/delivery/dispatch.py) -----------------------------------

    def pending_subjects(self, now: str, limit: int) -> list[str]:
        rows = (
            self._connection()
            .execute(
                "SELECT DISTINCT subject FROM events WHERE delivered_at IS NULL "
                "AND (next_attempt_at IS NULL OR next_attempt_at <= ?) LIMIT ?",
                (now, limit),
            )
            .fetchall()
        )
        return [subject for (subject,) in rows]

    def first_pending(self, subject: str) -> Optional[Pending]:
        row = (
            self._connection()
            .execute(
                "SELECT id, subject, sequence, type, body, attempts, next_attempt_at FROM events "
                "WHERE subject = ? AND delivered_at IS NULL ORDER BY sequence LIMIT 1",
                (subject,),
            )
            .fetchone()
        )
        from chalicelib.delivery.dispatch import Pending

        return Pending(Event(*row[:5]), row[5], row[6]) if row else None

    def mark_delivered(self, pending: Pending, now: str) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE events SET delivered_at = ? WHERE id = ? AND delivered_at IS NULL",
                (now, pending.event.id),
            )

    def mark_failed(self, pending: Pending, next_attempt_at: str) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE events SET attempts = attempts + 1, next_attempt_at = ? "
                "WHERE id = ? AND delivered_at IS NULL",
                (next_attempt_at, pending.event.id),
            )

    # -- idempotency keys --------------------------------------------------

    def claim_idempotency_key(self, claim: IdempotencyClaim) -> Optional[StoredResponse]:
        from chalicelib.domain import idempotency

        # Read, decide and write under BEGIN IMMEDIATE's write lock: one step.
        with self._write() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys "
                "WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)",
                (claim.now, EXPIRED_KEYS_PER_CLAIM),
            )
            row = conn.execute(
                "SELECT fingerprint, token, lease_until, expires_at, response_status, "
                "response_body, response_location FROM idempotency_keys WHERE key = ?",
                (claim.key,),
            ).fetchone()
            record = _idempotency_record(row) if row else None
            claimed = idempotency.may_claim(record, claim)
            if claimed:
                conn.execute(
                    "INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, token, "
                    "lease_until, expires_at) VALUES (?, ?, ?, ?, ?)",
                    (
                        claim.key,
                        claim.fingerprint,
                        claim.token,
                        claim.lease_until,
                        claim.expires_at,
                    ),
                )
        if claimed:
            return None
        assert record is not None
        return idempotency.replay(record, claim)

    def save_idempotent_response(self, claim: IdempotencyClaim, response: StoredResponse) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET response_status = ?, response_body = ?, "
                "response_location = ? WHERE key = ? AND token = ?",
                (response.status, response.body, response.location, claim.key, claim.token),
            )

    def release_idempotency_key(self, claim: IdempotencyClaim) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE key = ? AND token = ?", (claim.key, claim.token)
            )


def _record_events(
    conn: sqlite3.Connection, drafts: Sequence[events.Draft], new_subject: bool = False
) -> None:
    """Add `drafts` to the outbox in the caller's transaction, each the next of
    its subject: the write lock the transaction holds keeps sequences gap-free.
    Each subject's last sequence is read once per transaction, and not at all
    for a `new_subject` (a run being created: AUTOINCREMENT never gives an id
    twice, so no event names it yet)."""
    from chalicelib.domain import events

    last: dict[str, int] = {}
    for draft in drafts:
        sequence = last.get(draft.subject)
        if sequence is None:
            (sequence,) = (
                (0,)
                if new_subject
                else conn.execute(
                    "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE subject = ?",
                    (draft.subject,),
                ).fetchone()
            )
        event = events.recorded(draft, sequence + 1)
        last[draft.subject] = event.sequence
        conn.execute(
            "INSERT INTO events (id, subject, sequence, type, body) VALUES (?, ?, ?, ?, ?)",
            (event.id, event.subject, event.sequence, event.type, event.body),
        )


def _idempotency_record(row: tuple[Any, ...]) -> IdempotencyRecord:
    from chalicelib.domain.idempotency import IdempotencyRecord, StoredResponse

    fingerprint, token, lease_until, expires_at, status, body, location = row
    response = StoredResponse(status, body, location) if status is not None else None
    return IdempotencyRecord(fingerprint, token, lease_until, expires_at, response)


def _is_busy(exc: BaseException) -> bool:
    """Whether SQLite refused because another connection holds the file, which passes."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL once. SQLite answers 'locked' at once, without the
    busy timeout, while another connection sets up the same fresh file: wait here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if time.monotonic() > deadline:
                raise errors.Unavailable("The database is busy; retry shortly") from exc
            time.sleep(0.005)


def _listed_run(row: tuple[Any, ...]) -> Run:
    """A run from a row that starts with _RUN_COLUMNS, without its actions."""
    current = _step(row[6:15]) if row[6] is not None else None
    return Run(
        row[0],
        row[1],
        row[2],
        row[3],
        current,
        row[4],
        row[5],
        (),
        row[15],
        row[16],
        _strings(row[17]),
        row[18],
        Policy(*map(bool, row[19:22])),
        _strings(row[22]),
        current_step_due_at=row[23],
        deadline_passed=bool(row[24]),
    )


def _step(row: Sequence[Any]) -> Step:
    """A step from a row of _STEP_COLUMNS."""
    step_id, workflow_id, name, order, approvers, required, seconds, action, escalate_to = row
    deadline = (
        Deadline(seconds, action, _strings(escalate_to or "[]")) if seconds is not None else None
    )
    return Step(step_id, workflow_id, name, order, _strings(approvers), required, deadline)


def _workflow(row: Sequence[Any], steps: tuple[Step, ...]) -> Workflow:
    """A workflow from a row of _WORKFLOW_COLUMNS, and its steps."""
    return Workflow(row[0], row[1], row[2], row[3], steps, Policy(*map(bool, row[4:7])))


# Arrays of names as stored: compact, not ASCII-escaped. One encoder for the
# process, not one per call as json.dumps with options builds.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _json(values: Sequence[str]) -> str:
    return "[]" if not values else _encode(list(values))


def _strings(stored: str) -> tuple[str, ...]:
    """A stored array of names; most are empty, which needs no parsing."""
    return () if stored == "[]" else tuple(json.loads(stored))


def _last_id(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None
    return cursor.lastrowid
