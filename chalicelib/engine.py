"""The rules of approval workflows: validation and the run state machine.

Pure: no SQL, no boto3, no HTTP. Every function takes the storage and plain
values, and returns models or raises a domain error from `errors`.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional

from chalicelib import cursors, errors
from chalicelib.models import (APPROVE, COMPLETED, IN_PROGRESS, REJECT, REJECTED,
                               RUN_STATUSES, Decision, Page, Run, Slice, Step, Workflow)
from chalicelib.storage import Storage

MAX_NAME = 200
MAX_TITLE = 500
MAX_ACTOR = 200
MAX_TEXT = 5_000
MAX_INITIAL_STEPS = 50
# Ids are 64-bit in SQLite and exact up to 2**53 in JSON numbers everywhere.
MAX_ID = 2**53 - 1
DEFAULT_LIMIT = 50
MAX_LIMIT = 100
WORKFLOWS = "workflows"
RUNS = "runs"

Clock = Callable[[], str]


def utc_now() -> str:
    """The current time as an ISO 8601 UTC timestamp with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- workflows -------------------------------------------------------------

def create_workflow(storage: Storage, body: Any, clock: Clock = utc_now) -> Workflow:
    """Define a workflow, optionally with its first steps."""
    fields = _fields(body, required=("name",), optional=("description", "steps"))
    name = _text(fields, "name", MAX_NAME)
    description = _text(fields, "description", MAX_TEXT, required=False)
    steps = fields.get("steps")
    if steps is None:
        steps = []
    if not isinstance(steps, list):
        raise errors.InvalidInput("'steps' must be a list of step names")
    if len(steps) > MAX_INITIAL_STEPS:
        raise errors.InvalidInput(
            f"'steps' may hold at most {MAX_INITIAL_STEPS} names; append more one by one")
    step_names = [_text({"steps[]": step}, "steps[]", MAX_NAME) for step in steps]
    return storage.create_workflow(name, description, step_names, clock())


def get_workflow(storage: Storage, workflow_id: str) -> Workflow:
    """The workflow with its steps in order."""
    return storage.get_workflow(path_id(workflow_id, "Workflow"))


def append_step(storage: Storage, workflow_id: str, body: Any) -> Step:
    """Append a step after the workflow's last one."""
    wid = path_id(workflow_id, "Workflow")
    fields = _fields(body, required=("name",))
    return storage.append_step(wid, _text(fields, "name", MAX_NAME))


# -- runs ------------------------------------------------------------------

def start_run(storage: Storage, body: Any, clock: Clock = utc_now) -> Run:
    """Start a run of a workflow at its first step."""
    fields = _fields(body, required=("workflow_id", "title"))
    workflow_id = _id(fields, "workflow_id")
    title = _text(fields, "title", MAX_TITLE)
    if workflow_id > MAX_ID:
        raise errors.workflow_not_found(workflow_id)
    workflow = storage.get_workflow(workflow_id)
    if not workflow.steps:
        raise errors.Conflict(
            f"Workflow {workflow_id} has no steps; append one before starting a run")
    return storage.create_run(workflow, title, clock())


def get_run(storage: Storage, run_id: str) -> Run:
    """The run's state and its full history."""
    return storage.get_run(path_id(run_id, "Run"))


def approve(storage: Storage, run_id: str, body: Any, clock: Clock = utc_now) -> Run:
    """Approve the current step: move to the next step, or complete the run."""
    return _decide(storage, run_id, body, APPROVE, clock)


def reject(storage: Storage, run_id: str, body: Any, clock: Clock = utc_now) -> Run:
    """Reject the current step: the run ends as rejected."""
    return _decide(storage, run_id, body, REJECT, clock)


def _decide(storage: Storage, run_id: str, body: Any, action: str, clock: Clock) -> Run:
    rid = path_id(run_id, "Run")
    fields = _fields(body, required=("actor",), optional=("comment", "expected_step_id"))
    actor = _text(fields, "actor", MAX_ACTOR)
    comment = _text(fields, "comment", MAX_TEXT, required=False)
    expected = _id(fields, "expected_step_id") if fields.get("expected_step_id") is not None \
        else None
    run = storage.get_run(rid)
    current = _current_step(run, expected)
    if action == REJECT:
        next_step, status = None, REJECTED
    else:
        next_step = storage.next_step(run.workflow_id, current.step_order)
        status = IN_PROGRESS if next_step else COMPLETED
    try:
        return storage.record_decision(
            run, Decision(action, actor, comment, status, next_step, clock()))
    except errors.StaleRun:
        # Another decision won the race; say where the run is now.
        _current_step(storage.get_run(rid), current.id)
        raise


def _current_step(run: Run, expected_step_id: Optional[int]) -> Step:
    """The step a decision on `run` applies to; Conflict if there is none or
    it is not the one the caller expected."""
    if run.status != IN_PROGRESS or run.current_step is None:
        raise errors.Conflict("Run is not in progress")
    step = run.current_step
    if expected_step_id is not None and step.id != expected_step_id:
        raise errors.StaleRun(
            f"Run is at step {step.name!r} (id {step.id}), not at step {expected_step_id}",
            current_step_id=step.id)
    return step


# -- lists -------------------------------------------------------------------

def list_workflows(storage: Storage, query: Mapping[str, Any]) -> Page:
    """One page of workflows by id ascending (query parameters: limit, cursor)."""
    params = _query(query, ("limit", "cursor"))
    limit = _limit(params)
    after = _position(params, WORKFLOWS, {})
    return _page(storage.list_workflows(after, limit), WORKFLOWS, {})


def list_runs(storage: Storage, query: Mapping[str, Any]) -> Page:
    """One page of runs newest first (query: workflow_id, status, limit, cursor)."""
    params = _query(query, ("workflow_id", "status", "limit", "cursor"))
    workflow_id = _positive(params, "workflow_id")
    status = params.get("status")
    if status is not None and status not in RUN_STATUSES:
        raise errors.InvalidInput(f"'status' must be one of {', '.join(RUN_STATUSES)}")
    limit = _limit(params)
    filters = {"workflow_id": workflow_id, "status": status}
    before = _position(params, RUNS, filters)
    if workflow_id is not None and workflow_id > MAX_ID:
        return Page((), None)  # no workflow has such an id
    found = storage.list_runs(workflow_id, status, before, limit)
    return _page(found, RUNS, filters)


def _page(found: Slice[Any], list_name: str, filters: cursors.Filter) -> Page:
    """The page of `found`, with a cursor that continues after its last item."""
    more = found.more and found.items
    return Page(found.items,
                cursors.issue(list_name, filters, found.items[-1].id) if more else None)


def _query(query: Mapping[str, Any], allowed: tuple[str, ...]) -> dict[str, str]:
    """The query parameters, each given once, all of them known."""
    unknown = sorted(set(query) - set(allowed))
    if unknown:
        raise errors.InvalidInput(
            f"Unknown query parameter {unknown[0]!r}; allowed: {', '.join(allowed)}")
    params: dict[str, str] = {}
    getlist = getattr(query, "getlist", None)  # Chalice's MultiDict keeps repeats
    for name in query:
        values = getlist(name) if getlist else [query[name]]
        if len(values) != 1:
            raise errors.InvalidInput(f"Give the query parameter {name!r} at most once")
        params[name] = values[0]
    return params


def _limit(params: Mapping[str, str]) -> int:
    raw = params.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    limit = _query_integer(raw)
    if limit is None or limit > MAX_LIMIT:
        raise errors.InvalidInput(f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    return limit


def _positive(params: Mapping[str, str], name: str) -> Optional[int]:
    """A positive integer query parameter; above MAX_ID it names nothing."""
    raw = params.get(name)
    if raw is None:
        return None
    value = _query_integer(raw)
    if value is None:
        raise errors.InvalidInput(f"{name!r} must be a positive integer")
    return value


def _query_integer(raw: str) -> Optional[int]:
    """A positive integer in ASCII digits (leading zeros allowed), MAX_ID + 1 for
    any beyond every id; None if `raw` is not one."""
    digits = raw.lstrip("0")
    if not (raw.isascii() and raw.isdigit()) or not digits:
        return None
    # No int() of thousands of digits: past 16 it is beyond any id anyway.
    return int(digits) if len(digits) <= 16 else MAX_ID + 1


def _position(params: Mapping[str, str], list_name: str,
              filters: cursors.Filter) -> Optional[int]:
    cursor = params.get("cursor")
    return None if cursor is None else cursors.position(cursor, list_name, filters)


# -- input validation --------------------------------------------------------

def path_id(raw: str, kind: str) -> int:
    """A positive integer id from a URL path; anything else names nothing."""
    if not (raw.isascii() and raw.isdigit()) or raw.startswith("0") or len(raw) > 16 \
            or int(raw) > MAX_ID:
        raise errors.NotFound(f"{kind} {raw!r} not found: ids are positive integers")
    return int(raw)


def _fields(body: Any, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise errors.InvalidInput("The request body must be a JSON object")
    unknown = sorted(set(body) - set(required) - set(optional))
    if unknown:
        allowed = ", ".join(required + optional)
        raise errors.InvalidInput(f"Unknown field {unknown[0]!r}; allowed: {allowed}")
    missing = [name for name in required if body.get(name) is None]
    if missing:
        raise errors.InvalidInput(f"Missing required field {missing[0]!r}")
    return body


def _text(fields: Mapping[str, Any], name: str, limit: int, required: bool = True) -> str:
    value = fields.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise errors.InvalidInput(f"{name!r} must be a string")
    if required:
        value = value.strip()
        if not value:
            raise errors.InvalidInput(f"{name!r} must not be blank")
    if len(value) > limit:
        raise errors.InvalidInput(f"{name!r} must be at most {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.InvalidInput(f"{name!r} is not valid Unicode text") from exc
    return value


def _id(fields: Mapping[str, Any], name: str) -> int:
    value: Optional[Any] = fields.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.InvalidInput(f"{name!r} must be a positive integer")
    return value
