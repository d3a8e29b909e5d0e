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
from chalicelib.domain.conditions import kind_of

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
    """`data` as a run's input: InvalidInput if it cannot be one by what the
    document states of it (an object, of valid text), Unprocessable if it
    breaks a rule no schema of the document states (its depth, its integers'
    range), PayloadTooLarge if its canonical form is larger than MAX_INPUT_BYTES."""
    if not isinstance(data, dict):
        raise errors.InvalidInput("'input' must be a JSON object")
    found = _value_problem(data, "", 1)
    if found:
        raise found
    size = canonical_size(data)
    if size > MAX_INPUT_BYTES:
        raise errors.PayloadTooLarge(
            f"'input' is {size:,} bytes in its canonical form; at most {MAX_INPUT_BYTES:,}"
        )
    return data


def _value_problem(value: Any, at: str, depth: int) -> Optional[errors.InvalidInput]:
    """The first thing in `value`, at JSON Pointer `at`, that no input may hold."""
    if isinstance(value, (dict, list)):
        if depth > MAX_DEPTH:
            return errors.Unprocessable(
                f"'input' nests deeper than {MAX_DEPTH} levels at {at or '/'}"
            )
        entries = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in entries:
            if isinstance(key, str) and not _encodable(key):
                return errors.InvalidInput(
                    f"'input' has a key that is not valid Unicode text at {at or '/'}"
                )
            found = _value_problem(item, f"{at}/{pointer_token(key)}", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, str):
        if _encodable(value):
            return None
        return errors.InvalidInput(f"'input' is not valid Unicode text at {at}")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            return errors.Unprocessable(
                f"'input' holds an integer beyond +-{MAX_SAFE_INTEGER} at {at}; send it as a "
                "string (I-JSON, RFC 7493)"
            )
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return errors.InvalidInput(f"'input' holds a number too large for JSON at {at}")
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
    """`schema` as a workflow's input_schema: InvalidInput if it cannot be one
    by what the document's InputSchema states (its own keywords and their
    values), Unprocessable if it breaks a rule no schema of the document
    states (a schema within it that breaks them, its depth, its size, a
    pattern the linear-time engine cannot match)."""
    found = schema_problem(schema)
    if found:
        raise errors.InvalidInput(found)
    unmet = schema_limit(schema)
    if unmet:
        raise errors.Unprocessable(unmet)
    return dict(schema)


def schema_problem(schema: Any) -> Optional[str]:
    """Why `schema` cannot be a workflow's input_schema by what the document
    states (None: it can): it describes an object, uses SCHEMA_KEYWORDS and
    FORMATS only, and is valid JSON Schema 2020-12, the schemas within it
    aside (the document does not recurse into them: schema_limit does)."""
    if not isinstance(schema, dict):
        return "'input_schema' must be a JSON Schema object"
    if schema.get("type") != "object":
        return "'input_schema' must describe an object: its 'type' must be \"object\""
    if schema.get("$schema", SCHEMA_DIALECT) != SCHEMA_DIALECT:
        return f"'input_schema' is JSON Schema 2020-12: its '$schema' may only be {SCHEMA_DIALECT}"
    own = _shallow(schema)
    return _subschema_problem(own, "", 1) or _meta_problem(own)


def schema_limit(schema: dict[str, Any]) -> Optional[str]:
    """Which rule no schema of the document states `schema` (valid by what it
    states) breaks: the schemas within it are of the subset too, it nests at
    most MAX_DEPTH deep, is at most MAX_SCHEMA_BYTES in its canonical form,
    and its patterns compile for the linear-time engine (None: it breaks none)."""
    found = _subschema_problem(schema, "", 1)
    if found:
        return found
    if _deeper_than(schema, MAX_DEPTH):
        return f"'input_schema' nests deeper than {MAX_DEPTH} levels"
    if canonical_size(schema) > MAX_SCHEMA_BYTES:
        return f"'input_schema' must be at most {MAX_SCHEMA_BYTES:,} bytes in its canonical form"
    found = _meta_problem(schema)
    if found:
        return found
    import jsonschema_rs

    try:
        _validator(_text(schema))
    except jsonschema_rs.ValidationError as exc:
        where = _pointer(exc.instance_path)
        return (
            f"'input_schema' holds a pattern this service cannot match at {where or '/'}: "
            f"{exc.message} (patterns match in linear time: no lookaround, no backreferences)"
        )
    return None


def _meta_problem(schema: dict[str, Any]) -> Optional[str]:
    """Where `schema` is not valid JSON Schema 2020-12 (None: it is)."""
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        where = _pointer(exc.instance_path)
        return f"'input_schema' is not a valid JSON Schema at {where or '/'}: {exc.message}"
    return None


def _shallow(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each schema object directly within it emptied: what the
    document's InputSchema states of it."""
    own = dict(schema)
    if isinstance(own.get("properties"), dict):
        own["properties"] = {
            name: {} if isinstance(within, dict) else within
            for name, within in own["properties"].items()
        }
    for keyword in ("additionalProperties", "items"):
        if isinstance(own.get(keyword), dict):
            own[keyword] = {}
    return own


def _subschema_problem(schema: Any, at: str, depth: int) -> Optional[str]:
    if isinstance(schema, bool) or depth > MAX_DEPTH:
        return None
    if not isinstance(schema, dict):
        return f"'input_schema' must hold a schema (an object or a boolean) at {at or '/'}"
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


def _subschemas(schema: dict[str, Any]) -> list[Any]:
    """The schemas directly within `schema`: its properties', additionalProperties, items."""
    properties = schema.get("properties", {})
    within = list(properties.values()) if isinstance(properties, dict) else []
    return within + [
        schema[keyword] for keyword in ("additionalProperties", "items") if keyword in schema
    ]


def _deeper_than(schema: Any, most: int) -> bool:
    """Whether `schema`, itself the first level, nests schemas deeper than `most` levels."""
    if not isinstance(schema, dict):
        return False
    if most < 1:
        return True
    return any(_deeper_than(within, most - 1) for within in _subschemas(schema))


def input_fields(schema: Mapping[str, Any]) -> dict[tuple[str, ...], Optional[frozenset[str]]]:
    """The paths of the input a schema defines, as conditions read them (each
    property, and each property of a property, as the tuple of their names),
    with the JSON types ("integer" a number) the value there may have in an
    input that meets the schema: None where the schema does not say, "null"
    among them where the value may be missing (the property is not required,
    or what holds it may be no object)."""
    fields: dict[tuple[str, ...], Optional[frozenset[str]]] = {}

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...], missing: bool) -> None:
        own = _kinds(node)
        # Beneath a value that may be no object, a path reads null.
        missing = missing or own is None or bool(own - {"object"})
        required = node.get("required", [])
        for name, child in node.get("properties", {}).items():
            path, absent = (*prefix, name), missing or name not in required
            kinds = _kinds(child)
            fields[path] = None if kinds is None else kinds | ({"null"} if absent else set())
            if isinstance(child, dict):
                walk(child, path, absent)

    walk(schema, (), False)
    return fields


def _kinds(schema: Any) -> Optional[frozenset[str]]:
    """The JSON types a (sub)schema admits, by its type, enum and const (None:
    any; a schema of false admits none)."""
    if schema is False:
        return frozenset()
    if not isinstance(schema, dict):
        return None
    found: Optional[frozenset[str]] = None
    if "type" in schema:
        named = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        found = frozenset("number" if kind == "integer" else kind for kind in named)
    for values in ([schema["const"]] if "const" in schema else None, schema.get("enum")):
        if isinstance(values, list):
            kinds = frozenset(kind_of(value) for value in values)
            found = kinds if found is None else found & kinds
    return found


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
