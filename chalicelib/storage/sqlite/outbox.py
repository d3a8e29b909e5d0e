"""SQLite's outbox: recording events in the events table inside a change's
transaction, and their delivery state (chalicelib/storage's Outbox, which
chalicelib/delivery/dispatch.py sends from)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Optional

from chalicelib.domain.models import Event, EventDraft, Pending
from chalicelib.storage.sqlite.connections import Connections


class OutboxState(Connections):
    """The Outbox part of the SQLite adapter."""

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
        event = draft.numbered(sequence + 1)
        last[draft.subject] = event.sequence
        conn.execute(
            "INSERT INTO events (id, subject, sequence, type, body) VALUES (?, ?, ?, ?, ?)",
            (event.id, event.subject, event.sequence, event.type, event.body),
        )
