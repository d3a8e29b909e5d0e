"""HTTP routes of the approval-workflow service: parse, call the engine, shape."""
from __future__ import annotations

import functools
import json
from typing import Any, Callable, Optional

from chalice import Chalice, Response

from chalicelib import engine, errors
from chalicelib.storage import Storage, create_storage

app = Chalice(app_name="approval-workflows")

_STORAGE: Optional[Storage] = None

_STATUS = {errors.InvalidInput: 400, errors.NotFound: 404, errors.Conflict: 409,
           errors.Unavailable: 503}


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


def answers(status: int) -> Callable[[Callable[..., Any]], Callable[..., Response]]:
    """Serialise what the view returns with `status`; domain errors become 4xx/5xx."""
    def decorate(view: Callable[..., Any]) -> Callable[..., Response]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Response:
            try:
                result = view(*args, **kwargs)
            except errors.WorkflowError as exc:
                return error_response(_status_of(exc), exc.message, **exc.details)
            return Response(body=result.to_dict(), status_code=status,
                            headers={"Content-Type": "application/json"})
        return wrapper
    return decorate


def json_body() -> Any:
    """The request body as JSON; InvalidInput if it is not JSON."""
    raw = app.current_request.raw_body
    try:
        return json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.InvalidInput("The request body is not valid JSON") from exc


@app.middleware("http")
def uniform_errors(event: Any, get_response: Callable[[Any], Response]) -> Response:
    """Chalice's own errors (405, 415, 500) in the service's error shape."""
    response = get_response(event)
    body = response.body
    if isinstance(body, dict) and set(body) == {"Code", "Message"}:
        response.body = {"error": body["Message"]}
    return response


@app.route("/workflows", methods=["POST"])
@answers(201)
def create_workflow() -> Any:
    return engine.create_workflow(get_storage(), json_body())


@app.route("/workflows/{workflow_id}", methods=["GET"])
@answers(200)
def get_workflow(workflow_id: str) -> Any:
    return engine.get_workflow(get_storage(), workflow_id)


@app.route("/workflows/{workflow_id}/steps", methods=["POST"])
@answers(201)
def append_step(workflow_id: str) -> Any:
    return engine.append_step(get_storage(), workflow_id, json_body())


@app.route("/runs", methods=["POST"])
@answers(201)
def start_run() -> Any:
    return engine.start_run(get_storage(), json_body())


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
