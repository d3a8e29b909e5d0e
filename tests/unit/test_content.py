"""A run's input and a workflow's input schema: what each may be, and where
an input fails its schema (a JSON Pointer)."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain import content, errors

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["amount", "supplier"],
    "additionalProperties": False,
    "properties": {
        "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
        "supplier": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "country": {"enum": ["DE", "AT"]},
            },
        },
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["sku"],
                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"}},
            },
        },
        "due": {"type": "string", "format": "date"},
        "contact": {"type": "string", "format": "email"},
        "link": {"type": "string", "format": "uri"},
        "at": {"type": "string", "format": "date-time"},
        "a/b~c": {"type": "integer"},
    },
}
GOOD = {"amount": 5000, "supplier": {"name": "Acme"}}


def test_an_input_that_meets_the_schema_has_no_violation() -> None:
    assert content.schema_problem(SCHEMA) is None
    assert content.violation(SCHEMA, GOOD) is None
    assert content.violation(None, {"anything": [1, {"at": "all"}]}) is None


@pytest.mark.parametrize(
    ("data", "pointer"),
    [
        ({**GOOD, "amount": -1}, "/amount: -1 is less than the minimum of 0"),
        ({"supplier": {"name": "Acme"}}, "/amount: "),
        ({**GOOD, "amount": "5000"}, "/amount: "),
        ({**GOOD, "supplier": {}}, "/supplier/name: "),
        ({**GOOD, "supplier": {"name": "A", "country": "FR"}}, "/supplier/country: "),
        ({**GOOD, "lines": [{"sku": "ABC-1"}, {"sku": "abc"}]}, "/lines/1/sku: "),
        ({**GOOD, "lines": [{}]}, "/lines/0/sku: "),
        ({**GOOD, "due": "2026-13-01"}, "/due: "),
        ({**GOOD, "contact": "nobody"}, "/contact: "),
        ({**GOOD, "link": "not a uri"}, "/link: "),
        ({**GOOD, "at": "2026-12-01"}, "/at: "),
        ({**GOOD, "a/b~c": 1.5}, "/a~1b~0c: "),
        ({**GOOD, "extra": 1}, "/extra: "),
    ],
)
def test_a_violation_names_the_json_pointer_of_what_fails(data: Any, pointer: str) -> None:
    found = content.violation(SCHEMA, data)
    assert found is not None and found.startswith(pointer), found


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ([], "must be a JSON Schema object"),
        ({"properties": {}}, "must describe an object"),
        ({"type": "string"}, "must describe an object"),
        ({"type": "object", "$ref": "https://example.com/s.json"}, "'$ref' at /"),
        (
            {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            "'oneOf' at /properties/a",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}},
            "format at /properties/a",
        ),
        ({"type": "object", "properties": {"a": {"type": "strnig"}}}, "not a valid JSON Schema"),
        ({"type": "object", "required": "amount"}, "not a valid JSON Schema"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)y"}}},
            "not a valid JSON Schema",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}},
            "not a valid JSON Schema",
        ),
        (
            {"type": "object", "properties": {"a": 3}},
            "a schema (an object or a boolean) at /properties/a",
        ),
        ({"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}, "2020-12"),
        ({"type": "object", "description": "x" * content.MAX_SCHEMA_BYTES}, "at most 32,768 bytes"),
    ],
)
def test_a_schema_outside_the_subset_is_refused_with_the_reason(schema: Any, says: str) -> None:
    found = content.schema_problem(schema)
    assert found is not None and says in found, found
    with pytest.raises(errors.InvalidInput):
        content.checked_schema(schema)


def test_the_schema_defines_the_paths_conditions_may_read() -> None:
    assert content.schema_paths(SCHEMA) == {
        "amount",
        "supplier",
        "supplier.name",
        "supplier.country",
        "lines",
        "due",
        "contact",
        "link",
        "at",
        "a/b~c",
    }


def test_an_input_is_an_object_of_at_most_32_kib_in_its_canonical_form() -> None:
    # {"a":"<n x's>"} is n + 8 bytes in its canonical form.
    assert content.checked_input({"a": "x" * (content.MAX_INPUT_BYTES - 8)})
    with pytest.raises(errors.PayloadTooLarge, match="32,769 bytes in its canonical form"):
        content.checked_input({"a": "x" * (content.MAX_INPUT_BYTES - 7)})
    # Counted as UTF-8: two bytes for each é.
    with pytest.raises(errors.PayloadTooLarge):
        content.checked_input({"a": "é" * (content.MAX_INPUT_BYTES // 2)})
    with pytest.raises(errors.InvalidInput, match="must be a JSON object"):
        content.checked_input(["not", "an", "object"])


def test_an_input_nests_at_most_sixteen_deep() -> None:
    deep: Any = {}
    for _ in range(content.MAX_DEPTH - 1):
        deep = {"a": deep}
    assert content.checked_input(deep)
    with pytest.raises(errors.InvalidInput, match="deeper than 16 levels at /a/a/a"):
        content.checked_input({"a": deep})
    with pytest.raises(errors.InvalidInput, match="deeper"):
        content.checked_input({"l": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]})


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"n": 2**53}, "integer beyond"),
        ({"n": [1, -(2**53)]}, "at /n/1"),
        ({"n": float("inf")}, "too large for JSON at /n"),
        ({"t": "\ud800"}, "not valid Unicode text at /t"),
        ({"\udfff": 1}, "has a key that is not valid Unicode"),
    ],
)
def test_an_input_holds_what_every_language_reads_alike(data: Any, says: str) -> None:
    with pytest.raises(errors.InvalidInput, match=says.replace("/", "/")):
        content.checked_input(data)


def test_the_largest_safe_integers_are_kept() -> None:
    assert content.checked_input({"n": 2**53 - 1, "m": -(2**53 - 1), "f": 1.5e300})
