"""The SQLite file's schema: the spec's tables verbatim, then the changes made
to them since, each applied once, in order, when a file is opened that has
not had them (connections.py checks which, and loads this module only then).

A change that only SQL makes is a statement; one that must fill in values the
rules compute for data already stored (the audit chain's hashes, the inboxes
of the runs waiting) is a function, and is handed those rules as Upgrades by
whoever opens the file (chalicelib/engine.py's open_storage): the storage
stores what they compute and computes nothing of its own.
"""

from __future__ import annotations

import _sqlite3 as sqlite3  # the driver without its package: see connections.py
from collections.abc import Callable
from typing import Optional, Union

from chalicelib.domain.models import IN_PROGRESS, Action, Run, Upgrades
from chalicelib.storage.failures import unavailable
from chalicelib.storage.sqlite import rows

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


def _needs(upgrades: Optional[Upgrades], what: str) -> Upgrades:
    """`upgrades`, which a file holding data from before `what` needs to move on."""
    if upgrades is None:
        raise unavailable(
            f"This SQLite file holds data from before {what}, which must be computed to "
            "upgrade it: open it with the rules' upgrades (chalicelib.engine.open_storage, "
            "as `make run` does)"
        )
    return upgrades


def _chain_recorded_history(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
    """The audit chain (chalicelib/domain/audit.py) for the runs and actions recorded
    before it, computed once from their stored values, in history order.

    Its queries name only the columns that exist at this migration, so that
    files older still migrate through it whatever later migrations add."""
    conn.execute("ALTER TABLE workflow_actions ADD COLUMN hash TEXT")
    conn.execute("ALTER TABLE workflow_runs ADD COLUMN head_hash TEXT")
    runs = conn.execute(
        "SELECT id, workflow_id, title, status, requested_by, created_at FROM workflow_runs "
        "ORDER BY id"
    ).fetchall()
    if not runs:
        return
    chain = _needs(upgrades, "the audit chain").chain
    for run_id, workflow_id, title, status, requested_by, created_at in runs:
        actions = tuple(
            Action(*row)
            for row in conn.execute(
                "SELECT wa.id, wa.run_id, wa.step_id, ws.name, wa.action, wa.actor, "
                "wa.comment, wa.created_at FROM workflow_actions wa JOIN workflow_steps ws "
                "ON ws.id = wa.step_id WHERE wa.run_id = ? ORDER BY wa.id",
                (run_id,),
            )
        )
        run = Run(
            run_id, workflow_id, title, status, None, created_at, created_at, actions, requested_by
        )
        genesis, *hashes = chain(run)
        for action, head in zip(actions, hashes, strict=True):
            conn.execute("UPDATE workflow_actions SET hash = ? WHERE id = ?", (head, action.id))
        conn.execute(
            "UPDATE workflow_runs SET head_hash = ? WHERE id = ?",
            ((hashes or [genesis])[-1], run_id),
        )


def _add_approver_rules(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
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
    _widen_checks(
        conn,
        ("workflow_runs", "'completed','rejected')", "'completed','rejected','cancelled')"),
        ("workflow_actions", "'approve','reject')", "'approve','reject','cancel')"),
    )


def _widen_checks(conn: sqlite3.Connection, *widenings: tuple[str, str, str]) -> None:
    """Widen CHECK constraints that every stored row meets: each (table, old
    text, new text) rewrites the table's definition where it does not say the
    new text yet (the rewrite SQLite documents as safe for loosening one)."""
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    for table, old, new in widenings:
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = ? "
            "AND instr(sql, ?) = 0",
            (old, new, table, new),
        )
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")


def _create_outbox(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
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


def _add_deadlines(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
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


def _add_inboxes(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
    """The inboxes: a row for each principal whose inbox holds a run waiting at
    its step (the rules name them: chalicelib/domain/decision.py's awaited_by),
    kept by the write that moves the run; the runs already waiting get theirs,
    computed by the rules. The index the inbox walked before, runs in progress
    by when they reached their step, has no reader left. The rows are found by
    their whole key, which the change that moves a run names: no index on
    run_id is kept (runs are never deleted), so a move writes one B-tree."""
    conn.execute(
        "CREATE TABLE run_inbox (principal TEXT NOT NULL, since TEXT NOT NULL, "
        "run_id INTEGER NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE, "
        "PRIMARY KEY (principal, since, run_id)) WITHOUT ROWID"
    )
    conn.execute("DROP INDEX IF EXISTS workflow_runs_waiting")
    waiting = conn.execute(
        "SELECT r.id, r.workflow_id, r.title, r.created_at, r.updated_at, r.current_step_since, "
        "r.deadline_passed, s.id, s.workflow_id, s.name, s.step_order, s.approvers, "
        "s.required_approvals, s.deadline_seconds, s.on_deadline, s.escalate_to "
        "FROM workflow_runs r JOIN workflow_steps s ON s.id = r.current_step_id "
        "WHERE r.status = ?",
        (IN_PROGRESS,),
    ).fetchall()
    if not waiting:
        return
    awaited_by = _needs(upgrades, "the inbox's keys").awaited_by
    for row in waiting:
        run_id, workflow_id, title, created_at, updated_at, since, passed = row[:7]
        run = Run(
            run_id,
            workflow_id,
            title,
            IN_PROGRESS,
            rows.step(row[7:]),
            created_at,
            updated_at,
            current_step_since=since,
            deadline_passed=bool(passed),
        )
        conn.executemany(
            "INSERT INTO run_inbox (principal, since, run_id) VALUES (?, ?, ?)",
            [(key, since, run_id) for key in awaited_by(run)],
        )


def _add_content_and_conditions(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
    """What a run is about and when a step applies: a run's input (JSON, empty
    for the runs before it), a workflow's input schema and a step's condition
    (JSON, null where none), and the skip a step whose condition does not
    hold is recorded with."""
    for statement in (
        "ALTER TABLE workflow_runs ADD COLUMN input TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE workflows ADD COLUMN input_schema TEXT",
        "ALTER TABLE workflow_steps ADD COLUMN when_condition TEXT",
    ):
        conn.execute(statement)
    _widen_checks(
        conn,
        ("workflow_actions", "'approve','reject','cancel')", "'approve','reject','cancel','skip')"),
    )


def _add_delegations_and_rounds(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
    """Delegations, and runs sent back for changes: a run's round (1 for the
    runs before it) and whom its current step's approvals were for; an
    action's round, whom it was for and a resubmit's input digest; the digest
    a run's genesis holds once a resubmit changed its input; a workflow's
    max_returns; the delegations, found by their delegate's key and end, and
    by their delegator's key."""
    for statement in (
        "ALTER TABLE workflow_runs ADD COLUMN round INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE workflow_runs ADD COLUMN on_behalf_of TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE workflow_runs ADD COLUMN genesis_input_digest TEXT",
        "ALTER TABLE workflow_actions ADD COLUMN on_behalf_of TEXT",
        "ALTER TABLE workflow_actions ADD COLUMN round INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE workflow_actions ADD COLUMN input_digest TEXT",
        "ALTER TABLE workflows ADD COLUMN max_returns INTEGER NOT NULL DEFAULT 3",
        "CREATE TABLE delegations (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "delegator TEXT NOT NULL, delegator_key TEXT NOT NULL, "
        "delegate TEXT NOT NULL, delegate_key TEXT NOT NULL, "
        "workflow_id INTEGER REFERENCES workflows(id), "
        "starts_at TEXT NOT NULL, ends_at TEXT NOT NULL, reason TEXT NOT NULL, "
        "created_at TEXT NOT NULL, created_by TEXT NOT NULL, revoked_at TEXT, revoked_by TEXT)",
        "CREATE INDEX delegations_to ON delegations(delegate_key, ends_at)",
        "CREATE INDEX delegations_of ON delegations(delegator_key, id)",
    ):
        conn.execute(statement)
    _widen_checks(
        conn,
        (
            "workflow_runs",
            "'completed','rejected','cancelled')",
            "'completed','rejected','cancelled','returned')",
        ),
        (
            "workflow_actions",
            "'approve','reject','cancel','skip')",
            "'approve','reject','cancel','skip','return','resubmit')",
        ),
    )


# A change to the schema: a statement, or a function of the connection (and of
# the rules' upgrades) when SQL alone cannot make it.
Migration = Union[str, Callable[[sqlite3.Connection, Optional[Upgrades]], None]]

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
    # 6: the inboxes, by the keys the rules name.
    _add_inboxes,
    # 7: runs' input, workflows' input schema, steps' conditions, skip.
    _add_content_and_conditions,
    # 8: delegations; returns, resubmits and rounds.
    _add_delegations_and_rounds,
)


def upgrade(conn: sqlite3.Connection, upgrades: Optional[Upgrades]) -> None:
    """Bring the file to the latest schema in one write transaction: the
    spec's tables where they are missing, then each change it has not had."""
    # The schema and the version are written in one transaction: a file at
    # the latest version has its whole schema.
    conn.executescript(f"BEGIN IMMEDIATE; {SCHEMA}")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        for migration in MIGRATIONS[version:]:
            if isinstance(migration, str):
                conn.execute(migration)
            else:
                migration(conn, upgrades)
        if version != len(MIGRATIONS):
            # Only then: setting it writes the file's header, on every open.
            conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
