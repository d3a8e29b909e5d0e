"""SQLite storage: the schema of migrations.py, one connection per thread, WAL.

Every change is one write transaction, taken with BEGIN IMMEDIATE: its write
lock makes the store's allocations (ids, event sequence numbers, a step's
order) and its writes one step. A run's change is conditional on the run as it
was read (its history's head and its deadline's state) and nothing else: the
rules that computed it (chalicelib/domain/) are not restated here.

The inboxes are rows of run_inbox, one per key the rules name for a waiting
run, written and deleted by the change that moves the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import (
    Action,
    Delegation,
    Event,
    Pending,
    Run,
    Slice,
)
from chalicelib.storage.sqlite import rows, started
from chalicelib.storage.sqlite.connections import next_id
from chalicelib.storage.sqlite.notices import NoticeRows
from chalicelib.storage.sqlite.workflows import WorkflowTables

if TYPE_CHECKING:
    from chalicelib.domain.changes import (
        DelegationGrant,
        DelegationRevocation,
        RunChange,
        RunStart,
    )
    from chalicelib.domain.idempotency import IdempotencyClaim, StoredResponse

# Expired idempotency keys deleted per claim: more than the one row a claim can
# add, so the table shrinks back, and a bounded cost for every request.
EXPIRED_KEYS_PER_CLAIM = 10


class SQLiteStorage(WorkflowTables, NoticeRows):
    """Storage in one SQLite file (connections.py): the service's workflows
    (workflows.py) and runs, its events and their delivery (the Outbox), its Idempotency-Keys (the
    KeyStore) and the delegations; the rows each writes are rows.py's; the
    contacts, notices and action links (notices.py)."""

    # -- runs ------------------------------------------------------------

    def create_run(self, start: RunStart) -> Run:
        with self._write() as conn:
            started = start.made(next_id(conn, "workflow_runs"))
            run = started.run
            conn.execute(
                "INSERT INTO workflow_runs (id, workflow_id, title, status, current_step_id, "
                "created_at, updated_at, requested_by, current_step_since, "
                "current_step_due_at, head_hash, input, workflow_version, definition_digest, "
                "definition_steps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    run.workflow_version,
                    run.definition_digest,
                    run.definition_steps,
                ),
            )
            action_ids = rows.insert_actions(conn, started.actions)
            rows.enter_inboxes(conn, run, started.enters)
            rows.record_events(conn, started.events, new_subject=True)
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
            return rows.listed_run(row, (), row[rows.ACTIONS_FROM])
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
            tuple(rows.action(row[rows.ACTIONS_FROM :]) for row in read)
            if read[0][rows.ACTIONS_FROM] is not None
            else ()
        )
        return rows.listed_run(read[0], actions)

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
        return tuple(rows.action(row) for row in reversed(found))

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
                f"JOIN {rows.RUN_VERSION} ORDER BY i.since, i.run_id LIMIT ?",
                (*values, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(rows.listed_run(row) for row in found[:limit]), len(found) > limit)

    def runs_started_between(
        self, workflow_id: int, start: str, end: str, max_runs: int, max_actions: int
    ) -> Slice[Run]:
        conn = self._connection()
        return started.runs_started_between(conn, workflow_id, start, end, max_runs, max_actions)

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
                "WHERE workflow_id = ? AND version = ? AND step_order > ?)"
            )
            guarded += (after.workflow_id, after.workflow_version, change.last_step_order)
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
                    self._known_steps.pop((after.workflow_id, after.workflow_version), None)
                raise errors.LostWrite()
            action_ids = rows.insert_actions(conn, change.actions)
            rows.move_in_inboxes(conn, change)
            rows.record_events(conn, change.events)
        return change.recorded(action_ids)

    # -- deadlines ---------------------------------------------------------

    def due_runs(self, now: str, limit: int) -> list[int]:
        found = (
            self._connection()
            .execute(
                "SELECT id FROM workflow_runs WHERE current_step_due_at IS NOT NULL "
                "AND deadline_passed = 0 AND current_step_due_at <= ? "
                "ORDER BY current_step_due_at LIMIT ?",
                (now, limit),
            )
            .fetchall()
        )
        return [run_id for (run_id,) in found]

    # -- events ------------------------------------------------------------

    def list_events(self, subject: str, after_sequence: Optional[int], limit: int) -> Slice[Event]:
        found = (
            self._connection()
            .execute(
                "SELECT id, subject, sequence, type, body FROM events "
                "WHERE subject = ? AND sequence > ? ORDER BY sequence LIMIT ?",
                (subject, after_sequence or 0, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(Event(*row) for row in found[:limit]), len(found) > limit)

    # -- the outbox: the events' delivery state ----------------------------

    def pending_subjects(self, now: str, limit: int) -> list[str]:
        found = (
            self._connection()
            .execute(
                "SELECT DISTINCT subject FROM events WHERE delivered_at IS NULL "
                "AND (next_attempt_at IS NULL OR next_attempt_at <= ?) LIMIT ?",
                (now, limit),
            )
            .fetchall()
        )
        return [subject for (subject,) in found]

    def pending_batch(self, subject: str) -> list[Pending]:
        # A row per event: each is marked by itself.
        row = (
            self._connection()
            .execute(
                "SELECT id, subject, sequence, type, body, attempts, next_attempt_at FROM events "
                "WHERE subject = ? AND delivered_at IS NULL ORDER BY sequence LIMIT 1",
                (subject,),
            )
            .fetchone()
        )
        return [Pending(Event(*row[:5]), row[5], row[6])] if row else []

    def mark_delivered(self, pending: Pending, now: str, count: int = 1) -> None:
        event = pending.event
        with self._write() as conn:
            conn.execute(
                "UPDATE events SET delivered_at = ? WHERE subject = ? AND sequence >= ? "
                "AND sequence < ? AND delivered_at IS NULL",
                (now, event.subject, event.sequence, event.sequence + count),
            )

    def mark_failed(self, pending: Pending, next_attempt_at: str) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE events SET attempts = attempts + 1, next_attempt_at = ? "
                "WHERE id = ? AND delivered_at IS NULL",
                (next_attempt_at, pending.event.id),
            )

    # -- Idempotency-Keys ------------------------------------------------

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
            record = rows.idempotency_record(row) if row else None
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

    # -- delegations -----------------------------------------------------

    def create_delegation(self, grant: DelegationGrant) -> Delegation:
        # Imported here: a cold start's read never needs it.
        from chalicelib.domain.names import canonical, canonical_principal

        with self._write() as conn:
            granted = grant.made(next_id(conn, "delegations"))
            d = granted.delegation
            conn.execute(
                f"INSERT INTO delegations ({rows.DELEGATION_COLUMNS}, delegator_key, delegate_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*d, canonical(d.delegator), canonical_principal(d.delegate)),
            )
            rows.record_events(conn, granted.events, new_subject=True)
        return d

    def get_delegation(self, delegation_id: int) -> Delegation:
        row = (
            self._connection()
            .execute(
                f"SELECT {rows.DELEGATION_COLUMNS} FROM delegations WHERE id = ?", (delegation_id,)
            )
            .fetchone()
        )
        if row is None:
            raise errors.NotFound(f"Delegation {delegation_id} not found")
        return Delegation(*row)

    def revoke_delegation(self, revocation: DelegationRevocation) -> Delegation:
        after = revocation.after
        with self._write() as conn:
            # The guard: not revoked since it was read.
            changed = conn.execute(
                "UPDATE delegations SET revoked_at = ?, revoked_by = ? "
                "WHERE id = ? AND revoked_at IS NULL",
                (after.revoked_at, after.revoked_by, after.id),
            ).rowcount
            if changed != 1:
                raise errors.Conflict("The delegation was revoked already")
            rows.record_events(conn, revocation.events)
        return after

    def delegations_to(self, delegates: Sequence[str], now: str) -> tuple[Delegation, ...]:
        if not delegates:
            return ()
        marks = ", ".join("?" for _ in delegates)
        found = (
            self._connection()
            .execute(
                f"SELECT {rows.DELEGATION_COLUMNS} FROM delegations "
                f"WHERE delegate_key IN ({marks}) AND ends_at > ? AND revoked_at IS NULL "
                "ORDER BY id",
                (*delegates, now),
            )
            .fetchall()
        )
        return tuple(Delegation(*row) for row in found)

    def list_delegations(
        self,
        delegator: Optional[str],
        delegate: Optional[str],
        active_at: Optional[str],
        after_id: Optional[int],
        limit: int,
    ) -> Slice[Delegation]:
        where = ["id > ?"]
        values: list[object] = [after_id or 0]
        if delegator is not None:
            where.append("delegator_key = ?")
            values.append(delegator)
        if delegate is not None:
            where.append("delegate_key = ?")
            values.append(delegate)
        if active_at is not None:
            where.append(
                "starts_at <= ? AND ends_at > ? AND (revoked_at IS NULL OR revoked_at > ?)"
            )
            values += [active_at, active_at, active_at]
        found = (
            self._connection()
            .execute(
                f"SELECT {rows.DELEGATION_COLUMNS} FROM delegations WHERE {' AND '.join(where)} "
                "ORDER BY id LIMIT ?",
                (*values, limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(Delegation(*row) for row in found[:limit]), len(found) > limit)
