"""SQLite's outbox: the delivery state of recorded events, in the events table
(chalicelib/storage's Outbox, which chalicelib/delivery/dispatch.py sends from)."""

from __future__ import annotations

from typing import Optional

from chalicelib.domain.models import Event, Pending
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
