"""The work a local server does beside its requests, in threads of its process.

Deployed, functions of their own send the events and sweep the deadlines
(app.deliver_events, app.sweep_deadlines, app.notify_people). Locally,
three daemon threads do: the event dispatcher sends the events each change
recorded (chalicelib/delivery/dispatch.py: WORKFLOW_EVENTS, WORKFLOW_WEBHOOK_URL,
WORKFLOW_WEBHOOK_SECRET) within a second of their commit, and hands each to
the notifier, which tells the people it concerns (chalicelib/delivery/notifier.py:
WORKFLOW_MAIL, by default .eml files beside the database); the deadline
sweeper (engine.sweep) runs every WORKFLOW_SWEEP_SECONDS (default 10).

`make run` (scripts/local_server.py) starts them before it serves.
`chalice local` serves app.py with chalice's own server, which knows of no
such work: the app starts it on the first request that server hands it
(`when_served_locally`), and there also lets each request write one access
line (http.server writes one of its own besides the service's). Nowhere else:
on Lambda chalice.local is never imported, and chalice.test.Client serves
the app without chalice's server.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chalice.app import Chalice, Request, Response

    from chalicelib.storage import Backend

# How often the dispatcher looks for events to send: well within a second.
DISPATCH_SECONDS = 0.25
SWEEP_VARIABLE = "WORKFLOW_SWEEP_SECONDS"
DEFAULT_SWEEP_SECONDS = 10.0
# A thread whose storage cannot answer tries again after this long (the
# storage's own log line says why; requests answer 503 meanwhile).
STORAGE_RETRY_SECONDS = 5.0
LOGGER = logging.getLogger("approval-workflows.background")


class Repeating:
    """A daemon thread that calls `task` every `interval` seconds until stopped."""

    def __init__(self, name: str, task: Callable[[], object], interval: float) -> None:
        self._task = task
        self._interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Repeating:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(30)

    def _run(self) -> None:
        from chalicelib.domain import errors

        while not self._stopped.is_set():
            wait = self._interval
            try:
                self._task()
            except errors.Unavailable:
                wait = max(wait, STORAGE_RETRY_SECONDS)
            self._stopped.wait(wait)


def sweep_seconds() -> float:
    raw = os.environ.get(SWEEP_VARIABLE, "").strip()
    try:
        seconds = float(raw) if raw else DEFAULT_SWEEP_SECONDS
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 86400:
        raise ValueError(f"{SWEEP_VARIABLE} is {raw!r}: set it to seconds, from 0.1 to 86400")
    return seconds


class Background:
    """The threads that serve beside the HTTP server, stopped with it."""

    def __init__(self) -> None:
        self.threads: list[Repeating] = []
        self._storage: list[Backend] = []

    def storage(self) -> Backend:
        """Created on first use, as the app does: a storage misconfigured now
        answers 503 to requests, and is tried again here."""
        from chalicelib.storage import create_storage

        if not self._storage:
            self._storage.append(create_storage())
        return self._storage[0]

    def start(self) -> Background:
        """Start them, as the environment configures them; ValueError, saying
        what to set, if it names something that cannot work."""
        from chalicelib import engine
        from chalicelib.delivery import dispatch, notifier, webhooks

        telling = notifier.local(self.storage)
        sink = telling.after(dispatch.configured_sink())
        every = sweep_seconds()

        def deliver() -> None:
            dispatch.deliver_due(self.storage(), sink, time.time, webhooks.retry_delay)

        self.threads += [
            Repeating("event-dispatcher", deliver, DISPATCH_SECONDS).start(),
            Repeating("notifier", lambda: telling.send_due(time.time()), DISPATCH_SECONDS).start(),
            Repeating("deadline-sweeper", lambda: engine.sweep(self.storage()), every).start(),
        ]
        return self

    def stop(self) -> None:
        for thread in self.threads:
            thread.stop()


_lock = threading.Lock()
_running: list[Background] = []
# Set by a server that decides about the background work itself (make run's).
_left_to_server: list[bool] = []


def start_once() -> Background:
    """The process's background work, started on the first call (ValueError,
    saying what to set, if the environment names something that cannot work:
    and then nothing is started)."""
    with _lock:
        if not _running:
            _running.append(Background().start())
        return _running[0]


def stop() -> None:
    """Stop the process's background work, if it was started."""
    with _lock:
        while _running:
            _running.pop().stop()


def leave_to_server() -> None:
    """The server of this process starts the background work itself, or none
    (scripts/local_server.py, and the tests that serve the app through it):
    the app's first request starts nothing."""
    _left_to_server.append(True)


def when_served_locally(app: Chalice) -> None:
    """Start the background work on the first request that chalice's local
    server (`chalice local`) hands `app`, and write one access line per request
    there. Nothing at all where chalice.local is not loaded (Lambda)."""
    # Taken from the modules loaded, not imported: the deployment package
    # ships chalice's runtime alone, without chalice.local.
    local: Any = sys.modules.get("chalice.local")
    if local is None:
        return
    answered = threading.local()
    # Only chalice's own handler is changed, which serves `chalice local`
    # alone: make run's overrides what it changes, chalice.test uses none.
    _one_access_line(local.ChaliceRequestHandler, answered)
    checked: list[bool] = []

    def first_request(request: Request, get_response: Callable[[Request], Response]) -> Response:
        answered.by_app = True
        if not checked:
            checked.append(_served_by_chalice(app, local.LocalChalice))
        return get_response(request)

    app.register_middleware(first_request, "http")


def _served_by_chalice(app: Chalice, local_class: type) -> bool:
    """Whether chalice's own local server serves `app` (`chalice local` gives
    the app its `local_class`, LocalChalice; chalice.test.Client does not, and
    make run's server says it leaves nothing to the app): if so, start the
    background work."""
    if _left_to_server or not isinstance(app, local_class):
        return False
    try:
        start_once()
    except ValueError as exc:  # an event sink that cannot work: requests are still served
        LOGGER.error("events are not sent and deadlines not swept: %s", exc)
    return True


def _one_access_line(handler: Any, answered: threading.local) -> None:
    """One access line per request, the service's: http.server's own line of
    each request ("GET /runs HTTP/1.1" 200 -, on standard error) is not
    written, and what chalice's server answers without the app (an unknown
    path's 403) gets the service's line, which the app did not write."""
    parse_request = handler.parse_request

    def parse_and_stamp(self: Any) -> bool:
        self.approval_workflows_started = time.perf_counter()
        return bool(parse_request(self))

    def log_request(self: Any, code: Any = "-", size: Any = "-") -> None:
        if getattr(answered, "by_app", False):  # the app wrote the line
            answered.by_app = False
            return
        from chalicelib.api import access_log

        started = getattr(self, "approval_workflows_started", time.perf_counter())
        line = {
            "request_id": access_log.new_request_id(),
            "method": self.command or None,
            "route": None,
            "status": int(code),
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        }
        access_log.write(line)

    handler.parse_request = parse_and_stamp
    handler.log_request = log_request
