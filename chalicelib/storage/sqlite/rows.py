"""SQLite rows <-> records: the columns each read names, what they make, and
the statements that write a change's rows (its actions, steps, inbox rows and
events) inside the change's transaction.

A run's row is the run, its current step (with that step's rules) and its
workflow's policy, joined: RUN_COLUMNS from RUN_FROM. A run's state as the
columns of workflow_runs hold it changes as `changed_state` says, so that a
change writes the columns it changed and no other.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain.models import Action, Deadline, EventDraft, Policy, Run, Step, Workflow
from chalicelib.domain.shapes import compact

if TYPE_CHECKING:
    from chalicelib.domain.changes import RunChange
    from chalicelib.domain.idempotency import IdempotencyRecord

STEP_COLUMNS = (
    "id, workflow_id, name, step_order, approvers, required_approvals, "
    "deadline_seconds, on_deadline, escalate_to, when_condition, notify"
)
# A workflow at one of its versions: the workflow's row (w) and the version's (v).
WORKFLOW_COLUMNS = (
    "w.id, w.name, v.description, w.created_at, "
    "v.allow_self_approval, v.distinct_approvers, v.reject_requires_comment, v.input_schema, "
    "v.max_returns, v.version, w.retired, v.created_at"
)
# The workflow at its newest version.
WORKFLOW_FROM = (
    "workflows w JOIN workflow_versions v ON v.workflow_id = w.id AND v.version = w.version"
)
# The workflow at each of its versions.
VERSIONS_FROM = "workflow_versions v JOIN workflows w ON w.id = v.workflow_id"
VERSION_VALUES = (
    "workflow_id, version, description, created_at, allow_self_approval, distinct_approvers, "
    "reject_requires_comment, input_schema, max_returns"
)
DELEGATION_COLUMNS = (
    "id, delegator, delegate, workflow_id, starts_at, ends_at, reason, created_at, "
    "created_by, revoked_at, revoked_by"
)
RUN_COLUMNS = (
    "r.id, r.workflow_id, r.title, r.status, r.created_at, r.updated_at, "
    "s.id, s.workflow_id, s.name, s.step_order, COALESCE(r.step_approvers, s.approvers), "
    "s.required_approvals, "
    "s.deadline_seconds, s.on_deadline, s.escalate_to, s.when_condition, "
    "r.requested_by, r.head_hash, r.approved_by, r.current_step_since, "
    "w.allow_self_approval, w.distinct_approvers, w.reject_requires_comment, r.approvers, "
    "r.current_step_due_at, r.deadline_passed, r.input, "
    "r.round, r.on_behalf_of, r.genesis_input_digest, w.max_returns, r.workflow_version, "
    "r.genesis_version, r.definition_digest, r.definition_steps, s.notify"
)
# An action's columns, in Action's order (its step's name from the step's row).
ACTION_COLUMNS = (
    "wa.id, wa.run_id, wa.step_id, ws.name, wa.action, wa.actor, wa.comment, wa.created_at, "
    "wa.hash, wa.on_behalf_of, wa.round, wa.input_digest, wa.channel, wa.approvers, "
    "wa.workflow_version, wa.next_step_digest, wa.definition_digest, wa.definition_steps"
)
# The version a run runs on (w: its policy and max_returns).
RUN_VERSION = (
    "workflow_versions w ON w.workflow_id = r.workflow_id AND w.version = r.workflow_version"
)
# A run's row: the run, its current step and its version's policy, joined.
RUN_FROM = (
    f"workflow_runs r LEFT JOIN workflow_steps s ON s.id = r.current_step_id JOIN {RUN_VERSION}"
)
# Columns after the first RUN_COLUMNS in a run's row with its actions.
ACTIONS_FROM = 36


def listed_run(row: tuple[Any, ...], actions: tuple[Action, ...] = (), unread: int = 0) -> Run:
    """A run from a row that starts with RUN_COLUMNS, with `actions`, after the
    `unread` first actions of its history (all of them, where it was not read)."""
    # Its step's columns, in STEP_COLUMNS's order (notify, added last, is last).
    current = step((*row[6:16], row[35])) if row[6] is not None else None
    # Positional, every field: keywords take the records' slower constructor.
    return Run(
        row[0],
        row[1],
        row[2],
        row[3],
        current,
        row[4],
        row[5],
        actions,
        row[16],
        row[17],
        strings(row[18]),
        row[19],
        Policy(*map(bool, row[20:23])),
        strings(row[23]),
        None,  # revision: the guard is the head read, and the events table numbers events
        row[24],
        bool(row[25]),
        unread,
        json_of(row[26]) or {},
        row[27],
        strings(row[28]),
        row[29],
        row[30],
        row[31],
        row[32],
        row[33],
        row[34],
    )


def action(row: Sequence[Any]) -> Action:
    """An action from a row of ACTION_COLUMNS."""
    listed = row[13]
    return Action(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        row[10],
        row[11],
        row[12],
        None if listed is None else strings(listed),
        row[14],
        row[15],
        row[16],
        row[17],
    )


def step(row: Sequence[Any]) -> Step:
    """A step from a row of STEP_COLUMNS."""
    step_id, workflow_id, name, order, approvers, required, seconds, action, escalate_to = row[:9]
    deadline = (
        Deadline(seconds, action, strings(escalate_to or "[]")) if seconds is not None else None
    )
    when, notify = json_of(row[9]), strings(row[10] or "[]")
    return Step(
        step_id, workflow_id, name, order, strings(approvers), required, deadline, when, notify
    )


def workflow(row: Sequence[Any], steps: tuple[Step, ...]) -> Workflow:
    """A workflow from a row of WORKFLOW_COLUMNS, and its steps."""
    return Workflow(
        row[0],
        row[1],
        row[2],
        row[3],
        steps,
        Policy(*map(bool, row[4:7])),
        json_of(row[7]),
        row[8],
        row[9],
        bool(row[10]),
        row[11],
    )


def version_values(workflow: Workflow) -> tuple[object, ...]:
    """The row of workflow_versions that holds `workflow`'s version."""
    return (
        workflow.id,
        workflow.version,
        workflow.description,
        workflow.version_created_at or workflow.created_at,
        *map(int, workflow.policy),
        document(workflow.input_schema),
        workflow.max_returns,
    )


def step_values(step: Step) -> tuple[object, ...]:
    """A step's columns after its id, in STEP_COLUMNS's order."""
    deadline = step.deadline
    return (
        step.workflow_id,
        step.name,
        step.step_order,
        as_json(step.approvers),
        step.required_approvals,
        deadline.seconds if deadline else None,
        deadline.action if deadline else None,
        as_json(deadline.escalate_to) if deadline else None,
        document(step.when),
        as_json(step.notify) if step.notify else None,
    )


def changed_state(before: Run, after: Run) -> dict[str, object]:
    """The columns of workflow_runs whose value `after` changes (its id,
    workflow, title, requester and creation never do). Only those are set:
    SQLite rewrites the entries of every index on a column that SET names,
    even to the value it had, and the run lists index status twice."""
    changed: dict[str, object] = {}
    if after.status != before.status:
        changed["status"] = after.status
    if after.current_step_id != before.current_step_id:
        changed["current_step_id"] = after.current_step_id
        changed["step_approvers"] = None  # a new step awaits its own approvers
    elif after.current_step is not None and _reassigned(before, after):
        changed["step_approvers"] = as_json(after.current_step.approvers)
    if after.workflow_version != before.workflow_version:
        changed["workflow_version"] = after.workflow_version
        changed["genesis_version"] = after.genesis_version
    if after.updated_at != before.updated_at:
        changed["updated_at"] = after.updated_at
    if after.head_hash != before.head_hash:
        changed["head_hash"] = after.head_hash
    if after.current_step_approved_by != before.current_step_approved_by:
        changed["approved_by"] = as_json(after.current_step_approved_by)
    if after.approvers != before.approvers:
        changed["approvers"] = as_json(after.approvers)
    if after.current_step_since != before.current_step_since:
        changed["current_step_since"] = after.current_step_since
    if after.current_step_due_at != before.current_step_due_at:
        changed["current_step_due_at"] = after.current_step_due_at
    if after.deadline_passed != before.deadline_passed:
        changed["deadline_passed"] = int(after.deadline_passed)
    if after.current_step_on_behalf_of != before.current_step_on_behalf_of:
        changed["on_behalf_of"] = as_json(after.current_step_on_behalf_of)
    if after.round != before.round:
        changed["round"] = after.round
    if after.input != before.input:
        changed["input"] = document(after.input)
    if after.genesis_input_digest != before.genesis_input_digest:
        changed["genesis_input_digest"] = after.genesis_input_digest
    return changed


def _reassigned(before: Run, after: Run) -> bool:
    """Whether the change keeps the run at its step, awaiting others now."""
    was, now = before.current_step, after.current_step
    return was is not None and now is not None and was.approvers != now.approvers


# Arrays of names as stored: compact, not ASCII-escaped.
_encode = compact


def as_json(values: Sequence[str]) -> str:
    """Names as a JSON array, as _encode writes one."""
    return f"[{','.join(map(encode_basestring, values))}]"


def document(value: Optional[dict[str, Any]]) -> Optional[str]:
    """A JSON object as stored (a run's input, a schema, a condition); None: null."""
    return None if value is None else _encode(value)


def json_of(stored: Optional[str]) -> Optional[dict[str, Any]]:
    """A stored JSON object; most runs' input is empty, which needs no parsing."""
    if stored is None:
        return None
    return {} if stored == "{}" else json.loads(stored)


def strings(stored: str) -> tuple[str, ...]:
    """A stored array of names; most are empty, which needs no parsing."""
    return () if stored == "[]" else tuple(json.loads(stored))


def last_id(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def idempotency_record(row: tuple[Any, ...]) -> IdempotencyRecord:
    """A key's row of idempotency_keys as the domain reads it; its module is
    loaded by a keyed request, never by a cold start's read."""
    from chalicelib.domain.idempotency import IdempotencyRecord, StoredResponse

    fingerprint, token, lease_until, expires_at, status, body, location = row
    response = StoredResponse(status, body, location) if status is not None else None
    return IdempotencyRecord(fingerprint, token, lease_until, expires_at, response)


# -- the rows a change writes, in the change's transaction -------------


def insert_actions(conn: sqlite3.Connection, actions: Sequence[Action]) -> list[int]:
    """The actions appended to their run's history, in order; their new ids."""
    return [
        last_id(
            conn.execute(
                "INSERT INTO workflow_actions (run_id, step_id, action, actor, comment, "
                "created_at, hash, on_behalf_of, round, input_digest, channel, approvers, "
                "workflow_version, next_step_digest, definition_digest, definition_steps) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    action.channel,
                    None if action.approvers is None else as_json(action.approvers),
                    action.workflow_version,
                    action.next_step_digest,
                    action.definition_digest,
                    action.definition_steps,
                ),
            )
        )
        for action in actions
    ]


def insert_version(conn: sqlite3.Connection, workflow: Workflow) -> None:
    """The workflow's version: its row of workflow_versions, and its steps."""
    conn.execute(
        f"INSERT INTO workflow_versions ({VERSION_VALUES}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        version_values(workflow),
    )
    for step in workflow.steps:
        insert_step(conn, step, workflow.version)


def insert_step(conn: sqlite3.Connection, step: Step, version: int) -> None:
    """The step, of its workflow's `version`."""
    conn.execute(
        f"INSERT INTO workflow_steps ({STEP_COLUMNS}, version) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (step.id, *step_values(step), version),
    )


def enter_inboxes(conn: sqlite3.Connection, run: Run, keys: Sequence[str]) -> None:
    """The run's rows in the inboxes of `keys`, at when it reached its step."""
    _each(
        conn,
        "INSERT INTO run_inbox (principal, since, run_id) VALUES (?, ?, ?)",
        [(key, run.current_step_since, run.id) for key in keys],
    )


def move_in_inboxes(conn: sqlite3.Connection, change: RunChange) -> None:
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
    enter_inboxes(conn, after, [key for key in change.enters if key not in stays])


def _each(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
    """`sql` for each of `rows`: most steps name one principal, for which a
    plain execute costs less than executemany's setup."""
    if len(rows) == 1:
        conn.execute(sql, rows[0])
    elif rows:
        conn.executemany(sql, rows)


def record_events(
    conn: sqlite3.Connection, drafts: Sequence[EventDraft], new_subject: bool = False
) -> None:
    """Add `drafts` to the outbox in the caller's transaction, each the next of
    its subject: the write lock the transaction holds keeps sequences gap-free.
    Each subject's last sequence is read once per transaction, and not at all
    for a `new_subject` (a run being created: AUTOINCREMENT never gives an id
    twice, so no event names it yet)."""
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
        sequence += 1
        last[draft.subject] = sequence
        conn.execute(
            "INSERT INTO events (id, subject, sequence, type, body) VALUES (?, ?, ?, ?, ?)",
            (draft.id, draft.subject, sequence, draft.type, draft.body(sequence)),
        )
