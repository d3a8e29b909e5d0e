"""The SQLite file's schema: the first release's (the baseline), then the
changes made to it since, each applied once, in order, when a file is opened
that has not had them (connections.py checks which, and loads this module
only then).

A file counts its schema in PRAGMA user_version: BASELINE_VERSION once it has
SCHEMA, one more for each change of MIGRATIONS it has had, set in the one
write transaction that makes them. A new file is made the same way (the
baseline, then every change), so each change is run by every test that opens
a file. A schema change ships with its migration, appended to MIGRATIONS;
SCHEMA itself stays as the first release made it (docs/storage.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Union

from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.storage.failures import unavailable

if TYPE_CHECKING:
    import sqlite3

# The version files of the first release's schema carry. Files written before
# that release already counted eight changes to the spec's schema: eight is
# kept, so that the files made then, with this very schema, open as they are.
BASELINE_VERSION = 8

# The status the spec's schema gives a run by default, which no run of this
# service has: the CHECK admits it beside the statuses of lifecycle.RunStatus.
SPEC_DEFAULT_STATUS = "pending"


def one_of(values: Iterable[str]) -> str:
    """The list of SQL text literals a CHECK's IN takes: `'a','b'`."""
    return ",".join(f"'{value}'" for value in values)


# The spec's tables, with the columns, CHECKs and indexes the first release
# added to them, and the tables it added; in the order of the spec's columns
# and then the order they were added in, as rows.py reads them. The CHECKs'
# lists are the names of chalicelib/domain/lifecycle.py, in its order (a new
# name needs a migration for the files made before it: SQLite cannot change a
# CHECK in place).
SCHEMA = (
    """CREATE TABLE workflows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE, description TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    -- The workflow's policy flags (chalicelib/domain/models.py's Policy).
    allow_self_approval INTEGER NOT NULL DEFAULT 0,
    distinct_approvers INTEGER NOT NULL DEFAULT 0,
    reject_requires_comment INTEGER NOT NULL DEFAULT 0,
    -- The JSON Schema its runs' input must meet (null: any object).
    input_schema TEXT,
    max_returns INTEGER NOT NULL DEFAULT 3
)""",
    """CREATE TABLE workflow_steps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    name TEXT NOT NULL, step_order INTEGER NOT NULL,
    -- A JSON array of principals (empty: anyone), and the quorum.
    approvers TEXT NOT NULL DEFAULT '[]',
    required_approvals INTEGER NOT NULL DEFAULT 1,
    deadline_seconds INTEGER, on_deadline TEXT, escalate_to TEXT,
    -- When the step applies (JSON, null: always).
    when_condition TEXT,
    UNIQUE(workflow_id, step_order)
)""",
    f"""CREATE TABLE workflow_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id),
    title TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT '{SPEC_DEFAULT_STATUS}' CHECK(status IN ({one_of((SPEC_DEFAULT_STATUS, *RunStatus))})),
    current_step_id INTEGER REFERENCES workflow_steps(id),
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    requested_by TEXT,
    -- The audit chain's head (chalicelib/domain/audit.py).
    head_hash TEXT,
    -- JSON arrays: who approved the current step, and every step, of the run.
    approved_by TEXT NOT NULL DEFAULT '[]',
    approvers TEXT NOT NULL DEFAULT '[]',
    current_step_since TEXT,
    current_step_due_at TEXT,
    deadline_passed INTEGER NOT NULL DEFAULT 0,
    input TEXT NOT NULL DEFAULT '{{}}',
    round INTEGER NOT NULL DEFAULT 1,
    -- For each of approved_by, whom it was for through a delegation ("": themselves).
    on_behalf_of TEXT NOT NULL DEFAULT '[]',
    genesis_input_digest TEXT
)""",
    f"""CREATE TABLE workflow_actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
    step_id INTEGER NOT NULL REFERENCES workflow_steps(id),
    action TEXT NOT NULL CHECK(action IN ({one_of(ActionKind)})),
    actor TEXT NOT NULL, comment TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    hash TEXT,
    on_behalf_of TEXT,
    round INTEGER NOT NULL DEFAULT 1,
    input_digest TEXT
)""",
    # The history join reads a run's actions; foreign keys are looked up by the
    # cascade. UNIQUE(workflow_id, step_order) already indexes the step queries.
    "CREATE INDEX workflow_actions_run ON workflow_actions(run_id, id)",
    # The run lists, one index per filter: SQLite ends every index with the rowid
    # (the id), so each walks its filter's runs in id order, from the cursor on.
    "CREATE INDEX workflow_runs_workflow ON workflow_runs(workflow_id)",
    "CREATE INDEX workflow_runs_status ON workflow_runs(status)",
    "CREATE INDEX workflow_runs_workflow_status ON workflow_runs(workflow_id, status)",
    # The runs whose deadline is still to apply, for the sweeper.
    "CREATE INDEX workflow_runs_due ON workflow_runs(current_step_due_at) "
    "WHERE current_step_due_at IS NOT NULL AND deadline_passed = 0",
    # Idempotency-Key claims and the responses kept for them
    # (chalicelib/domain/idempotency.py): in flight while response_status is
    # NULL. Claims delete expired rows a few at a time, oldest first, through
    # the expiry index.
    """CREATE TABLE idempotency_keys (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL, token TEXT NOT NULL,
    lease_until REAL NOT NULL, expires_at INTEGER NOT NULL,
    response_status INTEGER, response_body TEXT, response_location TEXT
)""",
    "CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at)",
    # The outbox: every event, recorded in the transaction of its transition
    # (chalicelib/domain/events.py), and its delivery
    # (chalicelib/delivery/dispatch.py). A subject's events are numbered from 1
    # (sequence); the pending ones, indexed apart, are what the dispatcher reads.
    "CREATE TABLE events (id TEXT PRIMARY KEY, subject TEXT NOT NULL, "
    "sequence INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, "
    "attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at TEXT, delivered_at TEXT, "
    "UNIQUE(subject, sequence))",
    "CREATE INDEX events_pending ON events(subject, sequence) WHERE delivered_at IS NULL",
    # The inboxes: a row for each principal whose inbox holds a run waiting at
    # its step (chalicelib/domain/decision.py's awaited_by), kept by the write
    # that moves the run. The rows are found by their whole key, which the
    # change that moves a run names: no index on run_id is kept (runs are
    # never deleted), so a move writes one B-tree.
    "CREATE TABLE run_inbox (principal TEXT NOT NULL, since TEXT NOT NULL, "
    "run_id INTEGER NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE, "
    "PRIMARY KEY (principal, since, run_id)) WITHOUT ROWID",
    # Delegations, found by their delegate's key and end, and by their delegator's key.
    "CREATE TABLE delegations (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "delegator TEXT NOT NULL, delegator_key TEXT NOT NULL, "
    "delegate TEXT NOT NULL, delegate_key TEXT NOT NULL, "
    "workflow_id INTEGER REFERENCES workflows(id), "
    "starts_at TEXT NOT NULL, ends_at TEXT NOT NULL, reason TEXT NOT NULL, "
    "created_at TEXT NOT NULL, created_by TEXT NOT NULL, revoked_at TEXT, revoked_by TEXT)",
    "CREATE INDEX delegations_to ON delegations(delegate_key, ends_at)",
    "CREATE INDEX delegations_of ON delegations(delegator_key, id)",
)

# A change to the schema: a statement, several in order, or a function of the
# upgrade's connection when SQL alone cannot make it.
Migration = Union[str, tuple[str, ...], Callable[["sqlite3.Connection"], None]]

# Each version of a workflow (the newest too) with its policy, its steps the
# rows of workflow_steps of that version; a workflow's row holds its newest,
# and whether it is retired; a run the version it runs on, the one it started
# on where a move changed it, whom its step awaits after a reassign; an action
# a reassign's approvers (JSON array) or a move's version.
WORKFLOW_VERSIONS = (
    "ALTER TABLE workflows ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE workflows ADD COLUMN retired INTEGER NOT NULL DEFAULT 0",
    "CREATE TABLE workflow_versions (workflow_id INTEGER NOT NULL "
    "REFERENCES workflows(id) ON DELETE CASCADE, version INTEGER NOT NULL, "
    "description TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, "
    "allow_self_approval INTEGER NOT NULL DEFAULT 0, distinct_approvers INTEGER NOT NULL "
    "DEFAULT 0, reject_requires_comment INTEGER NOT NULL DEFAULT 0, input_schema TEXT, "
    "max_returns INTEGER NOT NULL DEFAULT 3, PRIMARY KEY (workflow_id, version)) WITHOUT ROWID",
    "INSERT INTO workflow_versions (workflow_id, version, description, created_at, "
    "allow_self_approval, distinct_approvers, reject_requires_comment, input_schema, "
    "max_returns) SELECT id, 1, description, created_at, allow_self_approval, "
    "distinct_approvers, reject_requires_comment, input_schema, max_returns FROM workflows",
    # A step's order is unique within its version: SQLite changes no UNIQUE in
    # place, so the table is made anew. legacy_alter_table (and upgrade's foreign
    # keys off) keep the runs' and actions' REFERENCES workflow_steps naming the
    # new table, not the old one's new name.
    "PRAGMA legacy_alter_table = ON",
    "ALTER TABLE workflow_steps RENAME TO workflow_steps_unversioned",
    """CREATE TABLE workflow_steps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    name TEXT NOT NULL, step_order INTEGER NOT NULL,
    approvers TEXT NOT NULL DEFAULT '[]',
    required_approvals INTEGER NOT NULL DEFAULT 1,
    deadline_seconds INTEGER, on_deadline TEXT, escalate_to TEXT,
    when_condition TEXT,
    version INTEGER NOT NULL DEFAULT 1,
    UNIQUE(workflow_id, version, step_order)
)""",
    # Its ids go on from where the old table's did.
    "INSERT INTO sqlite_sequence (name, seq) SELECT 'workflow_steps', seq FROM sqlite_sequence "
    "WHERE name = 'workflow_steps_unversioned'",
    "INSERT INTO workflow_steps (id, workflow_id, name, step_order, approvers, "
    "required_approvals, deadline_seconds, on_deadline, escalate_to, when_condition) "
    "SELECT id, workflow_id, name, step_order, approvers, required_approvals, "
    "deadline_seconds, on_deadline, escalate_to, when_condition FROM workflow_steps_unversioned",
    "DROP TABLE workflow_steps_unversioned",
    "PRAGMA legacy_alter_table = OFF",
    "ALTER TABLE workflow_runs ADD COLUMN workflow_version INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE workflow_runs ADD COLUMN genesis_version INTEGER",
    "ALTER TABLE workflow_runs ADD COLUMN step_approvers TEXT",
    "ALTER TABLE workflow_actions ADD COLUMN approvers TEXT",
    "ALTER TABLE workflow_actions ADD COLUMN workflow_version INTEGER",
)


# The definitions a run's chain binds (chalicelib/domain/audit.py): a run's
# genesis, the digest of its version's definition at its start and how many
# steps it covered; an action, the digest of the step it brings the run to, or
# a move's of the definition moved to. NULL in every row written before.
BOUND_DEFINITIONS = (
    "ALTER TABLE workflow_runs ADD COLUMN definition_digest TEXT",
    "ALTER TABLE workflow_runs ADD COLUMN definition_steps INTEGER",
    "ALTER TABLE workflow_actions ADD COLUMN next_step_digest TEXT",
    "ALTER TABLE workflow_actions ADD COLUMN definition_digest TEXT",
    "ALTER TABLE workflow_actions ADD COLUMN definition_steps INTEGER",
)


# The changes made to SCHEMA since the first release, in order: the one at
# index i takes a file from version BASELINE_VERSION + i to the next. A file
# written before a change reads its new columns as NULL unless the change
# fills them.
MIGRATIONS: tuple[Migration, ...] = (
    # BASELINE_VERSION + 1: contacts, by their principal's canonical key
    # (chalicelib/domain/contacts.py); found by Slack id for Slack's clicks.
    "CREATE TABLE contacts (principal_key TEXT PRIMARY KEY, principal TEXT NOT NULL, "
    "email TEXT, slack TEXT, updated_at TEXT NOT NULL, updated_by TEXT)",
    # + 2: a marker per notification sent, by its once-key
    # (chalicelib/domain/notifications.py): the conditional put that makes a
    # notification go at most once.
    "CREATE TABLE notices_sent (once_key TEXT PRIMARY KEY, claim TEXT NOT NULL) WITHOUT ROWID",
    # + 3, + 4: one-time action links, by their token's SHA-256 only
    # (chalicelib/domain/links.py), and the use of one person's links for a step.
    "CREATE TABLE action_links (digest TEXT PRIMARY KEY, run_id INTEGER NOT NULL, "
    "round INTEGER NOT NULL, step_id INTEGER NOT NULL, person TEXT NOT NULL, "
    "action TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, "
    "on_behalf_of TEXT, use_key TEXT NOT NULL)",
    "CREATE TABLE action_link_uses (use_key TEXT PRIMARY KEY, digest TEXT NOT NULL, "
    "used_at TEXT NOT NULL) WITHOUT ROWID",
    # + 5: the channel each action came through (Action.channel); every action
    # before it came through the API.
    "ALTER TABLE workflow_actions ADD COLUMN channel TEXT NOT NULL DEFAULT 'api'",
    # + 6, + 7: the contacts found by their Slack id (a click's user), and the
    # Slack messages posted about a step, to update once it is decided.
    "CREATE INDEX contacts_slack ON contacts(slack) WHERE slack IS NOT NULL",
    "CREATE TABLE slack_posts (run_id INTEGER NOT NULL, round INTEGER NOT NULL, "
    "step_id INTEGER NOT NULL, channel TEXT NOT NULL, ts TEXT NOT NULL, principal TEXT NOT NULL, "
    "PRIMARY KEY (run_id, round, step_id, channel, ts)) WITHOUT ROWID",
    # + 8: the runs of a workflow by when they started, for
    # its figures (GET /workflows/{id}/stats: storage/sqlite/started.py).
    "CREATE INDEX workflow_runs_started ON workflow_runs(workflow_id, created_at)",
    # + 9: a workflow's versions (docs/versions.md): every workflow so far is at
    # its first, which its runs run on.
    WORKFLOW_VERSIONS,
    # + 10: whom a step tells besides its approvers (a JSON array; null: nobody
    # else), chalicelib/domain/notifications.py.
    "ALTER TABLE workflow_steps ADD COLUMN notify TEXT",
    # + 11: the definitions a run's chain binds; runs and actions before it bind none.
    BOUND_DEFINITIONS,
)


def version() -> int:
    """The version a file has once it has had every change."""
    return BASELINE_VERSION + len(MIGRATIONS)


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring the file to the latest schema in one write transaction: SCHEMA
    for a new file, then each change it has not had. A file this service
    cannot bring there (one from before the first release, or from a later
    one) is refused, and left as it was.

    The foreign keys are off meanwhile (a change may make a table anew, as
    SQLite changes a constraint, which they must not see half done, nor
    follow to the old table's new name) and checked before the commit."""
    (enforced,) = conn.execute("PRAGMA foreign_keys").fetchone()
    conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction: before it
    try:
        _upgrade(conn, check_keys=bool(enforced))
    finally:
        conn.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")


def _upgrade(conn: sqlite3.Connection, check_keys: bool) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        (found,) = conn.execute("PRAGMA user_version").fetchone()
        if found == 0 and _is_empty(conn):
            for statement in SCHEMA:
                conn.execute(statement)
            found = BASELINE_VERSION
        if not BASELINE_VERSION <= found <= version():
            (_, _, path) = conn.execute("PRAGMA database_list").fetchone()
            raise unavailable(
                f"The SQLite file {path!r} has schema version {found}, which this service cannot "
                f"bring to its own ({BASELINE_VERSION} to {version()}): it was written "
                f"{'by a later release' if found > version() else 'before the first release'}. "
                "Move it away (or set WORKFLOW_SQLITE_PATH to another file), and the service "
                "starts a new one"
            )
        for migration in MIGRATIONS[found - BASELINE_VERSION :]:
            if isinstance(migration, str):
                conn.execute(migration)
            elif isinstance(migration, tuple):
                for statement in migration:
                    conn.execute(statement)
            else:
                migration(conn)
        if check_keys and conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
            raise unavailable("A schema change left rows whose foreign keys name no row")
        conn.execute(f"PRAGMA user_version = {version()}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _is_empty(conn: sqlite3.Connection) -> bool:
    """Whether the file holds no table yet (a new file)."""
    return conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None
