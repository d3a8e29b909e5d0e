"""Delivering recorded events: at least once, in order per subject, durably.

The outbox (events recorded with their transitions, chalicelib/domain/events.py)
holds each event's delivery state: delivered or not, failed attempts, and
when the next attempt is due. A subject's (a run's, a workflow's) pending
events go out one at a time in `sequence` order: the first pending one is
sent, and only once it succeeded is the next one sent. A failure leaves it
first, due again after a jittered backoff (chalicelib/delivery/webhooks.py), and
every later event of that subject waits behind it; other subjects go on.

Every step is a write to the storage, so a process killed at any point
loses nothing: an event sent but not yet marked goes again (with the same
id: receivers dedupe by it), one not yet sent is sent by the next process.

Sinks: `log` writes each event as one JSON line on standard output (whole:
chalicelib/log_lines.py);
`webhook` POSTs it, signed (WORKFLOW_WEBHOOK_URL, WORKFLOW_WEBHOOK_SECRET).
WORKFLOW_EVENTS picks one; without it, `webhook` when a URL is set, else `log`.
The same code sends locally (the dispatcher thread of chalicelib/background.py,
under make run or chalice local)
and in the cloud (app.deliver_events, fed by SQS).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Optional

from chalicelib import log_lines
from chalicelib.domain.models import Event
from chalicelib.domain.record import Record
from chalicelib.storage import Outbox

LOGGER = log_lines.own_logger("approval-workflows.events")

MODE_VARIABLE = "WORKFLOW_EVENTS"
URL_VARIABLE = "WORKFLOW_WEBHOOK_URL"
SECRET_VARIABLE = "WORKFLOW_WEBHOOK_SECRET"
LOG, WEBHOOK = "log", "webhook"
# Subjects read per pass of the dispatcher.
SUBJECTS_PER_PASS = 100

# Sends one event at a time (Unix seconds); True once it is delivered.
Sink = Callable[[Event, float], bool]
Clock = Callable[[], float]


class Blocked(Record):
    """Where a subject's delivery stopped: the event that waits, and until when."""

    event: Event
    until: str


def iso(at: float) -> str:
    """Unix seconds as the ISO 8601 UTC timestamps the service writes."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds_until(at: str, now: float) -> float:
    """Seconds from Unix time `now` to the ISO 8601 time `at` (negative if past)."""
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() - now


def deliver_subject(
    outbox: Outbox,
    subject: str,
    sink: Sink,
    now: float,
    delay: Callable[[int], float],
    through: Optional[int] = None,
) -> Optional[Blocked]:
    """Send the subject's pending events that are due, in order, until one
    fails, or none is left, or the event numbered `through` (where given)
    went out; where it stopped (None: delivered). Each batch the outbox hands
    out (the events one write records together) is sent whole and then
    marked once: a crash before the mark sends its events again, same ids."""
    while True:
        batch = outbox.pending_batch(subject)
        if not batch:
            return None
        head = batch[0]
        if head.next_attempt_at is not None and head.next_attempt_at > iso(now):
            return Blocked(head.event, head.next_attempt_at)
        sent = 0
        while sent < len(batch) and sink(batch[sent].event, now):
            sent += 1
        if sent:
            outbox.mark_delivered(head, iso(now), sent)
        if sent < len(batch):
            failed = batch[sent]
            until = iso(now + delay(failed.attempts + 1))
            outbox.mark_failed(failed, until)
            return Blocked(failed.event, until)
        if through is not None and batch[-1].event.sequence >= through:
            # Later events have messages of their own: no read to find them.
            return None


def deliver_due(outbox: Outbox, sink: Sink, clock: Clock, delay: Callable[[int], float]) -> int:
    """One pass over every subject with a due event; how many subjects it saw."""
    subjects = outbox.pending_subjects(iso(clock()), SUBJECTS_PER_PASS)
    for subject in subjects:
        deliver_subject(outbox, subject, sink, clock(), delay)
    return len(subjects)


# -- sinks ---------------------------------------------------------------------


def log_sink(event: Event, now: float) -> bool:
    """Write the event as one JSON line on standard output, whole, beside the
    access lines of the request threads."""
    log_lines.write(event.body)
    return True


def configured_sink() -> Sink:
    """The sink the environment names; ValueError, saying what to set, if it
    names one that cannot work."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    mode = os.environ.get(MODE_VARIABLE, "").strip().lower() or (WEBHOOK if url else LOG)
    if mode == LOG:
        return log_sink
    if mode != WEBHOOK:
        raise ValueError(f"{MODE_VARIABLE} is {mode!r}: set it to 'log' or 'webhook'")
    if not url:
        raise ValueError(f"{MODE_VARIABLE}=webhook needs {URL_VARIABLE}, the receiver's URL")
    from chalicelib import secret_store
    from chalicelib.delivery import webhooks

    secret = secret_store.value(SECRET_VARIABLE)
    if not secret:
        raise ValueError(
            f"{URL_VARIABLE} is set but {SECRET_VARIABLE} is not: events are always signed; "
            "set it to 'whsec_' followed by a base64 key of at least 24 bytes"
        )
    try:
        key = webhooks.secret_key(secret.strip())
    except webhooks.InvalidSecret as exc:
        raise ValueError(f"{SECRET_VARIABLE}: {exc}") from exc
    return webhooks.Webhook(url, key).send
