"""Numbers that break the contract never enter, on each backend: a number in a
request body that is not finite as a JSON number (a double: 1e400) or that
a double would not keep as it was written (1.5e-400 would be 0) is refused
with 400, naming where it is (a JSON Pointer into the body), and nothing is
stored; so no answer, event or log line ever holds Infinity, which is not
JSON. A token's time claims are held to the same."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from tests.support import tokens
from tests.support.api import JSON_HEADERS, Api
from tests.support.shapes import assert_error

SCHEMA = '{"type": "object", "properties": {"amount": {"type": "number", %s}}}'


def workflow_with(api: Api, fragment: str) -> tuple[int, str]:
    """POST /workflows with `fragment` (raw JSON: Python cannot write 1e400)
    as the amount property's last keywords; its status and error."""
    raw = '{"name": "PO", "steps": ["Manager"], "input_schema": %s}' % (SCHEMA % fragment)
    response = api.post("/workflows", raw=raw.encode())
    return response.status_code, (response.json_body or {}).get("error", "")


@pytest.mark.parametrize(
    "fragment, pointer",
    [
        ('"const": 1e400', "/input_schema/properties/amount/const"),
        ('"default": -1e400', "/input_schema/properties/amount/default"),
        ('"examples": [1, 1e400]', "/input_schema/properties/amount/examples/1"),
        ('"enum": [1E+999]', "/input_schema/properties/amount/enum/0"),
        ('"minimum": 1e400', "/input_schema/properties/amount/minimum"),
        ('"maximum": ' + "9" * 400, "/input_schema/properties/amount/maximum"),
    ],
    ids=["const", "default", "examples", "enum", "minimum", "huge-integer"],
)
def test_a_number_beyond_every_double_in_a_schema_is_refused_where_it_is(
    api: Api, fragment: str, pointer: str
) -> None:
    status, error = workflow_with(api, fragment)

    assert status == 400
    assert f" at {pointer} " in error
    assert "beyond the range of a JSON number" in error and "null" not in error
    assert api.get("/workflows").json_body["items"] == []


def test_a_number_beyond_every_double_in_a_condition_is_refused(api: Api) -> None:
    raw = b'{"name": "PO", "steps": [{"name": "CFO", "when": {">": [{"var": "a"}, 1e400]}}]}'

    response = api.post("/workflows", raw=raw)

    assert_error(response, 400)
    assert " at /steps/0/when/>/1 " in response.json_body["error"]
    assert api.get("/workflows").json_body["items"] == []


@pytest.mark.parametrize(
    "number, read_as",
    [
        ("1.5e-400", "0"),
        ("0.30000000000000001", "0.3"),
        ("123456789012345678.5", "123456789012345680"),
    ],
    ids=["underflow", "seventeen-digits", "beyond-the-digits"],
)
def test_a_number_a_double_would_change_is_refused_not_stored_changed(
    api: Api, number: str, read_as: str
) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    raw = '{"workflow_id": %d, "title": "PO", "input": {"lines": [{"x": %s}]}}'

    response = api.post("/runs", raw=(raw % (workflow["id"], number)).encode())

    assert_error(response, 400)
    error = response.json_body["error"]
    assert f"{number} at /input/lines/0/x would be read as {read_as}" in error
    assert api.get("/runs").json_body["items"] == []


@pytest.mark.parametrize(
    "number", ["1.5", "0.1", "1e-7", "1E+2", "100e-2", "1.50", "-0.0", "5e-324", "1e308"]
)
def test_every_number_a_double_keeps_as_written_is_taken(api: Api, number: str) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    raw = f'{{"workflow_id": {workflow["id"]}, "title": "PO", "input": {{"x": {number}}}}}'

    response = api.post("/runs", raw=raw.encode())

    assert response.status_code == 201, response.body
    assert response.json_body["input"] == {"x": float(number)}


def test_a_key_with_a_slash_or_tilde_is_escaped_in_the_pointer(api: Api) -> None:
    raw = b'{"workflow_id": 1, "title": "PO", "input": {"a/b": {"c~d": 1e999}}}'

    response = api.post("/runs", raw=raw)

    assert_error(response, 400)
    assert " at /input/a~1b/c~0d " in response.json_body["error"]


def signed(payload: str) -> str:
    """An HS256 token of `payload` as written (PyJWT writes JSON with Python's encoder)."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = part(payload.encode())
    key = tokens.SECRET.encode()
    signature = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{part(signature)}"


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
def test_a_token_whose_time_is_beyond_every_double_is_refused(
    api: Api, secret_mode: None, claim: str
) -> None:
    times = {"exp": int(time.time()) + 600, claim: "1e400"}
    claims = ", ".join(f'"{name}": {value}' for name, value in times.items())
    payload = f'{{"iss": {json.dumps(tokens.ISSUER)}, "sub": "maria", {claims}}}'
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {signed(payload)}"}

    response = api.request("GET", "/runs", headers=headers)

    assert_error(response, 401)
