"""HTTP routes of the approval-workflow service: parse, call the engine, shape."""
from __future__ import annotations

import functools
import json
import logging
import os
import sys
import time
from typing import Any, Callable, Optional

from chalice import Chalice, CORSConfig, Response

from chalicelib import engine, errors
from chalicelib.models import StoredResponse
from chalicelib.storage import Storage, create_storage


class StageCORS(CORSConfig):
    """CORS whose allowed origin each stage sets with WORKFLOW_CORS_ORIGIN."""

    @property  # type: ignore[override]
    def allow_origin(self) -> str:
        return os.environ.get("WORKFLOW_CORS_ORIGIN", "*")

    @allow_origin.setter
    def allow_origin(self, value: str) -> None:
        """The origin comes from the environment when asked, not from here."""


app = Chalice(app_name="approval-workflows")
app.api.cors = StageCORS(allow_headers=["Idempotency-Key", "X-Request-Id"],
                         expose_headers=["Location", "X-Request-Id", "Idempotent-Replayed"],
                         max_age=600)

access_log = logging.getLogger("approval-workflows.access")
access_log.addHandler(logging.StreamHandler(sys.stdout))
access_log.setLevel(logging.INFO)
access_log.propagate = False

_STORAGE: Optional[Storage] = None
_OPENAPI: Optional[dict[str, Any]] = None

_STATUS = {errors.InvalidInput: 400, errors.NotFound: 404, errors.Conflict: 409,
           errors.IdempotencyMismatch: 422, errors.Unavailable: 503}
# Seconds since the epoch for Idempotency-Key leases and expiry; tests set their own.
idempotency_clock: Callable[[], float] = time.time


def get_storage() -> Storage:
    """The process's storage, created on first use so cold starts stay light."""
    global _STORAGE
    if _STORAGE is None:
        _STORAGE = create_storage()
    return _STORAGE


def _status_of(exc: errors.WorkflowError) -> int:
    return next(code for kind, code in _STATUS.items() if isinstance(exc, kind))


def error_response(status: int, message: str, **details: Any) -> Response:
    return Response(body={"error": message, **details}, status_code=status,
                    headers={"Content-Type": "application/json"})


def answers(status: int, location: Optional[Callable[[Any], str]] = None
            ) -> Callable[[Callable[..., Any]], Callable[..., Response]]:
    """Serialise what the view returns with `status` (and a Location header
    from `location`); domain errors become 4xx/5xx. A POST with an
    Idempotency-Key runs once per key (chalicelib/idempotency.py)."""
    def decorate(view: Callable[..., Any]) -> Callable[..., Response]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Response:
            def respond() -> Response:
                try:
                    result = view(*args, **kwargs)
                except errors.WorkflowError as exc:
                    return error_response(_status_of(exc), exc.message, **exc.details)
                headers = {"Content-Type": "application/json"}
                if location:
                    headers["Location"] = _base_path() + location(result)
                return Response(body=result.to_dict(), status_code=status, headers=headers)

            request = app.current_request
            key = request.headers.get("Idempotency-Key")
            if key is None or request.method != "POST":
                return respond()
            return _answer_once(key, respond)
        return wrapper
    return decorate


def _answer_once(key: str, respond: Callable[[], Response]) -> Response:
    """respond()'s response to the first request with `key`, replayed to its retries."""
    # Imported here: only requests with a key need it, and importing it at the
    # top cost every cold start 0.7 ms (chalicelib/idempotency.py).
    from chalicelib import idempotency

    request = app.current_request
    try:
        claim = idempotency.new_claim(
            idempotency.checked_key(key),
            idempotency.fingerprint(request.method, _request_path(), request.raw_body),
            idempotency_clock())
        stored, replayed = idempotency.respond_once(get_storage(), claim,
                                                    lambda: _kept(respond()))
    except errors.WorkflowError as exc:
        return error_response(_status_of(exc), exc.message, **exc.details)
    headers = {"Content-Type": "application/json"}
    if stored.location is not None:
        headers["Location"] = stored.location
    if replayed:
        headers[idempotency.REPLAYED_HEADER] = "true"
    return Response(body=json.loads(stored.body), status_code=stored.status, headers=headers)


def _kept(response: Response) -> StoredResponse:
    """The parts of our response that a replay repeats: status, body, Location."""
    body = json.dumps(response.body, separators=(",", ":"))
    return StoredResponse(response.status_code, body, response.headers.get("Location"))


def _request_path() -> str:
    """The path requested, without API Gateway's stage: the route with its ids."""
    request = app.current_request
    path: str = request.path
    for name, value in (request.uri_params or {}).items():
        path = path.replace(f"{{{name}}}", value)
    return path


def _base_path() -> str:
    """What precedes our routes in the URL: API Gateway's stage or base path."""
    request = app.current_request
    full = request.context.get("path") or request.path
    route_path = request.path
    return full[:-len(route_path)] if full.endswith(route_path) else ""


def json_body() -> Any:
    """The request body as JSON; InvalidInput if it is not JSON."""
    raw = app.current_request.raw_body
    try:
        return json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise errors.InvalidInput("The request body is not valid JSON") from exc


@app.middleware("http")
def observe(request: Any, get_response: Callable[[Any], Response]) -> Response:
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
    access_log.info(json.dumps({
        "request_id": request_id, "method": request.method,
        "route": request.context.get("resourcePath"), "status": response.status_code,
        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        **_logged_ids(request, response)}))
    return response


def _new_request_id() -> str:
    # Imported here: API Gateway gives every request an id, and importing uuid
    # (which pulls in platform) at the top cost every cold start 1.5 ms.
    import uuid

    return uuid.uuid4().hex


def _logged_ids(request: Any, response: Response) -> dict[str, int]:
    """The workflow and run a request was about, from its path or its answer."""
    ids = {name: int(value) for name, value in (request.uri_params or {}).items()
           if value.isdigit()}
    body = response.body
    if not isinstance(body, dict):
        return ids
    if request.context.get("resourcePath") in ("/workflows", "/runs") \
            and isinstance(body.get("id"), int):
        created = "run_id" if "title" in body else "workflow_id"
        ids[created] = body["id"]
    if isinstance(body.get("workflow_id"), int):
        ids.setdefault("workflow_id", body["workflow_id"])
    return ids


@app.route("/workflows", methods=["POST"])
@answers(201, location=lambda workflow: f"/workflows/{workflow.id}")
def create_workflow() -> Any:
    return engine.create_workflow(get_storage(), json_body())


@app.route("/workflows", methods=["GET"])
@answers(200)
def list_workflows() -> Any:
    return engine.list_workflows(get_storage(), app.current_request.query_params or {})


@app.route("/workflows/{workflow_id}", methods=["GET"])
@answers(200)
def get_workflow(workflow_id: str) -> Any:
    return engine.get_workflow(get_storage(), workflow_id)


@app.route("/workflows/{workflow_id}/steps", methods=["POST"])
@answers(201, location=lambda step: f"/workflows/{step.workflow_id}")
def append_step(workflow_id: str) -> Any:
    return engine.append_step(get_storage(), workflow_id, json_body())


@app.route("/runs", methods=["POST"])
@answers(201, location=lambda run: f"/runs/{run.id}")
def start_run() -> Any:
    return engine.start_run(get_storage(), json_body())


@app.route("/runs", methods=["GET"])
@answers(200)
def list_runs() -> Any:
    return engine.list_runs(get_storage(), app.current_request.query_params or {})


@app.route("/runs/{run_id}", methods=["GET"])
@answers(200)
def get_run(run_id: str) -> Any:
    return engine.get_run(get_storage(), run_id)


@app.route("/runs/{run_id}/approve", methods=["POST"])
@answers(200)
def approve(run_id: str) -> Any:
    return engine.approve(get_storage(), run_id, json_body())


@app.route("/runs/{run_id}/reject", methods=["POST"])
@answers(200)
def reject(run_id: str) -> Any:
    return engine.reject(get_storage(), run_id, json_body())


@app.route("/openapi.json", methods=["GET"])
def openapi_document() -> Response:
    """The OpenAPI document, its servers pointing at the stage that served it."""
    document = {**_openapi(), "servers": [{"url": _base_path() or "/"}]}
    return Response(body=document, status_code=200,
                    headers={"Content-Type": "application/json"})


def _openapi() -> dict[str, Any]:
    """chalicelib/openapi.json, read on first use: no request but this one needs it."""
    global _OPENAPI
    if _OPENAPI is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chalicelib",
                            "openapi.json")
        with open(path, encoding="utf-8") as document:
            _OPENAPI = json.load(document)
    return _OPENAPI
