"""The places outside the domain that name the state machine's names
(chalicelib/domain/lifecycle.py), and whether each holds them as the domain
does: each function says what it finds wrong, nothing where the place holds.

The names are read from the module at each call, so that a process which put
another lifecycle module in its place (tests/unit/test_lifecycle.py) checks
every place against that one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chalicelib.storage.sqlite.migrations import SPEC_DEFAULT_STATUS


def _names(values: Iterable[str]) -> list[str]:
    return [str(value) for value in values]


def _compared(where: str, found: Sequence[Any], ought: Sequence[str]) -> list[str]:
    return [] if list(found) == list(ought) else [f"{where}: {list(found)} is not {list(ought)}"]


def openapi_problems(document: Mapping[str, Any]) -> list[str]:
    """The OpenAPI document's enums of the names: a history's action kinds, a
    run's statuses, a step's deadline outcomes, the permissions' actions."""
    from chalicelib.domain import lifecycle

    schemas = document["components"]["schemas"]
    kinds, statuses = _names(lifecycle.ActionKind), _names(lifecycle.RunStatus)
    outcomes, taken = _names(lifecycle.OnDeadline), _names(lifecycle.CALLER_ACTIONS)
    permissions = schemas["Permissions"]
    return [
        *_compared("Action.action", schemas["Action"]["properties"]["action"]["enum"], kinds),
        *_compared("RunStatus", schemas["RunStatus"]["enum"], statuses),
        *(
            problem
            for schema in ("Step", "NewStep")
            for problem in _compared(
                f"{schema}.on_deadline",
                schemas[schema]["properties"]["on_deadline"]["enum"],
                [*outcomes, None],  # type: ignore[list-item]  # JSON's null: none
            )
        ),
        *_compared("Permissions.required", permissions["required"], ["run_id", "actor", *taken]),
        *_compared(
            "Permissions.properties", list(permissions["properties"]), ["run_id", "actor", *taken]
        ),
    ]


# A JSDoc type alias of types.js: `/** @typedef {"a" | "b" | Other} Name ...`.
_TYPEDEF = re.compile(r"@typedef \{([^{}]*)\} (\w+)")


def page_types(text: str) -> dict[str, set[str]]:
    """The string literals each union typedef of the page's types.js allows,
    the typedefs it names expanded."""
    unions = {name: body for body, name in _TYPEDEF.findall(text)}

    def expanded(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        literals: set[str] = set()
        for part in (part.strip() for part in unions[name].split("|")):
            if part.startswith('"') and part.endswith('"'):
                literals.add(part[1:-1])
            elif part in unions and part not in seen:
                literals |= expanded(part, seen | {name})
        return literals

    return {name: expanded(name) for name in unions}


def page_problems(types_js: str) -> list[str]:
    """The page's types of the names (chalicelib/ui/types.js): RunStatus,
    ActionName (what a caller may do), RecordedAction (what a history holds).
    TypeScript's checker holds the page's own lists to these (make lint)."""
    from chalicelib.domain import lifecycle

    found = page_types(types_js)
    ought = {
        "RunStatus": set(_names(lifecycle.RunStatus)),
        "ActionName": set(_names(lifecycle.CALLER_ACTIONS)),
        "RecordedAction": set(_names(lifecycle.ActionKind)),
    }
    return [
        f"types.js {name}: {sorted(found.get(name, set()))} is not {sorted(names)}"
        for name, names in ought.items()
        if found.get(name) != names
    ]


# A CHECK of the SQLite schema: `CHECK(column IN ('a','b'))`.
_CHECK = re.compile(r"CHECK\((\w+) IN \(([^)]*)\)\)")


def sqlite_problems(statements: Iterable[str]) -> list[str]:
    """The SQLite schema's CHECKs of a run's status and of an action's kind
    (the spec's "pending" besides the statuses)."""
    from chalicelib.domain import lifecycle

    checks = {
        column: [value.strip().strip("'") for value in values.split(",")]
        for statement in statements
        for column, values in _CHECK.findall(statement)
    }
    return [
        *_compared(
            "CHECK(status)",
            checks.get("status", []),
            [SPEC_DEFAULT_STATUS, *_names(lifecycle.RunStatus)],
        ),
        *_compared("CHECK(action)", checks.get("action", []), _names(lifecycle.ActionKind)),
    ]
