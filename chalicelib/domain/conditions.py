"""A step's condition over its run's input: JSON Logic's syntax, restricted. Pure.

    {"var": "amount"}                           the input's value at that path (a.b for nested)
    {"==": [a, b]}  {"!=": [a, b]}              equal, not equal
    {"<": [a, b]} {"<=": ..} {">": ..} {">=": ..}   ordered comparisons
    {"and": [c, ...]}  {"or": [c, ...]}         all, any
    {"!": c}  (or {"!": [c]})                   not
    {"in": [a, b]}                              a among the items of list b, or a in text b

with literals (strings, numbers, booleans, null) and, as the second operand of
`in`, a list of literals. A condition is checked when its workflow is defined
(`problem`: anything else is refused, and so is a `var` path the workflow's
input schema does not define) and evaluated when a run reaches its step
(`holds`), which is total: a missing `var` is null, a comparison of values of
different types (a number and a string, a boolean and a number) is false,
never an error; `and`, `or` and `!` read JSON Logic's truthiness (false, null,
0, "" and [] are false).
"""

from __future__ import annotations

import operator as operator_module
from collections.abc import Collection, Mapping
from typing import Any, Optional

from chalicelib.domain import errors

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
OPERATORS = (*COMPARISONS, "and", "or", "!", "in", "var")
# How deep a condition may nest: more than any tier rule needs.
MAX_DEPTH = 16


def problem(
    condition: Any, paths: Optional[Collection[str]] = None, depth: int = 0
) -> Optional[str]:
    """Why `condition` is not one this service evaluates (None: it is); `paths`,
    where the workflow declares an input schema, are the `var` paths it defines."""
    if depth > MAX_DEPTH:
        return f"nests deeper than {MAX_DEPTH}"
    if _literal(condition):
        return None
    if not isinstance(condition, dict) or len(condition) != 1:
        return "must be a literal or an object of one operator (" + ", ".join(OPERATORS) + ")"
    ((operator, operands),) = condition.items()
    if operator not in OPERATORS:
        return f"uses {operator!r}, which is not one of {', '.join(OPERATORS)}"
    if operator == "var":
        return _var_problem(operands, paths)
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
        found = problem(operand, paths, depth + 1)
        if found:
            return found
    return None


def checked(condition: Any, step: str) -> dict[str, Any]:
    """`condition` as step `step`'s `when`; InvalidInput if it is not one this
    service evaluates (its paths are checked against the workflow's schema by
    the transition that stores it)."""
    if not isinstance(condition, dict):
        raise errors.InvalidInput(f"Step {step!r}: 'when' must be a condition object")
    found = problem(condition)
    if found:
        raise errors.InvalidInput(f"Step {step!r}: 'when' {found}")
    return condition


def _var_problem(path: Any, paths: Optional[Collection[str]]) -> Optional[str]:
    if not isinstance(path, str) or not path:
        return "'var' takes the path of an input field, a non-empty string"
    if paths is not None and path not in paths:
        return f"reads {path!r}, which the workflow's input_schema does not define"
    return None


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


def _kind(value: Any) -> str:
    """The JSON type of a value, numbers one type (a boolean is no number)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _compared(operator: str, left: Any, right: Any) -> bool:
    if _kind(left) != _kind(right):
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
        return any(_kind(item) == _kind(needle) and item == needle for item in haystack)
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
