"""The OpenAPI document's request schemas say exactly what chalicelib/api/validation.py
accepts: a value the schema admits is accepted, or refused for a rule no schema
can state (Unprocessable, 422); a value it refuses is refused with 400.

Checked both ways on edge values and on values drawn (with a fixed seed) from
the characters each rule is about: controls, whitespace, invisible characters in
and beyond the Basic Multilingual Plane, combining marks, lengths around each
limit. The patterns are evaluated as jsonschema (and hypothesis-jsonschema,
which schemathesis generates from) evaluate them, with Python's `re`.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from chalicelib.api import queries, validation
from chalicelib.domain import delegations, errors
from tests.support import openapi_contract

ACCEPTED, UNPROCESSABLE, INVALID = "accepted", "422", "400"

# Characters each name rule turns on, and some it does not.
ALPHABET = [
    *"aZ09-_.:@",
    " ",
    "\t",
    "\n",
    "\r",
    "\x0b",
    "\x00",
    "\x1c",
    "\x1f",
    "\x7f",
    "\x85",
    "\x9f",
    "\xa0",
    "\u00ad",
    "\u034f",
    "\u061c",
    "\u1680",
    "\u180e",
    "\u2000",
    "\u200b",
    "\u200f",
    "\u2028",
    "\u202f",
    "\u205f",
    "\u3000",
    "\u3164",
    "\ufe0f",
    "\ufeff",
    "\uffa0",
    "\ufff9",  # format, but visible to the rule
    "\U0001bca0",
    "\U0001d173",
    "\U000e0001",
    "\U000e0fff",
    "\U000e1000",  # just past the invisible tags
    "é",
    "e\u0301",
    "\u0301",
    "中",
    "😀",
]


def drawn(limit: int, count: int = 150, seed: int = 26) -> list[str]:
    """Short strings over ALPHABET, and strings around `limit` characters."""
    rng = random.Random(seed)
    values = ["".join(rng.choices(ALPHABET, k=rng.randint(0, 6))) for _ in range(count)]
    for length in (limit - 1, limit, limit + 1):
        for pad in ("n", " ", "\u200b"):
            edge = rng.choice(ALPHABET)
            values += [edge + pad * (length - len(edge)), pad * (length - len(edge)) + edge]
    return values


def outcome(accept: Callable[[], Any]) -> str:
    try:
        accept()
    except errors.Unprocessable:
        return UNPROCESSABLE
    except errors.InvalidInput:
        return INVALID
    return ACCEPTED


def schema_admits(instance: Any, *where: str) -> bool:
    try:
        openapi_contract._validate(instance, *where)
    except jsonschema.ValidationError:
        return False
    return True


def inbox(query: dict[str, Any]) -> queries.InboxQuery:
    return queries.inbox_query(query, verified=False)


# Each field with the name rule: (its place in the document, the value's
# limit, the request that carries it, what validation does with that request).
Body = Callable[[str], Any]
FIELDS: dict[str, tuple[tuple[str, ...], int, Body, Callable[[Any], Any]]] = {
    "NewWorkflow.name": (
        ("components", "schemas", "NewWorkflow"),
        validation.MAX_NAME,
        lambda v: {"name": v},
        validation.new_workflow,
    ),
    "NewWorkflow.steps[]": (
        ("components", "schemas", "NewWorkflow"),
        validation.MAX_NAME,
        lambda v: {"name": "W", "steps": [v]},
        validation.new_workflow,
    ),
    "NewStep.name": (
        ("components", "schemas", "NewStep"),
        validation.MAX_NAME,
        lambda v: {"name": v},
        validation.new_step,
    ),
    "NewStep.approvers[] user": (
        ("components", "schemas", "NewStep"),
        validation.MAX_ACTOR,
        lambda v: {"name": "S", "approvers": ["user:" + v]},
        validation.new_step,
    ),
    "NewStep.approvers[] group": (
        ("components", "schemas", "NewStep"),
        validation.MAX_ACTOR,
        lambda v: {"name": "S", "approvers": ["group:" + v, "user:x"]},
        validation.new_step,
    ),
    "NewStep.escalate_to[]": (
        ("components", "schemas", "NewStep"),
        validation.MAX_ACTOR,
        lambda v: {
            "name": "S",
            "deadline_seconds": 60,
            "on_deadline": "escalate",
            "escalate_to": ["group:" + v],
        },
        validation.new_step,
    ),
    "NewStep.notify[]": (
        ("components", "schemas", "NewStep"),
        validation.MAX_ACTOR,
        lambda v: {"name": "S", "notify": ["user:" + v]},
        validation.new_step,
    ),
    "NewRun.title": (
        ("components", "schemas", "NewRun"),
        validation.MAX_TITLE,
        lambda v: {"workflow_id": 1, "title": v},
        validation.new_run,
    ),
    "NewRun.requested_by": (
        ("components", "schemas", "NewRun"),
        validation.MAX_ACTOR,
        lambda v: {"workflow_id": 1, "title": "t", "requested_by": v},
        validation.new_run,
    ),
    "Decision.actor": (
        ("components", "schemas", "Decision"),
        validation.MAX_ACTOR,
        lambda v: {"actor": v},
        validation.decision,
    ),
    "Decision.groups[]": (
        ("components", "schemas", "Decision"),
        validation.MAX_ACTOR,
        lambda v: {"actor": "a", "groups": [v]},
        validation.decision,
    ),
    "Cancellation.actor": (
        ("components", "schemas", "Cancellation"),
        validation.MAX_ACTOR,
        lambda v: {"actor": v},
        validation.cancellation,
    ),
    # Not a name, but free text that must not be blank: whitespace and invisible
    # characters alone are refused, anything else is kept as sent.
    "Return.comment": (
        ("components", "schemas", "Return"),
        validation.MAX_TEXT,
        lambda v: {"actor": "a", "comment": v},
        functools.partial(validation.decision, comment_required=True),
    ),
    "GET /inbox actor": (
        ("components", "parameters", "InboxActor", "schema"),
        validation.MAX_ACTOR,
        lambda v: v,
        lambda v: inbox({"actor": v}),
    ),
    "GET /inbox group": (
        ("components", "parameters", "InboxGroup", "schema"),
        validation.MAX_ACTOR,
        lambda v: [v],
        lambda v: inbox({"actor": "a", "group": v[0]}),
    ),
}


@pytest.mark.parametrize("field", list(FIELDS))
def test_a_name_field_admits_exactly_what_the_service_accepts(field: str) -> None:
    where, limit, body, accept = FIELDS[field]
    disagreements = []
    outcomes = set()
    for value in drawn(limit):
        request = body(value)
        result = outcome(functools.partial(accept, request))
        outcomes.add(result)
        if schema_admits(request, *where) != (result != INVALID):
            disagreements.append((value, result))
    assert disagreements == []
    # Both sides of the pattern; a 422 (a rule no pattern states, such as an
    # unassigned code point) may come too, and is held to the schema above.
    assert {ACCEPTED, INVALID} <= outcomes, "the values drawn try both sides of the rule"


SCHEMA_OF_EVERY_KEYWORD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "title": "Every keyword",
    "description": "d",
    "required": ["n"],
    "additionalProperties": False,
    "properties": {
        "n": {"type": ["number", "null"], "minimum": 0, "maximum": 9, "default": 1},
        "x": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 9, "examples": [1]},
        "s": {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a", "format": "email"},
        "l": {"type": "array", "items": {"enum": ["a", 1, None]}, "minItems": 0, "maxItems": 3},
        "c": {"const": {"any": ["thing"]}},
        "t": True,
    },
}


def property_schema(schema: Any) -> dict[str, Any]:
    """An input_schema whose one property has `schema`."""
    return {"type": "object", "properties": {"p": schema}}


def nested_schema(levels: int) -> dict[str, Any]:
    """An input_schema whose properties nest `levels` schemas deep, itself the first."""
    schema: dict[str, Any] = {"type": "object"}
    inner = schema
    for _ in range(levels - 1):
        inner["properties"] = {"a": {}}
        inner = inner["properties"]["a"]
    return schema


def delegation(starts_at: str, ends_at: str = "2031-01-02T00:00:00Z") -> dict[str, Any]:
    return {"delegator": "bob", "delegate": "dave", "starts_at": starts_at, "ends_at": ends_at}


def granted(request: validation.NewDelegation) -> Any:
    """The delegation a request makes, as of now (the domain reads its times)."""
    assert request.delegator is not None
    return delegations.grant(
        request.delegator,
        delegations.delegate_principal(request.delegate),
        request.workflow_id,
        request.starts_at,
        request.ends_at,
        request.reason,
        request.delegator,
        "2026-12-04T00:00:00.000Z",
    )


# Requests around every other rule the schemas state: limits, types, nulls and
# the dependencies between a step's deadline fields, and the rules they cannot.
EDGES: list[tuple[str, Any, str]] = [
    # (schema, body, what validation does)
    ("NewStep", {"name": "S", "required_approvals": 0}, INVALID),
    ("NewStep", {"name": "S", "required_approvals": 1}, ACCEPTED),
    ("NewStep", {"name": "S", "required_approvals": 20}, ACCEPTED),
    ("NewStep", {"name": "S", "required_approvals": 21}, INVALID),
    ("NewStep", {"name": "S", "required_approvals": 3.0}, ACCEPTED),
    ("NewStep", {"name": "S", "required_approvals": 2.5}, INVALID),
    ("NewStep", {"name": "S", "required_approvals": True}, INVALID),
    ("NewStep", {"name": "S", "required_approvals": None}, ACCEPTED),
    ("NewStep", {"name": "S", "approvers": ["user:a"], "required_approvals": 1}, ACCEPTED),
    ("NewStep", {"name": "S", "approvers": ["user:a"], "required_approvals": 2}, UNPROCESSABLE),
    (
        "NewStep",
        {"name": "S", "approvers": ["user:a", "group:g"], "required_approvals": 20},
        ACCEPTED,
    ),
    ("NewStep", {"name": "S", "approvers": [], "required_approvals": 20}, ACCEPTED),
    ("NewStep", {"name": "S", "approvers": None}, ACCEPTED),
    ("NewStep", {"name": "S", "approvers": ["user:a", "user:a"]}, INVALID),
    ("NewStep", {"name": "S", "approvers": ["user:a", "user:a "]}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "approvers": ["user:Fay", "user:ｆａｙ"]}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "approvers": ["user:a", "user:a\n"]}, INVALID),
    ("NewStep", {"name": "S", "approvers": ["user:a", "user:b"]}, ACCEPTED),
    ("NewStep", {"name": "S", "approvers": ["User:a"]}, INVALID),
    ("NewStep", {"name": "S", "approvers": ["user:"]}, INVALID),
    ("NewStep", {"name": "S", "approvers": "user:a"}, INVALID),
    ("NewStep", {"name": "S", "approvers": [f"user:u{i}" for i in range(50)]}, ACCEPTED),
    ("NewStep", {"name": "S", "approvers": [f"user:u{i}" for i in range(51)]}, INVALID),
    ("NewStep", {"name": "S", "deadline_seconds": 0}, INVALID),
    ("NewStep", {"name": "S", "deadline_seconds": 1}, ACCEPTED),
    ("NewStep", {"name": "S", "deadline_seconds": 31_536_000}, ACCEPTED),
    ("NewStep", {"name": "S", "deadline_seconds": 31_536_001}, INVALID),
    ("NewStep", {"name": "S", "deadline_seconds": 60.0}, ACCEPTED),
    ("NewStep", {"name": "S", "deadline_seconds": None, "on_deadline": None}, ACCEPTED),
    ("NewStep", {"name": "S", "on_deadline": "remind"}, INVALID),
    ("NewStep", {"name": "S", "deadline_seconds": 60, "on_deadline": "remind"}, ACCEPTED),
    ("NewStep", {"name": "S", "deadline_seconds": 60, "on_deadline": "reject"}, ACCEPTED),
    ("NewStep", {"name": "S", "deadline_seconds": 60, "on_deadline": "later"}, INVALID),
    ("NewStep", {"name": "S", "deadline_seconds": 60, "on_deadline": "escalate"}, INVALID),
    (
        "NewStep",
        {"name": "S", "deadline_seconds": 60, "on_deadline": "escalate", "escalate_to": []},
        INVALID,
    ),
    (
        "NewStep",
        {"name": "S", "deadline_seconds": 60, "on_deadline": "escalate", "escalate_to": ["user:b"]},
        ACCEPTED,
    ),
    (
        "NewStep",
        {"name": "S", "deadline_seconds": 60, "escalate_to": ["user:b"]},
        INVALID,
    ),
    (
        "NewStep",
        {"name": "S", "deadline_seconds": 60, "on_deadline": "reject", "escalate_to": ["user:b"]},
        INVALID,
    ),
    (
        "NewStep",
        {"name": "S", "deadline_seconds": 60, "on_deadline": "reject", "escalate_to": None},
        ACCEPTED,
    ),
    ("NewStep", {"name": "S", "escalate_to": ["user:b"]}, INVALID),
    (
        "NewStep",
        {
            "name": "S",
            "deadline_seconds": 60,
            "on_deadline": "escalate",
            "escalate_to": [f"user:u{i}" for i in range(21)],
        },
        INVALID,
    ),
    (
        "NewStep",
        {
            "name": "S",
            "deadline_seconds": 60,
            "on_deadline": "escalate",
            "escalate_to": ["group:caf\u00e9", "group:cafe\u0301"],
        },
        UNPROCESSABLE,
    ),
    ("NewStep", {"name": "S", "notify": None}, ACCEPTED),
    ("NewStep", {"name": "S", "notify": [f"user:u{i}" for i in range(20)]}, ACCEPTED),
    ("NewStep", {"name": "S", "notify": [f"user:u{i}" for i in range(21)]}, INVALID),
    ("NewStep", {"name": "S", "notify": ["user:b", "user:b"]}, INVALID),
    ("NewStep", {"name": "S", "notify": "user:b"}, INVALID),
    ("NewStep", {"name": "S", "notify": ["group:caf\u00e9", "group:cafe\u0301"]}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "quorum": 2}, INVALID),
    ("NewStep", {}, INVALID),
    ("NewStep", {"name": None}, INVALID),
    ("NewWorkflow", {"name": "W", "steps": None}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "steps": [f"s{i}" for i in range(50)]}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "steps": [f"s{i}" for i in range(51)]}, INVALID),
    ("NewWorkflow", {"name": "W", "steps": [None]}, INVALID),
    ("NewWorkflow", {"name": "W", "description": None}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "description": " \x00 " + "d" * 4997}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "description": "d" * 5001}, INVALID),
    ("NewWorkflow", {"name": "W", "distinct_approvers": None}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "distinct_approvers": 1}, INVALID),
    ("NewRun", {"workflow_id": 1, "title": "t", "requested_by": None}, ACCEPTED),
    ("NewRun", {"workflow_id": 0, "title": "t"}, INVALID),
    ("NewRun", {"workflow_id": 7.0, "title": "t"}, ACCEPTED),
    ("NewRun", {"workflow_id": 2**53 - 1, "title": "t"}, ACCEPTED),
    ("NewRun", {"workflow_id": "1", "title": "t"}, INVALID),
    ("Decision", {"actor": "a", "comment": None, "expected_step_id": None}, ACCEPTED),
    ("Decision", {"actor": "a", "comment": "c" * 5000}, ACCEPTED),
    ("Decision", {"actor": "a", "comment": "c" * 5001}, INVALID),
    ("Decision", {"actor": "a", "expected_step_id": 0}, INVALID),
    ("Decision", {"actor": "a", "groups": None}, ACCEPTED),
    ("Decision", {"actor": "a", "groups": ["g", "g "]}, ACCEPTED),
    ("Decision", {"actor": "a", "groups": [f"g{i}" for i in range(100)]}, ACCEPTED),
    ("Decision", {"actor": "a", "groups": [f"g{i}" for i in range(101)]}, INVALID),
    ("Decision", {"actor": None}, INVALID),
    ("Decision", {}, INVALID),
    ("Cancellation", {"actor": "a", "reason": None}, ACCEPTED),
    ("Cancellation", {"actor": "a", "reason": "r" * 5001}, INVALID),
    # A step's condition: its shape is the document's Condition; its depth no schema states.
    ("NewStep", {"name": "S", "when": {">": [{"var": "amount"}, 1]}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": {"==": [1, "1"]}}, ACCEPTED),  # judged with the schema
    ("NewStep", {"name": "S", "when": {"in": [1, "abc"]}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": {"in": [1, []]}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": {"in": [{"var": "a"}, [1, "b", None, True]]}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": {"!": [{"var": "a"}]}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": {"!": 0}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": {"and": [True]}}, ACCEPTED),
    ("NewStep", {"name": "S", "when": None}, ACCEPTED),
    ("NewStep", {"name": "S", "when": json.loads('{"!":' * 16 + "1" + "}" * 16)}, ACCEPTED),
    ("NewStep", {"name": "S", "when": json.loads('{"!":' * 17 + "1" + "}" * 17)}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "when": {">": [{"var": "amount"}]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"<": ["x"]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"and": {}}}, INVALID),
    ("NewStep", {"name": "S", "when": {"<=": {}}}, INVALID),
    ("NewStep", {"name": "S", "when": {"and": []}}, INVALID),
    ("NewStep", {"name": "S", "when": {"in": [1, [{"var": "x"}]]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"in": [[1], [1]]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"==": [[1], 1]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"!": [1, 2]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"!": [[1]]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"!": []}}, INVALID),
    ("NewStep", {"name": "S", "when": {"var": ""}}, INVALID),
    ("NewStep", {"name": "S", "when": {"var": ["a", 1]}}, INVALID),
    ("NewStep", {"name": "S", "when": {"max": [1, 2]}}, INVALID),
    # The document states a condition's operands one level deep: one within it is an object.
    ("NewStep", {"name": "S", "when": {"and": [{"<": ["x"]}]}}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "when": {"!": {"max": 1}}}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "when": {"or": [{}]}}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "when": {"==": [{"in": [1, [[1]]]}, True]}}, UNPROCESSABLE),
    ("NewStep", {"name": "S", "when": {"and": [[1]]}}, INVALID),
    ("NewStep", {"name": "S", "when": {">": [1, 2], "<": [1, 2]}}, INVALID),
    ("NewStep", {"name": "S", "when": {}}, INVALID),
    ("NewStep", {"name": "S", "when": True}, INVALID),
    # A workflow's input_schema: the keywords and their values' shapes are the
    # document's; a pattern's engine, the depth and the size no schema states.
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object"}}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "input_schema": SCHEMA_OF_EVERY_KEYWORD}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "input_schema": None}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "string"}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"properties": {}}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "": {}}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "minLength": -1}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "minimum": "1"}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "format": "ipv4"}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "enum": 1}}, INVALID),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": {"type": "object", "required": ["a", "a"]}},
        INVALID,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "items": 3}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "properties": []}}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema({"$ref": "#/x"})}, UNPROCESSABLE),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"type": "object", "x": 1})},
        UNPROCESSABLE,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": {"type": "object", "$ref": "#/x"}}, INVALID),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"type": "nope"})},
        UNPROCESSABLE,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema({"type": []})}, UNPROCESSABLE),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"type": ["a", "a"]})},
        UNPROCESSABLE,
    ),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"minLength": -1})},
        UNPROCESSABLE,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema({"minLength": 1.0})}, ACCEPTED),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"minimum": "1"})},
        UNPROCESSABLE,
    ),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"format": "ipv4"})},
        UNPROCESSABLE,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema({"enum": []})}, ACCEPTED),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema({"enum": 1})}, UNPROCESSABLE),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema(3)}, INVALID),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema(False)}, ACCEPTED),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"required": ["a", "a"]})},
        UNPROCESSABLE,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": property_schema({"items": 3})}, UNPROCESSABLE),
    (
        "NewWorkflow",
        {
            "name": "W",
            "input_schema": {
                "type": "object",
                "$schema": "http://json-schema.org/draft-07/schema#",
            },
        },
        INVALID,
    ),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"pattern": "(?<=a)b"})},
        UNPROCESSABLE,
    ),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": property_schema({"pattern": "("})},
        UNPROCESSABLE,
    ),
    ("NewWorkflow", {"name": "W", "input_schema": nested_schema(17)}, UNPROCESSABLE),
    ("NewWorkflow", {"name": "W", "input_schema": nested_schema(16)}, ACCEPTED),
    (
        "NewWorkflow",
        {"name": "W", "input_schema": {"type": "object", "description": "d" * 32_768}},
        UNPROCESSABLE,
    ),
    # A run's input: an object; its depth and its integers' range no schema states.
    ("NewRun", {"workflow_id": 1, "title": "t", "input": {"n": 2**53 - 1}}, ACCEPTED),
    ("NewRun", {"workflow_id": 1, "title": "t", "input": {"n": [2**53]}}, UNPROCESSABLE),
    (
        "NewRun",
        {"workflow_id": 1, "title": "t", "input": json.loads('{"a":' * 17 + "1" + "}" * 17)},
        UNPROCESSABLE,
    ),
    ("NewRun", {"workflow_id": 1, "title": "t", "input": [1]}, INVALID),
    # A delegation's window: RFC 3339 date-times as the document's pattern and
    # format state them; what they must be to each other no schema states.
    ("NewDelegation", delegation("2031-01-01T00:00:00Z"), ACCEPTED),
    ("NewDelegation", delegation("2031-01-01t00:00:00z"), ACCEPTED),
    ("NewDelegation", delegation("2031-01-01T00:00:00.123456789+05:30"), ACCEPTED),
    ("NewDelegation", delegation("2031-01-01T00:00:00-00:00"), ACCEPTED),
    ("NewDelegation", delegation("2031-01-01 00:00:00Z"), INVALID),
    ("NewDelegation", delegation("2031-01-01T00:00:00"), INVALID),
    ("NewDelegation", delegation("2031-01-01"), INVALID),
    ("NewDelegation", delegation("20310101T000000Z"), INVALID),
    ("NewDelegation", delegation("2031-02-30T00:00:00Z"), INVALID),
    ("NewDelegation", delegation("2031-01-01T24:00:00Z"), INVALID),
    ("NewDelegation", delegation("2031-01-01T00:00:60Z"), INVALID),
    ("NewDelegation", delegation("2031-01-01T00:00:00Z\n"), INVALID),
    ("NewDelegation", delegation(" 2031-01-01T00:00:00Z"), INVALID),
    ("NewDelegation", delegation("2031-01-01T00:00:00,5Z"), INVALID),
    ("NewDelegation", delegation("2031-01-03T00:00:00Z"), UNPROCESSABLE),  # after ends_at
    ("NewDelegation", delegation("2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z"), UNPROCESSABLE),
    (
        "NewDelegation",
        delegation("9999-12-31T00:00:00Z", "9999-12-31T23:59:59-01:00"),
        UNPROCESSABLE,
    ),
]
VALIDATE: dict[str, Callable[[Any], Any]] = {
    "NewDelegation": lambda body: granted(validation.new_delegation(body)),
    "NewStep": validation.new_step,
    "NewWorkflow": validation.new_workflow,
    "NewRun": validation.new_run,
    "Decision": validation.decision,
    "Cancellation": validation.cancellation,
}


@pytest.mark.parametrize(("name", "body", "expected"), EDGES, ids=repr)
def test_a_body_is_valid_by_its_schema_unless_the_service_refuses_it_with_400(
    name: str, body: Any, expected: str
) -> None:
    assert outcome(lambda: VALIDATE[name](body)) == expected
    assert schema_admits(body, "components", "schemas", name) is (expected != INVALID)
