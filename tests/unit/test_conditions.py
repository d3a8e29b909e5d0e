"""A step's condition: what is refused when it is defined, and how it is
evaluated (pure and total: never an error for any input)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.domain import conditions, errors

AMOUNT = {"var": "amount"}


@pytest.mark.parametrize(
    ("condition", "data", "holds"),
    [
        ({">=": [AMOUNT, 1000]}, {"amount": 1000}, True),
        ({">=": [AMOUNT, 1000]}, {"amount": 999.99}, False),
        ({">": [AMOUNT, 10000]}, {"amount": 50000}, True),
        ({"<": [AMOUNT, 10]}, {"amount": 3}, True),
        ({"<=": [AMOUNT, 3]}, {"amount": 3}, True),
        ({"==": [{"var": "country"}, "DE"]}, {"country": "DE"}, True),
        ({"!=": [{"var": "country"}, "DE"]}, {"country": "FR"}, True),
        ({"in": [{"var": "country"}, ["DE", "AT"]]}, {"country": "AT"}, True),
        ({"in": [{"var": "country"}, ["DE", "AT"]]}, {"country": "FR"}, False),
        ({"in": ["urgent", {"var": "title"}]}, {"title": "an urgent order"}, True),
        (
            {"and": [{">": [AMOUNT, 1]}, {"==": [{"var": "a.b"}, True]}]},
            {"amount": 2, "a": {"b": True}},
            True,
        ),
        ({"or": [{">": [AMOUNT, 100]}, {"var": "vip"}]}, {"amount": 2, "vip": True}, True),
        ({"!": {"var": "vip"}}, {"vip": False}, True),
        ({"!": [{"var": "vip"}]}, {}, True),
        (True, {}, True),
        (False, {}, False),
    ],
)
def test_a_condition_holds_as_json_logic_says(condition: Any, data: Any, holds: bool) -> None:
    assert conditions.problem(condition) is None
    assert conditions.holds(condition, data) is holds


@pytest.mark.parametrize(
    ("condition", "data"),
    [
        ({">": [AMOUNT, 10000]}, {}),  # missing: null
        ({">": [AMOUNT, 10000]}, {"amount": "50000"}),  # a string is no number
        ({"==": [AMOUNT, 1]}, {"amount": True}),  # a boolean is no number
        ({">": [AMOUNT, 1]}, {"amount": None}),
        ({">": [AMOUNT, 1]}, {"amount": [5]}),
        ({">": [AMOUNT, 1]}, {"amount": {"value": 5}}),
        ({"<": [{"var": "flag"}, True]}, {"flag": False}),  # booleans have no order
        ({"==": [{"var": "a.b.c"}, 1]}, {"a": {"b": 7}}),  # through a number
        ({"in": [AMOUNT, "text"]}, {"amount": 1}),
        ({"in": [AMOUNT, ["1"]]}, {"amount": 1}),
    ],
)
def test_a_comparison_that_cannot_hold_is_false_never_an_error(condition: Any, data: Any) -> None:
    assert conditions.holds(condition, data) is False


def test_a_missing_value_is_null_and_equals_null() -> None:
    assert conditions.holds({"==": [{"var": "gone"}, None]}, {}) is True


@pytest.mark.parametrize(
    ("condition", "says"),
    [
        ({"+": [1, 2]}, "'+', which is not one of"),
        ({"var": ""}, "non-empty string"),
        ({"var": 3}, "non-empty string"),
        ({">": [AMOUNT]}, "takes two operands"),
        ({">": AMOUNT}, "takes a list"),
        ({"and": []}, "at least one operand"),
        ({"!": [1, 2]}, "takes one operand"),
        ({"in": [AMOUNT, [{"var": "x"}]]}, "literals only"),
        ({">": [AMOUNT, 1], "<": [AMOUNT, 2]}, "one operator"),
        ([1, 2], "one operator"),
        ({"if": [True, 1, 2]}, "'if'"),
    ],
)
def test_anything_else_is_refused_with_the_reason(condition: Any, says: str) -> None:
    found = conditions.problem(condition)
    assert found is not None and says in found, found


def test_a_condition_nests_at_most_sixteen_deep() -> None:
    deep: Any = {">": [AMOUNT, 1]}
    for _ in range(conditions.MAX_DEPTH - 1):
        deep = {"!": deep}
    assert conditions.problem(deep) is None
    assert "deeper" in (conditions.problem({"!": {"!": deep}}) or "")


def test_a_var_path_must_be_one_the_schema_defines() -> None:
    paths = frozenset({"amount", "supplier", "supplier.country"})
    assert conditions.problem({"==": [{"var": "supplier.country"}, "DE"]}, paths) is None
    found = conditions.problem({">": [{"var": "amuont"}, 1]}, paths)
    assert found is not None and "'amuont'" in found and "input_schema" in found


def test_checked_names_the_step_and_refuses_what_is_no_condition() -> None:
    with pytest.raises(errors.InvalidInput, match="Step 'CFO': 'when' must be a condition object"):
        conditions.checked("amount > 1", "CFO")
    with pytest.raises(errors.InvalidInput, match="Step 'CFO': 'when' uses 'max'"):
        conditions.checked({"max": [1, 2]}, "CFO")


@pytest.mark.parametrize(
    ("condition", "words"),
    [
        ({">": [AMOUNT, 10000]}, "amount > 10000"),
        (
            {"and": [{">=": [AMOUNT, 1000]}, {"==": [{"var": "c"}, "DE"]}]},
            'amount >= 1000 and c == "DE"',
        ),
        (
            {"or": [{"!": {"var": "vip"}}, {"in": [{"var": "c"}, ["DE", "AT"]]}]},
            'not vip or c in ["DE", "AT"]',
        ),
        ({"and": [{"or": [True, False]}, True]}, "(true or false) and true"),
    ],
)
def test_a_condition_reads_in_words(condition: Any, words: str) -> None:
    assert conditions.text(condition) == words


def test_every_value_json_can_hold_evaluates_without_an_error() -> None:
    values: list[Any] = [None, True, False, 0, -1.5, 2**53, "", "x", [], [1], {}, {"a": 1}]
    for operator in conditions.COMPARISONS:
        for left in values:
            for right in values:
                data = {"l": left}
                condition = {operator: [{"var": "l"}, json.loads(json.dumps(right))]}
                if conditions.problem(condition) is None:
                    assert isinstance(conditions.holds(condition, data), bool)
