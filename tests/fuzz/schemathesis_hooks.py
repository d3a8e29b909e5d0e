"""Schemathesis hooks: a cursor is a token the service signs, as a bearer token
would be. No schema can describe which strings it issued, so a generated
non-empty cursor is replaced with one the service issued for the generated
list and filters (the empty cursor, the only schema violation a query string
can carry, is left to be refused)."""

from __future__ import annotations

from typing import Any

import schemathesis

from chalicelib import cursors, errors, validation

LISTS = {"/workflows": "workflows", "/runs": "runs", "/runs/{run_id}/events": "events"}


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    cursor = (case.query or {}).get("cursor")
    list_name = LISTS.get(case.operation.path)
    if not isinstance(cursor, str) or not cursor or list_name is None:
        return case
    query = {name: str(value) for name, value in case.query.items() if not isinstance(value, list)}
    try:
        if list_name == "runs":
            parsed = validation.run_query(query)
            filters = {"workflow_id": parsed.workflow_id, "status": parsed.status}
        elif list_name == "events":
            validation.event_query(query)
            run_id = str((case.path_parameters or {}).get("run_id"))
            if not validation.is_path_id(run_id):
                return case  # names no run: 404 anyway
            filters = {"run_id": int(run_id)}
        else:
            validation.workflow_query(query)
            filters = {}
    except errors.InvalidInput:
        return case  # refused for another reason anyway
    case.query["cursor"] = cursors.issue(list_name, filters, 1)
    return case
