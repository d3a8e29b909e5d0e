"""Checks a response against chalicelib/openapi.json: what the API tests receive
must be what the document promises for that route, method and status."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote, urlsplit

import jsonschema
from referencing import Registry
from referencing.jsonschema import DRAFT202012

DOCUMENT_PATH = Path(__file__).resolve().parents[2] / "chalicelib" / "openapi.json"
# Where the document's own "#/components/..." references resolve from.
DOCUMENT_URI = "urn:approval-workflows:openapi"
JSON = "application/json"


@functools.cache
def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DOCUMENT_PATH.read_text(encoding="utf-8"))
    return loaded


@functools.cache
def _registry() -> Registry[Any]:
    registry: Registry[Any] = Registry().with_resource(
        DOCUMENT_URI, DRAFT202012.create_resource(document())
    )
    return registry


def _pointer(*segments: str) -> str:
    escaped = (segment.replace("~", "~0").replace("/", "~1") for segment in segments)
    return "#/" + "/".join(quote(segment, safe="") for segment in escaped)


def _validate(instance: Any, *segments: str) -> None:
    """Validate `instance` against the schema at `segments` inside the document."""
    _validator(*segments).validate(instance)


@functools.cache
def _validator(*segments: str) -> jsonschema.Draft202012Validator:
    """One validator per place in the document: every API test checks every
    response it receives, and building one (and resolving its references
    anew) cost more than the check."""
    schema = {"$ref": DOCUMENT_URI + _pointer(*segments)}
    return jsonschema.Draft202012Validator(
        schema, registry=_registry(), format_checker=jsonschema.FormatChecker()
    )


@functools.cache
def _header_validator(schema: str) -> jsonschema.Draft202012Validator:
    """What jsonschema.validate does with a header's (JSON-encoded) schema:
    the schema checked against its metaschema, then a validator for it; once."""
    loaded = json.loads(schema)
    validator_class = jsonschema.validators.validator_for(loaded)
    validator_class.check_schema(loaded)
    validator: jsonschema.Draft202012Validator = validator_class(loaded)
    return validator


def path_template(path: str) -> Optional[str]:
    """The document's path that `path` (query string ignored) is an instance of."""
    path = urlsplit(path).path
    paths = document()["paths"]
    if path in paths:
        return path
    return next((template for template in paths if _instance_of(template, path)), None)


def _instance_of(template: str, path: str) -> bool:
    parts, segments = template.split("/"), path.split("/")
    return len(parts) == len(segments) and all(
        part == segment or (part.startswith("{") and segment != "")
        for part, segment in zip(parts, segments, strict=True)
    )


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    """A document node, following one local $ref."""
    ref = node.get("$ref")
    if not ref:
        return node
    target: Any = document()
    for segment in _ref_segments(ref):
        target = target[segment]
    return dict(target)


def _ref_segments(ref: str) -> list[str]:
    return [
        part.replace("~1", "/").replace("~0", "~") for part in ref.removeprefix("#/").split("/")
    ]


def response(template: str, method: str, status: str) -> tuple[dict[str, Any], list[str]]:
    """The documented response (shared ones in components/responses followed),
    and where it stands in the document."""
    node = document()["paths"][template][method.lower()]["responses"][status]
    ref = node.get("$ref")
    if ref:
        return _resolve(node), _ref_segments(ref)
    return node, ["paths", template, method.lower(), "responses", status]


def assert_conforms(
    method: str, path: str, status: int, headers: Mapping[str, str], body: bytes
) -> None:
    """The response is one the document lists for `method` on `path`, in shape.

    A method that the path does not list must be refused with 405 and the error shape.
    """
    template = path_template(path)
    assert template is not None, f"{path} is no path of the OpenAPI document"
    operation = document()["paths"][template].get(method.lower())
    if operation is None:
        assert status == 405, f"{method} {template} is undocumented but answered {status}"
        assert _header(headers, "X-Request-Id"), "the 405 has no X-Request-Id"
        _assert_json(headers)
        _validate(json.loads(body), "components", "schemas", "Error")
        return
    responses = operation["responses"]
    where = f"{method} {template} {status}"
    assert str(status) in responses, f"{where} is not documented (body {body[:200]!r})"
    documented, where_in_document = response(template, method, str(status))
    for name, header in documented.get("headers", {}).items():
        header = _resolve(header)
        value = _header(headers, name)
        if value is None:
            assert not header.get("required"), f"{where}: header {name} is missing"
        else:
            # A header sent more than once (Set-Cookie) arrives as a list: each must conform.
            for each in value if isinstance(value, list) else [value]:
                _header_validator(json.dumps(header["schema"], sort_keys=True)).validate(each)
    if "content" in documented:
        media_type = _media_type(headers)
        assert media_type in documented["content"], f"{where}: Content-Type {media_type}"
        if media_type == JSON:
            _validate(json.loads(body), *where_in_document, "content", JSON, "schema")
        else:
            body.decode("utf-8")  # the page's files are text


def _media_type(headers: Mapping[str, str]) -> str:
    return (_header(headers, "Content-Type") or "").split(";")[0].strip()


def _assert_json(headers: Mapping[str, str]) -> None:
    assert _media_type(headers) == JSON, _header(headers, "Content-Type")


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    return next((value for key, value in headers.items() if key.lower() == name.lower()), None)
