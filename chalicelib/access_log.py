"""One JSON line per request on standard output (CloudWatch Logs on Lambda).

The line holds the request id, method, route, status and duration, and the
workflow and run the request was about: ids from the path that the routes
accept as ids, and the ids of the record a view returned. Never bodies,
actors or comments. Every response also gets the request id as X-Request-Id,
and Chalice's own errors (405, 415, 500) our error shape.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from chalice.app import Chalice, Request, Response

from chalicelib import validation

LOGGER = logging.getLogger("approval-workflows.access")
LOGGER.addHandler(logging.StreamHandler(sys.stdout))
LOGGER.setLevel(logging.INFO)
LOGGER.propagate = False

# Where a request's view leaves what the line should say about it.
_IDS = "approval-workflows.ids"
_REPLAYED = "approval-workflows.replayed"
_PATH_IDS = {"workflow_id", "run_id"}


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
    request_id = request.context.get("requestId") or _new_request_id()
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
    LOGGER.info(json.dumps(line))
    return response


def _path_ids(request: Request) -> dict[str, int]:
    """The ids in the path, where the routes would accept them as ids."""
    return {
        name: int(value)
        for name, value in (request.uri_params or {}).items()
        if name in _PATH_IDS and validation.is_path_id(value)
    }


def _new_request_id() -> str:
    # Imported here: API Gateway gives every request an id, and importing uuid
    # (which pulls in platform) at the top cost every cold start 1.5 ms.
    import uuid

    return uuid.uuid4().hex
