"""Delivery from the outbox (chalicelib/delivery/dispatch.py) on each backend: in order
per subject, each event until it succeeds, durably; a clock and a sink are
injected, so nothing sleeps and nothing goes over the network."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.delivery import dispatch, webhooks
from chalicelib.domain.models import Event
from chalicelib.storage import Backend
from tests.support.backends import Opener
from tests.support.receiver import SECRET, Receiver
from tests.support.stored import NOW, decide, first_pending, stored_run, workflow_with_steps

T = 1_900_000_000.0


class Sink:
    """Records what it is given; fails while `failing` holds subjects (or all: True)."""

    def __init__(self) -> None:
        self.sent: list[Event] = []
        self.failing: Any = set()

    def __call__(self, event: Event, now: float) -> bool:
        self.sent.append(event)
        return not (self.failing is True or event.subject in self.failing)

    def seen(self) -> list[tuple[str, int]]:
        return [(event.subject, event.sequence) for event in self.sent]


def delay(attempts: int) -> float:
    return 10.0 * attempts


def deliver(outbox: Backend, sink: Sink, at: float) -> int:
    return dispatch.deliver_due(outbox, sink, lambda: at, delay)


def two_runs(storage: Backend) -> tuple[str, str]:
    workflow = workflow_with_steps(storage, "A", "B")
    first = decide(storage, stored_run(storage, workflow, "one", NOW))
    second = stored_run(storage, workflow, "two", NOW)
    return f"runs/{first.id}", f"runs/{second.id}"


def test_every_event_goes_once_in_order_per_subject(storage: Backend) -> None:
    first, second = two_runs(storage)
    sink = Sink()

    deliver(storage, sink, T)

    assert [seq for subject, seq in sink.seen() if subject == first] == [1, 2, 3, 4]
    assert [seq for subject, seq in sink.seen() if subject == second] == [1, 2]
    assert len(sink.sent) == 7  # and the workflow's one
    assert deliver(storage, sink, T + 1) == 0
    assert len(sink.sent) == 7
    assert [
        json.loads(event.body)["sequence"] for event in sink.sent if event.subject == first
    ] == [f"{n:020d}" for n in (1, 2, 3, 4)]


def test_a_failure_holds_its_subject_back_until_its_retry_is_due(storage: Backend) -> None:
    first, second = two_runs(storage)
    sink = Sink()
    sink.failing = {first}

    deliver(storage, sink, T)
    assert [seq for subject, seq in sink.seen() if subject == first] == [1]  # tried once
    assert [seq for subject, seq in sink.seen() if subject == second] == [1, 2]

    sink.sent.clear()
    deliver(storage, sink, T + 9.9)  # the retry is due at T + 10
    assert sink.sent == []
    deliver(storage, sink, T + 10)
    assert sink.seen() == [(first, 1)]  # failing still: next due at T + 10 + 20
    sink.sent.clear()
    sink.failing = set()
    deliver(storage, sink, T + 29)
    assert sink.sent == []
    deliver(storage, sink, T + 30)
    assert sink.seen() == [(first, 1), (first, 2), (first, 3), (first, 4)]
    assert len({event.id for event in sink.sent}) == 4


def test_a_retry_sends_the_same_id_and_body(storage: Backend) -> None:
    first, _ = two_runs(storage)
    sink = Sink()
    sink.failing = True
    deliver(storage, sink, T)
    sink.failing = set()
    deliver(storage, sink, T + 10)
    tries = [event for event in sink.sent if event.subject == first and event.sequence == 1]
    assert len(tries) == 2 and tries[0] == tries[1]


def test_delivery_state_outlives_the_process(storage_factory: Opener) -> None:
    storage = storage_factory()
    first, _ = two_runs(storage)
    sink = Sink()
    sink.failing = {first}
    deliver(storage, sink, T)

    # Another process (a restart, another container) goes on where this one stopped.
    reopened = storage_factory()
    sink.sent.clear()
    deliver(reopened, sink, T + 5)
    assert sink.sent == []  # the retry is not due yet
    sink.failing = set()
    deliver(reopened, sink, T + 10)
    assert sink.seen() == [(first, 1), (first, 2), (first, 3), (first, 4)]


def test_an_event_sent_but_not_marked_goes_again_with_its_id(storage: Backend) -> None:
    first, _ = two_runs(storage)
    # A process killed between its send and the mark: the send happened, nothing was written.
    head = first_pending(storage, first)
    assert head is not None and head.event.sequence == 1
    sink = Sink()
    deliver(storage, sink, T)
    assert sink.sent[0].id == head.event.id


def test_marking_twice_is_harmless(storage: Backend) -> None:
    first, _ = two_runs(storage)
    head = first_pending(storage, first)
    assert head is not None
    storage.mark_delivered(head, dispatch.iso(T))
    storage.mark_delivered(head, dispatch.iso(T + 1))
    storage.mark_failed(head, dispatch.iso(T + 100))
    after = first_pending(storage, first)
    assert after is not None and after.event.sequence == 2 and after.attempts == 0


def test_a_subject_goes_out_through_the_event_asked_for_and_stops(storage: Backend) -> None:
    first, _ = two_runs(storage)
    sink = Sink()

    # The run's start: two events, each its own batch on both backends.
    assert dispatch.deliver_subject(storage, first, sink, T, delay, through=1) is None

    assert sink.seen() == [(first, 1)]
    head = first_pending(storage, first)
    assert head is not None and head.event.sequence == 2 and head.attempts == 0


def test_a_failure_inside_a_batch_keeps_the_events_before_it_delivered(storage: Backend) -> None:
    first, _ = two_runs(storage)
    sent: list[int] = []

    def refuses_the_fourth(event: Event, now: float) -> bool:
        sent.append(event.sequence)
        return event.sequence != 4

    # 3 and 4 are one decision's events: one batch on DynamoDB (its action item).
    blocked = dispatch.deliver_subject(storage, first, refuses_the_fourth, T, delay)

    assert sent == [1, 2, 3, 4]
    assert blocked is not None and blocked.event.sequence == 4
    assert blocked.until == dispatch.iso(T + 10)
    head = first_pending(storage, first)
    assert head is not None and head.event.sequence == 4 and head.attempts == 1
    sent.clear()
    assert dispatch.deliver_subject(storage, first, refuses_the_fourth, T + 10, delay) is not None
    assert sent == [4]  # the retry sends the failed event alone, not the one before it
    head = first_pending(storage, first)
    assert head is not None and head.attempts == 2
    sink = Sink()
    assert dispatch.deliver_subject(storage, first, sink, T + 30, delay) is None
    assert sink.seen() == [(first, 4)] and first_pending(storage, first) is None


def test_a_webhook_that_redirects_gets_the_event_again_until_it_accepts_it(
    storage: Backend,
) -> None:
    first, _ = two_runs(storage)
    with Receiver() as receiver:
        hook = webhooks.Webhook(receiver.url, webhooks.secret_key(SECRET))
        receiver.answer = 302
        dispatch.deliver_subject(storage, first, hook.send, T, delay)
        head = first_pending(storage, first)
        assert head is not None and head.event.sequence == 1 and head.attempts == 1
        receiver.answer = None
        dispatch.deliver_subject(storage, first, hook.send, T + 10, delay)
    assert first_pending(storage, first) is None
    tried = [(got.path, got.status, got.headers["webhook-id"]) for got in receiver.received]
    assert tried[:2] == [("/hooks", 302, head.event.id), ("/hooks", 204, head.event.id)]
    assert len(tried) == 5  # then the run's three other events, once each
