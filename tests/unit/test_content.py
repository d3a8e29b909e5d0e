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
        ({"type": "object", "oneOf": [{"type": "string"}]}, "'oneOf' at /"),
        ({"type": "object", "format": "ipv4"}, "format at /"),
        ({"type": "object", "minLength": "1"}, "not a valid JSON Schema at /minLength"),
        ({"type": "object", "required": "amount"}, "not a valid JSON Schema"),
        (
            {"type": "object", "properties": {"a": 3}},
            "a schema (an object or a boolean) at /properties/a",
        ),
        ({"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}, "2020-12"),
    ],
)
def test_a_schema_outside_the_subset_is_refused_with_400(schema: Any, says: str) -> None:
    found = content.schema_problem(schema)
    assert found is not None and says in found, found
    with pytest.raises(errors.InvalidInput) as refused:
        content.checked_schema(schema)
    assert not isinstance(refused.value, errors.Unprocessable)


def _nested(levels: int) -> dict[str, Any]:
    """A schema whose properties nest `levels` schemas deep, itself the first."""
    schema: dict[str, Any] = {"type": "object"}
    inner = schema
    for _ in range(levels - 1):
        inner["properties"] = {"a": {}}
        inner = inner["properties"]["a"]
    return schema


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)y"}}},
            "pattern this service cannot match at /properties/a/pattern",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}},
            "no lookaround, no backreferences",
        ),
        ({"type": "object", "description": "x" * content.MAX_SCHEMA_BYTES}, "at most 32,768 bytes"),
        (_nested(content.MAX_DEPTH + 1), "nests deeper than 16 levels"),
        # The document states the keywords of the schema itself, not of those within it.
        (
            {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            "'oneOf' at /properties/a",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}},
            "format at /properties/a",
        ),
        ({"type": "object", "properties": {"a": {"type": "strnig"}}}, "not a valid JSON Schema"),
    ],
)
def test_a_schema_the_document_admits_that_breaks_a_rule_it_cannot_state_is_422(
    schema: Any, says: str
) -> None:
    """The document states the schema's own keywords and their values' shapes
    (a 400 for what breaks them); the schemas within it, a pattern the
    linear-time engine cannot match, the schema's depth and its size, no
    schema of it states: 422."""
    assert content.schema_problem(schema) is None
    with pytest.raises(errors.Unprocessable, match=says.replace("/", "/")):
        content.checked_schema(schema)


def test_a_schema_nests_at_most_sixteen_deep() -> None:
    assert content.checked_schema(_nested(content.MAX_DEPTH))


def test_the_schema_defines_the_paths_conditions_may_read_with_their_types() -> None:
    number, text = frozenset({"number"}), frozenset({"string"})
    optional = frozenset({"null"})
    assert content.input_fields(SCHEMA) == {
        ("amount",): number,
        ("supplier",): frozenset({"object"}),
        ("supplier", "name"): text,
        ("supplier", "country"): text | optional,
        ("lines",): frozenset({"array", "null"}),
        ("due",): text | optional,
        ("contact",): text | optional,
        ("link",): text | optional,
        ("at",): text | optional,
        ("a/b~c",): number | optional,
    }


@pytest.mark.parametrize(
    ("schema", "kinds"),
    [
        ({"type": ["number", "null"]}, {"number", "null"}),
        ({"type": "integer"}, {"number"}),
        ({"enum": ["DE", 1, None]}, {"string", "number", "null"}),
        ({"const": True}, {"boolean"}),
        ({"type": ["string", "number"], "enum": ["DE", True]}, {"string"}),
        ({"title": "anything"}, None),
        (True, None),
        (False, set()),
    ],
)
def test_a_required_fields_types_are_its_schemas_type_enum_and_const(
    schema: Any, kinds: Any
) -> None:
    fields = content.input_fields(
        {"type": "object", "required": ["f"], "properties": {"f": schema}}
    )
    assert fields[("f",)] == (None if kinds is None else frozenset(kinds))


def test_a_field_within_one_that_may_be_missing_or_no_object_may_be_null() -> None:
    fields = content.input_fields(
        {
            "type": "object",
            "required": ["sure", "either"],
            "properties": {
                "sure": {
                    "type": "object",
                    "required": ["eur"],
                    "properties": {"eur": {"type": "number"}},
                },
                "maybe": {
                    "type": "object",
                    "required": ["eur"],
                    "properties": {"eur": {"type": "number"}},
                },
                "either": {
                    "type": ["object", "string"],
                    "required": ["eur"],
                    "properties": {"eur": {"type": "number"}},
                },
                "any": {"required": ["eur"], "properties": {"eur": {"type": "number"}}},
                "cost.eur": {"type": "number"},
            },
        }
    )
    assert fields[("sure", "eur")] == {"number"}
    assert fields[("maybe", "eur")] == {"number", "null"}
    assert fields[("either", "eur")] == {"number", "null"}
    assert fields[("any", "eur")] == {"number", "null"}
    # A name with a dot in it is one name, which a condition's path cannot spell.
    assert fields[("cost.eur",)] == {"number", "null"}


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
    with pytest.raises(errors.Unprocessable, match="deeper than 16 levels at /a/a/a"):
        content.checked_input({"a": deep})
    with pytest.raises(errors.Unprocessable, match="deeper"):
        content.checked_input({"l": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]})


@pytest.mark.parametrize("data", [{"n": 2**53}, {"n": [1, -(2**53)]}, {"n": {"m": 10**30}}])
def test_an_integer_beyond_i_json_is_422_as_no_schema_states_it(data: Any) -> None:
    """The document's RunInput is any object: a rule over the numbers nested in
    it is one no schema of it states (422), not a malformed request (400)."""
    with pytest.raises(errors.Unprocessable, match=r"integer beyond .* at /n"):
        content.checked_input(data)


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
