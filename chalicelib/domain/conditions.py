"""A step's condition over its run's input: JSON Logic's syntax, restricted. Pure.

    {"var": "amount"}                           the input's value at that path (a.b for nested)
    {"==": [a, b]}  {"!=": [a, b]}              equal, not equal
    {"<": [a, b]} {"<=": ..} {">": ..} {">=": ..}   ordered comparisons
    {"and": [c, ...]}  {"or": [c, ...]}         all, any
    {"!": c}  (or {"!": [c]})                   not
    {"in": [a, b]}                              a among the items of list b, or a in text b

with literals (strings, numbers, booleans, null) and, as the second operand of
`in`, a list of literals. A `var` path splits at each "." as JSON Logic's does:
"cost.eur" is eur within cost, never a field named "cost.eur".

A condition is checked when its workflow is defined: its shape (`problem`,
what the OpenAPI document's Condition schema states) and its depth
(`checked`), then against the workflow's input schema (`judged`): each `var`
must read a path the schema defines, and no comparison may set values that
can never be of one type against each other (a number against a text), as it
could never hold. It is evaluated when a run reaches its step (`holds`),
which is total: a missing `var` is null, a comparison of values of different
types (a number and a string, a boolean and a number) is false, `!=` too,
never an error; `and`, `or` and `!` read JSON Logic's truthiness (false,
null, 0, "" and [] are false).
"""

from __future__ import annotations

import operator as operator_module
from collections.abc import Mapping
from typing import Any, Optional

from chalicelib.domain import errors

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
ORDERED = ("<", "<=", ">", ">=")
OPERATORS = (*COMPARISONS, "and", "or", "!", "in", "var")
# How deep a condition may nest: more than any tier rule needs.
MAX_DEPTH = 16
# JSON's types, as the input schema names them ("integer" is a number here).
KINDS = ("null", "boolean", "number", "string", "array", "object")
# The JSON types of the input's value at each path a schema defines (a tuple of
# its names), None where the schema does not say (content.input_fields).
Fields = Mapping[tuple[str, ...], Optional[frozenset[str]]]


def problem(condition: Any, depth: int = 0, within: int = MAX_DEPTH) -> Optional[str]:
    """Why `condition` is not of a shape this service evaluates (None: it is),
    looking `within` levels into it (`checked` refuses what nests deeper than
    MAX_DEPTH); below those, an operand need only be a literal or an object."""
    if _literal(condition):
        return None
    if depth > within:
        return None if isinstance(condition, dict) else _NO_OPERAND
    if not isinstance(condition, dict) or len(condition) != 1:
        return _NO_OPERAND
    ((operator, operands),) = condition.items()
    if operator not in OPERATORS:
        return f"uses {operator!r}, which is not one of {', '.join(OPERATORS)}"
    if operator == "var":
        if not isinstance(operands, str) or not operands:
            return "'var' takes the path of an input field, a non-empty string"
        return None
    if operator == "!":
        operands = operands if isinstance(operands, list) else [operands]
        if len(operands) != 1:
            return "'!' takes one operand"
    if not isinstance(operands, list):
        return f"{operator!r} takes a list of operands"
    if operator in (*COMPARISONS, "in") and len(operands) != 2:
        return f"{operator!r} takes two operands"
    if operator in ("and", "or") and not operands:
        return f"{operator!r} takes at least one operand"
    if operator == "in" and isinstance(operands[1], list):
        if not all(_literal(item) for item in operands[1]):
            return "the list 'in' looks in may hold literals only"
        operands = operands[:1]
    for operand in operands:
        found = problem(operand, depth + 1, within)
        if found:
            return found
    return None


_NO_OPERAND = "must be a literal or an object of one operator (" + ", ".join(OPERATORS) + ")"


def checked(condition: Any, step: str) -> dict[str, Any]:
    """`condition` as step `step`'s `when`: InvalidInput if its operator or
    its operands break the shape the document's Condition states (which does
    not recurse: an operand is a literal or an object), Unprocessable if a
    condition within it does, or it nests deeper than MAX_DEPTH, which no
    schema of the document states. Its paths and types are judged against
    the workflow's schema by the transition that stores it."""
    if not isinstance(condition, dict):
        raise errors.InvalidInput(f"Step {step!r}: 'when' must be a condition object")
    found = problem(condition, within=0)
    if found:
        raise errors.InvalidInput(f"Step {step!r}: 'when' {found}")
    found = problem(condition)
    if found:
        raise errors.Unprocessable(f"Step {step!r}: 'when' holds a condition that {found}")
    if _deeper_than(condition, MAX_DEPTH):
        raise errors.Unprocessable(f"Step {step!r}: 'when' nests deeper than {MAX_DEPTH}")
    return condition


def _deeper_than(condition: Any, most: int) -> bool:
    """Whether `condition` (of a shape `problem` accepts) holds an operand more
    than `most` levels below it."""
    if most < 0:
        return True
    if not isinstance(condition, dict):
        return False
    return any(_deeper_than(operand, most - 1) for operand in _operands(condition))


def _operands(condition: dict[str, Any]) -> list[Any]:
    """The operands of `condition` (of a shape `problem` accepts) that are
    conditions or literals: not a var's path, nor the list `in` looks in."""
    ((operator, operands),) = condition.items()
    if operator == "var":
        return []
    if not isinstance(operands, list):
        return [operands]
    return [operands[0]] if operator == "in" and isinstance(operands[1], list) else operands


def judged(condition: Any, fields: Optional[Fields]) -> Optional[str]:
    """Why `condition` can never do what it says for a workflow whose input
    schema defines `fields` (None: it has no schema), or None: a `var` reads a
    path the schema does not define, or a comparison or `in` sets against each
    other values that can never be of one type."""
    if not isinstance(condition, dict):
        return None
    ((operator, operands),) = condition.items()
    if operator == "var":
        return _unread(operands, fields) if fields is not None else None
    for operand in _operands(condition):
        found = judged(operand, fields)
        if found:
            return found
    if operator in COMPARISONS:
        return _never_compared(operator, operands, fields)
    if operator == "in":
        return _never_within(operands, fields)
    return None


def _unread(path: str, fields: Fields) -> Optional[str]:
    parts = tuple(path.split("."))
    if parts in fields:
        return None
    if any(".".join(names) == path for names in fields):
        return (
            f"reads {path!r}, which is {' within '.join(reversed(parts))}: a path splits at "
            f"each '.', so the input_schema's property {path!r} cannot be read by a "
            "condition; name it without a '.'"
        )
    return f"reads {path!r}, which the workflow's input_schema does not define"


def _kinds(operand: Any, fields: Optional[Fields]) -> Optional[frozenset[str]]:
    """The JSON types `operand` may have when evaluated (None: any)."""
    if not isinstance(operand, dict):
        return frozenset({kind_of(operand)})
    ((operator, path),) = operand.items()
    if operator != "var":
        return frozenset({"boolean"})  # every other operator answers true or false
    if fields is None:
        return None
    return fields.get(tuple(path.split(".")))


def _never_compared(operator: str, operands: list[Any], fields: Optional[Fields]) -> Optional[str]:
    left, right = (_kinds(operand, fields) for operand in operands)
    if left is None or right is None:
        return None
    common = left & right
    if not common:
        return (
            f"compares {_said(operands[0], left)} with {_said(operands[1], right)}: values "
            "of different types never compare, so it can never hold"
        )
    if operator in ORDERED and not common & {"number", "string"}:
        return (
            f"orders {_said(operands[0], left)} with {_said(operands[1], right)}: only "
            "numbers and texts have an order, so it can never hold"
        )
    return None


def _never_within(operands: list[Any], fields: Optional[Fields]) -> Optional[str]:
    needle, haystack = _kinds(operands[0], fields), operands[1]
    if needle is None:
        return None
    if isinstance(haystack, list):
        items = frozenset(kind_of(item) for item in haystack)
        if not haystack or needle & items:
            return None
        return (
            f"looks for {_said(operands[0], needle)} among {_words(haystack)}, which holds "
            f"{_named(items)} only, so it can never hold"
        )
    around = _kinds(haystack, fields)
    if around is None or "array" in around or ("string" in around and "string" in needle):
        return None
    return (
        f"looks for {_said(operands[0], needle)} in {_said(haystack, around)}: 'in' looks in "
        "a list, or for a text in a text, so it can never hold"
    )


_KIND_WORDS = {
    "null": "null",
    "boolean": "true or false",
    "number": "a number",
    "string": "a text",
    "array": "a list",
    "object": "an object",
}


def _named(kinds: frozenset[str]) -> str:
    return " or ".join(_KIND_WORDS[kind] for kind in KINDS if kind in kinds) or "nothing"


def _said(operand: Any, kinds: frozenset[str]) -> str:
    """An operand in words, with what it can be: `amount (a number)`."""
    return f"{_words(operand)} ({_named(kinds)})"


def _literal(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def holds(condition: Any, data: Mapping[str, Any]) -> bool:
    """Whether `condition` holds for the run's input `data`."""
    return _truthy(_value(condition, data))


def _value(condition: Any, data: Mapping[str, Any]) -> Any:
    if not isinstance(condition, dict):
        return condition
    ((operator, operands),) = condition.items()
    if operator == "var":
        return _at(data, operands)
    if operator == "!":
        operands = operands if isinstance(operands, list) else [operands]
        return not _truthy(_value(operands[0], data))
    if operator == "and":
        return all(_truthy(_value(operand, data)) for operand in operands)
    if operator == "or":
        return any(_truthy(_value(operand, data)) for operand in operands)
    left = _value(operands[0], data)
    right = operands[1] if isinstance(operands[1], list) else _value(operands[1], data)
    if operator == "in":
        return _within(left, right)
    return _compared(operator, left, right)


def _at(data: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of the input; None where any part is missing."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def kind_of(value: Any) -> str:
    """The JSON type of a value, numbers one type (a boolean is no number)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _compared(operator: str, left: Any, right: Any) -> bool:
    if kind_of(left) != kind_of(right):
        return False
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if left is None or isinstance(left, (bool, list, dict)):
        return False  # no order between these
    return bool(_ORDERS[operator](left, right))


_ORDERS = {
    "<": operator_module.lt,
    "<=": operator_module.le,
    ">": operator_module.gt,
    ">=": operator_module.ge,
}


def _within(needle: Any, haystack: Any) -> bool:
    if isinstance(haystack, str):
        return isinstance(needle, str) and needle in haystack
    if isinstance(haystack, list):
        return any(kind_of(item) == kind_of(needle) and item == needle for item in haystack)
    return False


def _truthy(value: Any) -> bool:
    """JSON Logic's truthiness: JavaScript's, but an empty list is false too."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list)):
        return bool(value)
    return True


def text(condition: Any) -> str:
    """The condition in words, as the page and the skip's comment show it:
    `amount > 10000`, `amount >= 1000 and country == "DE"`."""
    return _words(condition, top=True)


def _words(condition: Any, top: bool = False) -> str:
    import json

    if not isinstance(condition, dict):
        return json.dumps(condition, ensure_ascii=False)
    ((operator, operands),) = condition.items()
    if operator == "var":
        return str(operands)
    if operator == "!":
        operands = operands if isinstance(operands, list) else [operands]
        return f"not {_words(operands[0])}"
    if operator in ("and", "or"):
        joined = f" {operator} ".join(_words(operand) for operand in operands)
        return joined if top else f"({joined})"
    left = _words(operands[0])
    right = (
        json.dumps(operands[1], ensure_ascii=False)
        if isinstance(operands[1], list)
        else _words(operands[1])
    )
    return f"{left} {operator} {right}"
