"""Schemathesis hooks: cursors, and the rules of input and conditions.

A cursor is a token the service signs, as a bearer token would be. No schema
can describe which strings it issued, so a generated cursor is valid by the
document and answers 400 (as the document says), which positive_data_acceptance
counts as valid data refused: no document can satisfy that check for a cursor.
A generated non-empty cursor is therefore replaced with one the service issued
for the generated list and filters (the empty cursor, the only schema violation
a query string can carry, is left to be refused), so that pages after the first
are fuzzed too. Every other rule the service applies is either stated by the
document or answered 422 (tests/unit/test_document_rules.py; without these
hooks, test_schemathesis_without_hooks.py finds only the cursor). The rest
keeps valid cases to what the service goes on with, so that runs reach their
later states: an input that meets no stored schema (generated valid
workflows have none; the refusals of invalid schemas are still fuzzed), a
condition that can hold, delegation windows that are open now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis

from chalicelib import cursors, engine
from chalicelib.api import paths, queries, validation
from chalicelib.domain import conditions, content, delegations, errors

LISTS = {
    "/workflows": "workflows",
    "/runs": "runs",
    "/inbox": "inbox",
    "/runs/{run_id}/events": "events",
    "/delegations": "delegations",
    "/workflows/{workflow_id}/versions": "versions",
    "/contacts": "contacts",
}


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Every request of every phase passes here. Not map_case: schemathesis
    (4.32) gives the cases of the unit phases to map_case, but not the steps
    of the stateful phase, which then sent generated cursors. A case changed
    here is validated again before it is sent, so its mode stays true."""
    if _positive(case):
        _within_content_rules(case)
        _within_delegation_rules(case)
    _issued_cursor(case)


def _issued_cursor(case: Any) -> None:
    cursor = (case.query or {}).get("cursor")
    list_name = LISTS.get(case.operation.path)
    if not isinstance(cursor, str) or not cursor or list_name is None:
        return
    sent = _as_sent(case.query)
    query = {
        name: values[0] for name, values in sent.items() if not isinstance(case.query[name], list)
    }
    try:
        if list_name == "runs":
            parsed = queries.run_query(query)
            filters: dict[str, Any] = {"workflow_id": parsed.workflow_id, "status": parsed.status}
        elif list_name == "inbox":
            named = sent.get("group", [])
            without = {name: value for name, value in query.items() if name != "group"}
            actor = queries.inbox_query(without, verified=False).actor
            assert actor is not None
            filters = engine.inbox_filters(actor, validation.groups(named) or frozenset())
        elif list_name == "events":
            queries.event_query(query)
            run_id = str((case.path_parameters or {}).get("run_id"))
            if not paths.is_path_id(run_id):
                return  # names no run: 404 anyway
            filters = {"run_id": int(run_id)}
        elif list_name == "delegations":
            asked = queries.delegation_query(query)
            filters = {
                "delegator": asked.delegator,
                "delegate": asked.delegate,
                "active_at": asked.active_at,
            }
        elif list_name == "contacts":
            queries.workflow_query(query)
            filters = {}
        elif list_name == "versions":
            queries.workflow_query(query)
            workflow_id = str((case.path_parameters or {}).get("workflow_id"))
            if not paths.is_path_id(workflow_id):
                return  # names no workflow: 404 anyway
            filters = {"workflow_id": int(workflow_id)}
        else:
            retired = queries.workflow_list_query(query).retired
            filters = {} if retired is None else {"retired": retired}
    except errors.InvalidInput:
        return  # refused for another reason anyway
    # The inbox's position is (since, id), the contacts' (key, 1); the rest's an id.
    position: Any = {"inbox": ["2030-01-01T00:00:00.000Z", 1], "contacts": ["user:a", 1]}.get(
        list_name, 1
    )
    case.query["cursor"] = cursors.issue(list_name, filters, position)


def _as_sent(query: dict[str, Any]) -> dict[str, list[str]]:
    """Each parameter's values as requests sends them: a None is left out,
    alone or in a list (the stateful phase fills one from a link whose
    response has no such field)."""
    sent = {}
    for name, value in query.items():
        values = [
            str(one) for one in (value if isinstance(value, list) else [value]) if one is not None
        ]
        if values:
            sent[name] = values
    return sent


def _positive(case: Any) -> bool:
    meta = getattr(case, "meta", None)
    return meta is not None and not meta.generation.mode.is_negative


def _within_content_rules(case: Any) -> None:
    """A valid case's input, input_schema and conditions, kept to the rules
    only the service can apply."""
    body, path = case.body, case.operation.path
    if not isinstance(body, dict):
        return
    if path in ("/runs", "/runs/{run_id}/resubmit") and body.get("input") is not None:
        try:
            content.checked_input(body["input"])
        except errors.InvalidInput:
            body["input"] = {}
    if path == "/workflows":
        body.pop("input_schema", None)
        for step in body.get("steps") or []:
            _applicable(step)
    if path == "/workflows/{workflow_id}/steps":
        _applicable(body)


def _within_delegation_rules(case: Any) -> None:
    """A valid case's times parse, and its window and delegate are one the
    service lends (rules of time and of names no schema states)."""
    path, query, body = case.operation.path, case.query or {}, case.body
    if path != "/delegations":
        return
    if isinstance(query.get("active_at"), str) and not _parses(query["active_at"]):
        query["active_at"] = engine.utc_now()
    if not isinstance(body, dict):
        return
    try:
        delegations.grant(
            str(body.get("delegator", "someone")),
            delegations.delegate_principal(str(body.get("delegate"))),
            None,
            str(body.get("starts_at")),
            str(body.get("ends_at")),
            "",
            "someone",
            engine.utc_now(),
        )
    except errors.InvalidInput:
        now = datetime.now(UTC)
        body["starts_at"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        body["ends_at"] = (now + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body["delegate"] = "group:deputies"


def _parses(text: str) -> bool:
    try:
        delegations.normalised(text, "active_at")
    except errors.InvalidInput:
        return False
    return True


def _applicable(step: Any) -> None:
    """A step's condition that conditions.py evaluates (any within the document's shape)."""
    when = step.get("when") if isinstance(step, dict) else None
    if isinstance(when, dict) and conditions.problem(when) is not None:
        step["when"] = {"==": [1, 1]}
