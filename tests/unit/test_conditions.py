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


def test_a_condition_nests_at_most_sixteen_deep_a_rule_no_schema_states() -> None:
    deep: Any = {">": [AMOUNT, 1]}
    for _ in range(conditions.MAX_DEPTH - 1):
        deep = {"!": deep}
    assert conditions.checked(deep, "CFO") == deep
    with pytest.raises(errors.Unprocessable, match="Step 'CFO': 'when' nests deeper than 16"):
        conditions.checked({"!": {"!": deep}}, "CFO")


FIELDS: conditions.Fields = {
    ("amount",): frozenset({"number"}),
    ("supplier",): frozenset({"object"}),
    ("supplier", "country"): frozenset({"string", "null"}),
    ("note",): None,
    ("vip",): frozenset({"boolean"}),
    ("tags",): frozenset({"array", "null"}),
    ("cost.eur",): frozenset({"number"}),
}


def test_a_var_path_must_be_one_the_schema_defines() -> None:
    assert conditions.judged({"==": [{"var": "supplier.country"}, "DE"]}, FIELDS) is None
    found = conditions.judged({">": [{"var": "amuont"}, 1]}, FIELDS)
    assert found is not None and "'amuont'" in found and "input_schema" in found


def test_a_path_splits_at_each_dot_so_a_property_named_with_a_dot_cannot_be_read() -> None:
    """As JSON Logic reads it, cost.eur is eur within cost: never the property
    "cost.eur", whose condition would never hold."""
    found = conditions.judged({">": [{"var": "cost.eur"}, 10000]}, FIELDS)
    assert found == (
        "reads 'cost.eur', which is eur within cost: a path splits at each '.', so the "
        "input_schema's property 'cost.eur' cannot be read by a condition; name it without a '.'"
    )
    assert conditions.holds({">": [{"var": "cost.eur"}, 10000]}, {"cost.eur": 50000}) is False
    assert conditions.holds({">": [{"var": "cost.eur"}, 10000]}, {"cost": {"eur": 50000}})


@pytest.mark.parametrize(
    ("condition", "says"),
    [
        ({">": [AMOUNT, "10000"]}, 'compares amount (a number) with "10000" (a text)'),
        ({"==": [AMOUNT, "10000"]}, "values of different types never compare"),
        ({"!=": [AMOUNT, "10000"]}, "values of different types never compare"),
        ({"==": [AMOUNT, None]}, "compares amount (a number) with null (null)"),
        ({"==": [{"var": "vip"}, 1]}, "vip (true or false)"),
        ({"<": [{"var": "vip"}, True]}, "only numbers and texts have an order"),
        ({"<": [{"var": "supplier.country"}, None]}, "only numbers and texts have an order"),
        ({"==": ["DE", {"var": "supplier.country"}]}, None),
        ({"==": [{"var": "supplier.country"}, None]}, None),
        ({">": [{"var": "supplier.country"}, "M"]}, None),
        ({"==": [{"var": "note"}, 1]}, None),
        ({"==": [{"var": "note"}, "x"]}, None),
        ({"==": [1, "1"]}, 'compares 1 (a number) with "1" (a text)'),
        ({"==": [{">": [AMOUNT, 1]}, 1]}, "amount > 1 (true or false)"),
        ({"==": [{">": [AMOUNT, 1]}, True]}, None),
        ({"==": [AMOUNT, {"var": "vip"}]}, "compares amount (a number) with vip"),
        ({"in": [AMOUNT, ["1", "2"]]}, 'among ["1", "2"], which holds a text only'),
        ({"in": [AMOUNT, [1, "2"]]}, None),
        ({"in": [AMOUNT, []]}, None),
        ({"in": [{"var": "supplier.country"}, ["DE", None]]}, None),
        ({"in": [AMOUNT, "12345"]}, "'in' looks in a list, or for a text in a text"),
        ({"in": ["D", {"var": "supplier.country"}]}, None),
        ({"in": [AMOUNT, {"var": "supplier.country"}]}, "in supplier.country (null or a text)"),
        ({"in": ["x", {"var": "tags"}]}, None),
        ({"in": ["x", {"var": "note"}]}, None),
        ({"in": ["x", 5]}, "in 5 (a number)"),
        ({"or": [{"var": "vip"}, {"!": {"==": [AMOUNT, "1"]}}]}, "compares amount (a number)"),
    ],
)
def test_a_comparison_the_schemas_types_show_can_never_hold_is_refused(
    condition: Any, says: Any
) -> None:
    """Judged with the kinds the schema gives each path (several where it
    names several, null where a value may be missing; unknown where it does
    not say): only what can provably never hold is refused."""
    assert conditions.problem(condition) is None
    found = conditions.judged(condition, FIELDS)
    if says is None:
        assert found is None
    else:
        assert found is not None and says in found, found
        assert found.endswith("so it can never hold")


def test_without_a_schema_only_literals_and_operators_have_known_types() -> None:
    assert conditions.judged({"==": [AMOUNT, "10000"]}, None) is None
    assert conditions.judged({"var": "anything.at.all"}, None) is None
    found = conditions.judged({"==": [{"<": [AMOUNT, 1]}, "yes"]}, None)
    assert found is not None and "true or false" in found


def test_a_refused_comparison_never_holds_for_any_value_of_its_types() -> None:
    """What judged refuses is false for every value of the kinds it was
    refused for: it takes nothing away a run could use."""
    values: dict[str, list[Any]] = {
        "null": [None],
        "boolean": [True, False],
        "number": [0, 1, -2.5],
        "string": ["", "a", "DE"],
        "array": [[], [1], ["a"]],
        "object": [{}, {"a": 1}],
    }
    literals: list[Any] = [None, True, 0, 1.5, "", "a", "1"]
    for operator in (*conditions.COMPARISONS, "in"):
        for kind, examples in values.items():
            fields: conditions.Fields = {("x",): frozenset({kind})}
            for literal in [*literals, ["a", 1], [None], []]:
                if operator != "in" and isinstance(literal, list):
                    continue
                condition = {operator: [{"var": "x"}, literal]}
                if conditions.judged(condition, fields) is None:
                    continue
                for value in examples:
                    assert conditions.holds(condition, {"x": value}) is False, (condition, value)


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
