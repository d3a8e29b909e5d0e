"""One JSON line per request on standard output (CloudWatch Logs on Lambda).

The line holds the request id, method, route, status and duration, and the
workflow and run the request was about: ids from the path that the routes
accept as ids, and the ids of the record a view returned. Never bodies,
actors or comments. Every response also gets the request id as X-Request-Id,
and Chalice's own errors (405, 415, 500) our error shape.

The line is written to standard output directly, one write and a flush under
the lock that every line on standard output takes (chalicelib/log_lines.py,
so that an event line of the dispatcher thread never cuts it), not through
`logging`: a logger call finds its caller, builds a record, takes a
lock and formats, 15 to 20 µs per request, a tenth of the service's time per
request in benchmark 1. Diagnostics (the storage's, authentication's) still go
through `logging`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional, TextIO

from chalice.app import Chalice, Request, Response

from chalicelib import log_lines
from chalicelib.api import paths
from chalicelib.domain.shapes import json_encoder

# Where the lines go: None is the process's standard output at the time of
# writing (so that whoever replaces sys.stdout, a test's capture included, gets
# them); set_stream points them elsewhere.
_stream: Optional[TextIO] = None

# Where a request's view leaves what the line should say about it.
_IDS = "approval-workflows.ids"
_REPLAYED = "approval-workflows.replayed"
_PATH_IDS = {"workflow_id", "run_id"}
# A line as json.dumps writes it.
_encode = json_encoder(separators=(", ", ": "))


def install(app: Chalice) -> None:
    """Log every request `app` serves, and give every response a request id."""
    app.register_middleware(observe, "http")


def note_ids(request: Request, ids: Mapping[str, int]) -> None:
    """Say in the request's line which workflow and run it was about."""
    request.context.setdefault(_IDS, {}).update(ids)


def note_replayed(request: Request) -> None:
    """Say in the request's line that it replayed a kept response."""
    request.context[_REPLAYED] = True


def observe(request: Request, get_response: Callable[[Request], Response]) -> Response:
    """Give every response a request id and our error shape (also Chalice's
    own 405, 415 and 500), and log one JSON line per request."""
    started = time.perf_counter()
    request_id = request.context.get("requestId") or new_request_id()
    response = get_response(request)
    body = response.body
    if isinstance(body, dict) and set(body) == {"Code", "Message"}:
        response.body = {"error": body["Message"]}
        response.headers["Content-Type"] = "application/json"
    response.headers["X-Request-Id"] = request_id
    line: dict[str, Any] = {
        "request_id": request_id,
        "method": request.method,
        "route": request.context.get("resourcePath"),
        "status": response.status_code,
        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        **_path_ids(request),
        **request.context.get(_IDS, {}),
    }
    if request.context.get(_REPLAYED):
        line["replayed"] = True
    write(line)
    return response


def write(line: Mapping[str, Any]) -> None:
    """Write one access line: its JSON and a newline, flushed at once."""
    log_lines.write(_encode(line), _stream)


def set_stream(stream: Optional[TextIO]) -> None:
    """Write the lines to `stream` from now on (None: standard output again)."""
    global _stream
    _stream = stream


def _path_ids(request: Request) -> dict[str, int]:
    """The ids in the path, where the routes would accept them as ids."""
    return {
        name: int(value)
        for name, value in (request.uri_params or {}).items()
        if name in _PATH_IDS and paths.is_path_id(value)
    }


def new_request_id() -> str:
    """A request id where API Gateway gave none (locally, in tests): 128 random
    bits in hex, as uuid4().hex spells them, without importing uuid (which
    pulls in platform: 1.5 ms of every cold start) or building a UUID."""
    return os.urandom(16).hex()
