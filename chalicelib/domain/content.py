"""What a run is about: its input, and the schema a workflow holds it to. Pure.

A run's input is a JSON object given when it starts and never changed: at
most MAX_INPUT_BYTES in its canonical form (chalicelib/domain/audit.py's, the
form its digest is taken of), nesting at most MAX_DEPTH deep, its numbers
I-JSON's (RFC 7493: finite, integers within +-(2**53 - 1), so that a verifier
in any language reads the same values and computes the same digest).

A workflow may hold its runs' input to a JSON Schema (2020-12) of the subset
SCHEMA_KEYWORDS names, checked by jsonschema_rs: its patterns match in linear
time (Rust's regex engine; no lookaround, no backreference), so no input can
make a request spin, and a schema reads nothing from the network. The
validator is imported only where a schema is checked or applied: a cold start
that does neither never loads it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Optional

from chalicelib.domain import errors

MAX_INPUT_BYTES = 32 * 1024
# Containers within containers, the input object itself the first.
MAX_DEPTH = 16
MAX_SAFE_INTEGER = 2**53 - 1
# A schema is a definition, not content: the same budget as an input.
MAX_SCHEMA_BYTES = 32 * 1024
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# The keywords a schema may use: assertions, then annotations.
SCHEMA_KEYWORDS = (
    "type",
    "required",
    "properties",
    "additionalProperties",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "format",
    "$schema",
    "title",
    "description",
    "default",
    "examples",
)
FORMATS = ("date", "date-time", "email", "uri")


def checked_input(data: Any) -> dict[str, Any]:
    """`data` as a run's input: InvalidInput if it cannot be one,
    PayloadTooLarge if its canonical form is larger than MAX_INPUT_BYTES."""
    if not isinstance(data, dict):
        raise errors.InvalidInput("'input' must be a JSON object")
    found = _value_problem(data, "", 1)
    if found:
        raise errors.InvalidInput(found)
    size = canonical_size(data)
    if size > MAX_INPUT_BYTES:
        raise errors.PayloadTooLarge(
            f"'input' is {size:,} bytes in its canonical form; at most {MAX_INPUT_BYTES:,}"
        )
    return data


def _value_problem(value: Any, at: str, depth: int) -> Optional[str]:
    """The first thing in `value`, at JSON Pointer `at`, that no input may hold."""
    if isinstance(value, (dict, list)):
        if depth > MAX_DEPTH:
            return f"'input' nests deeper than {MAX_DEPTH} levels at {at or '/'}"
        entries = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in entries:
            if isinstance(key, str) and not _encodable(key):
                return f"'input' has a key that is not valid Unicode text at {at or '/'}"
            found = _value_problem(item, f"{at}/{pointer_token(key)}", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, str):
        return None if _encodable(value) else f"'input' is not valid Unicode text at {at}"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            return (
                f"'input' holds an integer beyond +-{MAX_SAFE_INTEGER} at {at}; send it as a "
                "string (I-JSON, RFC 7493)"
            )
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"'input' holds a number too large for JSON at {at}"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def canonical_size(data: Any) -> int:
    from chalicelib.domain.audit import canonical

    return len(canonical(data).encode("utf-8"))


def pointer_token(key: Any) -> str:
    """A key or index as a JSON Pointer (RFC 6901) token."""
    return str(key).replace("~", "~0").replace("/", "~1")


# -- schemas -----------------------------------------------------------------


def checked_schema(schema: Any) -> dict[str, Any]:
    """`schema` as a workflow's input_schema; InvalidInput if it cannot be one."""
    found = schema_problem(schema)
    if found:
        raise errors.InvalidInput(found)
    return dict(schema)


def schema_problem(schema: Any) -> Optional[str]:
    """Why `schema` cannot be a workflow's input_schema (None: it can): it
    describes an object, uses SCHEMA_KEYWORDS and FORMATS only, is valid JSON
    Schema 2020-12, and its patterns compile for the linear-time engine."""
    if not isinstance(schema, dict):
        return "'input_schema' must be a JSON Schema object"
    if schema.get("type") != "object":
        return "'input_schema' must describe an object: its 'type' must be \"object\""
    if schema.get("$schema", SCHEMA_DIALECT) != SCHEMA_DIALECT:
        return f"'input_schema' is JSON Schema 2020-12: its '$schema' may only be {SCHEMA_DIALECT}"
    found = _subschema_problem(schema, "", 1)
    if found:
        return found
    if canonical_size(schema) > MAX_SCHEMA_BYTES:
        return f"'input_schema' must be at most {MAX_SCHEMA_BYTES:,} bytes in its canonical form"
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(schema)
        _validator(_text(schema))
    except jsonschema_rs.ValidationError as exc:
        where = _pointer(exc.instance_path)
        return f"'input_schema' is not a valid JSON Schema at {where or '/'}: {exc.message}"
    return None


def _subschema_problem(schema: Any, at: str, depth: int) -> Optional[str]:
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return f"'input_schema' must hold a schema (an object or a boolean) at {at or '/'}"
    if depth > MAX_DEPTH:
        return f"'input_schema' nests deeper than {MAX_DEPTH} levels at {at}"
    unknown = sorted(set(schema) - set(SCHEMA_KEYWORDS))
    if unknown:
        return (
            f"'input_schema' uses {unknown[0]!r} at {at or '/'}, which this service does not "
            f"apply; it applies {', '.join(SCHEMA_KEYWORDS)}"
        )
    if "format" in schema and schema["format"] not in FORMATS:
        return f"'input_schema' format at {at or '/'} must be one of {', '.join(FORMATS)}"
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return f"'input_schema' properties at {at or '/'} must be an object of schemas"
    for name, property_schema in properties.items():
        found = _subschema_problem(
            property_schema, f"{at}/properties/{pointer_token(name)}", depth + 1
        )
        if found:
            return found
    for keyword in ("additionalProperties", "items"):
        if keyword in schema:
            found = _subschema_problem(schema[keyword], f"{at}/{keyword}", depth + 1)
            if found:
                return found
    return None


def schema_paths(schema: Mapping[str, Any]) -> frozenset[str]:
    """The input paths a schema defines, as conditions' `var` names them: each
    property, and each property of a property that is an object (a.b)."""
    paths: set[str] = set()

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        for name, child in node.get("properties", {}).items():
            path = f"{prefix}{name}"
            paths.add(path)
            walk(child, f"{path}.")

    walk(schema, "")
    return frozenset(paths)


def violation(schema: Optional[Mapping[str, Any]], data: Mapping[str, Any]) -> Optional[str]:
    """The first way `data` fails `schema`, at its JSON Pointer: "/amount: -1 is
    less than the minimum of 0" (None: it meets it, or there is no schema)."""
    if schema is None:
        return None
    first = next(_validator(_text(schema)).iter_errors(data), None)
    if first is None:
        return None
    where = _pointer(first.instance_path)
    kind = first.kind
    missing = getattr(kind, "property", None) if type(kind).__name__ == "Required" else None
    if isinstance(missing, str):
        # The pointer of what is missing, not of the object that misses it.
        where = f"{where}/{pointer_token(missing)}"
    unexpected = getattr(kind, "unexpected", None)
    if type(kind).__name__ == "AdditionalProperties" and unexpected:
        where = f"{where}/{pointer_token(unexpected[0])}"
    return f"{where or '/'}: {first.message}"


def _pointer(path: Any) -> str:
    return "".join(f"/{pointer_token(part)}" for part in path)


def _text(schema: Mapping[str, Any]) -> str:
    from chalicelib.domain.audit import canonical

    return canonical(schema)


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> Any:
    """The compiled validator of a schema (by its canonical text): a warm
    function compiles each workflow's schema once."""
    import json

    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(
        json.loads(schema_text),
        validate_formats=True,
        pattern_options=jsonschema_rs.RegexOptions(),
    )
