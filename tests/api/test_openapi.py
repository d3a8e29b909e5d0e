"""The OpenAPI document (chalicelib/openapi.json) stays true to the app.

Every API test also checks each response it receives against the document
(tests/support/openapi_contract.py, called by the Api helper); the tests here
check the document itself, what GET /openapi.json serves, and that check.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from chalice.test import Client
from openapi_spec_validator import validate

import app as app_module
from chalicelib.api import http, validation
from chalicelib.api.representations import shape
from chalicelib.domain import audit, errors, limits, names
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import MAX_ID, Action, Run, Step, Workflow
from tests.support import openapi_contract
from tests.support.api import Api

DOCUMENT = openapi_contract.document()
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def app_operations() -> set[tuple[str, str]]:
    return {(method, path) for path, entries in app_module.app.routes.items() for method in entries}


def documented_operations() -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in DOCUMENT["paths"].items()
        for method in item
        if method in METHODS
    }


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            yield method.upper(), path, operation


def schema(name: str) -> dict[str, Any]:
    return dict(DOCUMENT["components"]["schemas"][name])


def assert_valid(instance: Any, name: str) -> None:
    openapi_contract._validate(instance, "components", "schemas", name)


@pytest.fixture
def bare_client() -> Iterator[Client]:
    """Chalice's test client, for requests that need no storage."""
    with Client(app_module.app) as test_client:
        yield test_client


# -- the document --------------------------------------------------------------


def test_document_is_valid_openapi() -> None:
    validate(DOCUMENT)


def test_every_route_of_the_app_is_documented_with_its_methods() -> None:
    assert app_operations() <= documented_operations()


def test_every_documented_path_is_a_route_of_the_app() -> None:
    assert set(DOCUMENT["paths"]) == set(app_module.app.routes)


def test_every_documented_operation_is_a_route_of_the_app() -> None:
    assert documented_operations() == app_operations()


# The approvers' page: text for a browser, not JSON (chalicelib/api/page.py).
PAGE = {"/": ["text/html"], "/ui/{name}": ["text/javascript", "text/css"]}
# HTML pages for a browser, every answer of theirs that the service writes
# (docs/notifications.md): the one-time action links.
HTML_PAGES = ("/act/{token}",)
# Slack's requests, signed by Slack (docs/notifications.md).
SLACK_INTERACTIONS = "/integrations/slack/interactions"


def test_every_response_is_json_with_a_request_id() -> None:
    for method, path, operation in operations():
        for status in operation["responses"]:
            if path in PAGE and status == "200":
                continue  # test_the_pages_files_are_documented_as_text
            response, _ = openapi_contract.response(path, method, status)
            if path in HTML_PAGES and "text/html" in response.get("content", {}):
                continue  # test_the_link_pages_are_html_with_the_pages_headers
            ids = {
                name: header["$ref"].rpartition("/")[2]
                for name, header in response["headers"].items()
            }
            # The service's answers carry X-Request-Id; API Gateway's own carry
            # x-amzn-RequestId (a gateway response cannot set X-Request-Id).
            assert (
                ids.get("X-Request-Id") in ("XRequestId", "XRequestIdIfServed")
                or ids.get("x-amzn-RequestId") == "GatewayRequestId"
            ), (method, path, status)
            if status.startswith("3"):
                # Sign-in's redirects, for a browser: no body, a Location.
                assert "content" not in response and "Location" in ids, (method, path, status)
                continue
            assert list(response["content"]) == ["application/json"], (method, path, status)


def test_the_pages_files_are_documented_as_text_with_their_headers() -> None:
    for path, media_types in PAGE.items():
        response, _ = openapi_contract.response(path, "get", "200")
        assert list(response["content"]) == media_types
        for media_type in media_types:
            assert response["content"][media_type]["schema"] == {"type": "string"}
        assert {
            "X-Request-Id",
            "Content-Security-Policy",
            "X-Content-Type-Options",
            "Referrer-Policy",
            "Cache-Control",
        } == set(response["headers"])
        assert DOCUMENT["paths"][path]["get"]["security"] == []


def test_the_link_pages_are_html_with_the_pages_headers() -> None:
    for method, path, operation in operations():
        if path not in HTML_PAGES:
            continue
        assert operation["security"] == []
        for status in operation["responses"]:
            response, _ = openapi_contract.response(path, method, status)
            if "text/html" in response["content"]:
                assert {"Content-Security-Policy", "Referrer-Policy"} <= set(response["headers"])


def test_every_201_names_its_location() -> None:
    created = [path for _, path, operation in operations() if "201" in operation["responses"]]
    assert len(created) == 5
    for path in created:
        assert "Location" in openapi_contract.response(path, "post", "201")[0]["headers"], path


def test_every_post_takes_an_idempotency_key_and_documents_its_answers() -> None:
    key = {"$ref": "#/components/parameters/IdempotencyKey"}
    for method, path, operation in operations():
        if method != "POST" or path.startswith("/auth/"):
            continue  # sign-in's POSTs change only the browser's cookie: retried as they are
        if path in (*HTML_PAGES, SLACK_INTERACTIONS):
            continue  # a link decides once by its token; Slack's requests carry no key
        assert key in operation["parameters"], path
        assert {"400", "409", "415", "422", "503"} <= set(operation["responses"]), path
        success = next(status for status in operation["responses"] if status < "300")
        documented, _ = openapi_contract.response(path, method, success)
        assert "Idempotent-Replayed" in documented["headers"], path


def test_request_limits_are_the_engines() -> None:
    new_workflow = schema("NewWorkflow")["properties"]
    assert new_workflow["name"]["maxLength"] == validation.MAX_NAME
    assert new_workflow["description"]["maxLength"] == validation.MAX_TEXT
    assert new_workflow["steps"]["maxItems"] == limits.MAX_INITIAL_STEPS
    named_step, step_object = new_workflow["steps"]["items"]["oneOf"]
    assert named_step["maxLength"] == validation.MAX_NAME
    assert step_object == {"$ref": "#/components/schemas/NewStep"}
    new_step = schema("NewStep")["properties"]
    assert new_step["name"]["maxLength"] == validation.MAX_NAME
    assert new_step["approvers"]["maxItems"] == validation.MAX_APPROVERS
    assert new_step["required_approvals"]["maximum"] == validation.MAX_REQUIRED_APPROVALS
    assert new_step["deadline_seconds"]["maximum"] == validation.MAX_DEADLINE_SECONDS
    assert new_step["escalate_to"]["maxItems"] == validation.MAX_ESCALATE_TO
    for name in ("UserName", "GroupName", "Principal", "Delegate"):
        assert f"{{1,{validation.MAX_ACTOR}}}" in schema(name)["pattern"], name
    assert schema("Cancellation")["properties"]["reason"]["maxLength"] == validation.MAX_TEXT
    assert schema("NewRun")["properties"]["title"]["maxLength"] == validation.MAX_TITLE
    decision = schema("Decision")["properties"]
    assert decision["actor"]["allOf"] == [{"$ref": "#/components/schemas/UserName"}]
    assert decision["comment"]["maxLength"] == validation.MAX_TEXT
    assert decision["groups"]["maxItems"] == validation.MAX_GROUPS
    assert decision["groups"]["items"] == {"$ref": "#/components/schemas/GroupName"}
    assert schema("NewRun")["properties"]["requested_by"]["anyOf"][0] == {
        "$ref": "#/components/schemas/UserName"
    }
    assert schema("Return")["properties"]["comment"]["maxLength"] == validation.MAX_TEXT
    resubmission = schema("Resubmission")["properties"]
    assert resubmission["actor"]["allOf"] == [{"$ref": "#/components/schemas/UserName"}]
    assert resubmission["comment"]["maxLength"] == validation.MAX_TEXT
    delegation = schema("NewDelegation")["properties"]
    assert delegation["delegator"]["allOf"] == [{"$ref": "#/components/schemas/UserName"}]
    assert delegation["reason"]["maxLength"] == validation.MAX_TEXT
    assert delegation["delegate"]["allOf"] == [{"$ref": "#/components/schemas/Delegate"}]
    # A name as sent: its longest kind, then the name (what the page's fields take).
    for name, kind in (
        ("UserName", "user:"),
        ("GroupName", "group:"),
        ("Principal", "group:"),
        ("Delegate", "group:"),
    ):
        assert schema(name)["maxLength"] == len(kind) + validation.MAX_ACTOR, name
    assert schema("Id")["maximum"] == MAX_ID
    for name in ("NewWorkflow", "NewStep", "NewRun", "Decision", "Cancellation"):
        assert schema(name)["additionalProperties"] is False, name


def test_the_limits_of_a_definition_are_stated() -> None:
    """Where a schema can say a limit (the steps a workflow holds), it does;
    where not, the 422 that refuses it names each, as limits.py has it."""
    assert schema("Workflow")["properties"]["steps"]["maxItems"] == limits.MAX_STEPS
    documented, _ = openapi_contract.response("/workflows/{workflow_id}/steps", "post", "422")
    for value in (
        limits.MAX_STEPS,
        limits.MAX_APPROVALS,
        limits.MAX_SKIPPED,
        limits.MAX_STEP_BYTES,
        limits.MAX_CONDITION_BYTES,
        limits.MAX_DEFINITION_BYTES,
    ):
        assert f"{value:,}" in documented["description"], value


def required_texts() -> dict[str, dict[str, Any]]:
    """The schemas of the strings the engine trims and refuses when blank."""
    return {
        "NewWorkflow.name": schema("NewWorkflow")["properties"]["name"],
        "NewWorkflow.steps[]": schema("NewWorkflow")["properties"]["steps"]["items"]["oneOf"][0],
        "NewStep.name": schema("NewStep")["properties"]["name"],
        "NewRun.title": schema("NewRun")["properties"]["title"],
    }


def principal_texts() -> dict[str, dict[str, Any]]:
    """The schemas of the names of users and groups (names.written_problem)."""
    return {name: schema(name) for name in ("UserName", "GroupName", "Principal", "Delegate")}


def test_the_principal_patterns_are_what_the_rule_writes() -> None:
    """scripts/openapi_names.py writes them from chalicelib/domain/names.py:
    run it when the rule changes."""
    from scripts import openapi_names

    written = openapi_names.patterns()
    assert {name: text["pattern"] for name, text in principal_texts().items()} == written


def test_the_principal_pattern_is_the_rule_of_a_users_name() -> None:
    """Every code point a user's or group's name may not hold anywhere, the
    plain space alone where it stands alone, and the reserved starts (system:,
    user:, group:) in every spelling that is one name (case, width, ligature)."""
    valid = re.compile(schema("UserName")["pattern"])
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # lone surrogates are not text; JSON bodies cannot carry them
        char = chr(code)
        refused = names.written_problem(f"x{char}y") is not None
        assert bool(valid.search(f"x{char}y")) is not refused, hex(code)
        assert bool(valid.search(char)) is (not refused and char != " "), hex(code)
    reserved = ("system:deadline", " System:x", "ＳＹＳＴＥＭ：x", "ſystem:x", "sy\ufb06em:x")
    for name in (*reserved, "group:x", "Group:x", "USER:x", "user:user:x", "user:group:x"):
        assert names.written_problem(name.removeprefix("user:").strip(" ")) is not None
        assert not valid.search(name), name
    assert valid.search("systemd") and valid.search("my system:x") and valid.search("user:x")
    assert not valid.search("rita\n")  # no trailing newline slips past the end


@pytest.mark.parametrize(
    "schema_name, accepted, refused",
    [
        ("UserName", ["rita", "user:rita", "user: rita "], ["group:x", "user:", "user:  "]),
        ("GroupName", ["finance", "group:finance"], ["user:x", "group:"]),
        ("Principal", ["user:rita", "group:finance"], ["rita", "user:group:x", "group:"]),
        ("Delegate", ["rita", "user:rita", "group:finance"], ["user:", "group:user:x"]),
    ],
)
def test_each_kind_of_name_takes_its_prefixes(
    schema_name: str, accepted: list[str], refused: list[str]
) -> None:
    valid = re.compile(schema(schema_name)["pattern"])
    assert [name for name in accepted if not valid.search(name)] == []
    assert [name for name in refused if valid.search(name)] == []
    limit = validation.MAX_ACTOR
    assert valid.search("n" * limit) or schema_name == "Principal"
    assert not valid.search("n" * (limit + 1))


def test_required_text_pattern_is_the_rule_validation_applies() -> None:
    (pattern,) = {text["pattern"] for text in required_texts().values()}
    valid = re.compile(pattern)
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue  # lone surrogates are not text; JSON bodies cannot carry them
        accepted = not names.is_blank(char) and not names.has_control_characters(char)
        assert bool(valid.search(char)) is accepted, hex(code)
        assert bool(valid.search(f"x{char}")) is not names.has_control_characters(char)


@pytest.mark.parametrize(
    "value",
    [
        "Finance",
        " x ",
        "",
        "   ",
        "\t\n",
        "\u2003",
        "\x1c",
        "\ufeff",
        "\u200b x",
        "a\tb",
        "a\rb",
        "Cafe\u0301",
        "n" * 200,
        "n" * 201,
        " " + "n" * 199,
    ],
    ids=repr,
)
def test_a_required_name_is_valid_exactly_when_the_service_accepts_it(value: str) -> None:
    name_schema = required_texts()["NewStep.name"]
    try:
        validation.new_step({"name": value})
        accepted = True
    except errors.InvalidInput:
        accepted = False
    assert jsonschema.Draft202012Validator(name_schema).is_valid(value) is accepted


def test_each_rule_no_schema_states_is_a_documented_422_and_cursors_a_400() -> None:
    """Unprocessable (422) is what the service answers for a request valid by
    the document that breaks a rule no schema can state; the operations that
    can answer it say which rule. A made-up cursor is a 400, said where
    cursors are taken."""
    assert http.status_of(errors.Unprocessable("x")) == 422
    assert http.status_of(errors.InvalidInput("x")) == 400
    for path in ("/workflows", "/workflows/{workflow_id}/steps"):
        documented, _ = openapi_contract.response(path, "post", "422")
        assert "required_approvals" in documented["description"], path
        assert "NFC" in documented["description"], path
    reject, _ = openapi_contract.response("/runs/{run_id}/reject", "post", "422")
    assert "reject_requires_comment" in reject["description"]
    cursor = {"$ref": "#/components/parameters/Cursor"}
    taking = [path for method, path, op in operations() if cursor in op.get("parameters", [])]
    assert sorted(taking) == [
        "/contacts",
        "/delegations",
        "/inbox",
        "/runs",
        "/runs/{run_id}/events",
        "/workflows",
        "/workflows/{workflow_id}/versions",
    ]
    for path in taking:
        documented, _ = openapi_contract.response(path, "get", "400")
        assert "cursor" in documented["description"], path
    assert "400" in DOCUMENT["components"]["parameters"]["Cursor"]["description"]


def test_shared_responses_are_each_used_more_than_once() -> None:
    uses = [
        response["$ref"].rpartition("/")[2]
        for _, _, operation in operations()
        for response in operation["responses"].values()
        if "$ref" in response
    ]
    shared = DOCUMENT["components"]["responses"]
    assert sorted(set(uses)) == sorted(shared)
    assert all(uses.count(name) > 1 for name in shared), uses
    inline = [
        json.dumps(response, sort_keys=True)
        for _, _, operation in operations()
        for response in operation["responses"].values()
        if "$ref" not in response
    ]
    assert len(inline) == len(set(inline)), "a response is written out twice"


def test_documented_shapes_are_the_models() -> None:
    step = Step(1, 1, "Manager", 1)
    assert_valid(
        shape(Workflow(1, "Purchase", "", "2026-11-29T09:24:05.616Z", (step,))), "Workflow"
    )
    action = Action(1, 1, 1, "Manager", ActionKind.APPROVE, "maria", "", "2026-11-29T09:24:05.616Z")
    for run in (
        Run(
            1,
            1,
            "PO",
            RunStatus.IN_PROGRESS,
            step,
            "2026-11-29T09:24:05.616Z",
            "2026-11-29T09:24:05.616Z",
        ),
        Run(
            2,
            1,
            "PO",
            RunStatus.COMPLETED,
            None,
            "2026-11-29T09:24:05.616Z",
            "2026-11-29T09:24:06.000Z",
            (action,),
        ),
    ):
        assert_valid(shape(run), "Run")
        summary = {key: value for key, value in shape(run).items() if key != "actions"}
        assert_valid({"items": [summary], "next_cursor": None}, "RunPage")
        with pytest.raises(jsonschema.ValidationError):
            assert_valid({"items": [shape(run)], "next_cursor": None}, "RunPage")
        assert_valid(shape(audit.audit_of(run)), "RunAudit")
    assert_valid({"items": [], "next_cursor": "opaque"}, "WorkflowPage")
    assert_valid({"error": "Run is at step 'Finance'", "current_step_id": 2}, "Error")


# -- GET /openapi.json ---------------------------------------------------------


def test_openapi_json_serves_the_document(bare_client: Client) -> None:
    response = bare_client.http.get("/openapi.json")
    openapi_contract.assert_conforms(
        "GET", "/openapi.json", response.status_code, response.headers, response.body
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    served = json.loads(response.body)
    assert served.pop("servers") == [{"url": "/"}]
    assert served == DOCUMENT


def test_openapi_json_points_its_servers_at_the_stage(
    bare_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As API Gateway calls the function for https://.../api/openapi.json.
    monkeypatch.setattr(app_module.api, "base_path", lambda: "/api")
    response = bare_client.http.get("/openapi.json")
    assert response.json_body["servers"] == [{"url": "/api"}]


# -- the check every API test makes ----------------------------------------------

JSON_HEADERS = {"Content-Type": "application/json", "X-Request-Id": "r1"}


@pytest.mark.parametrize(
    "method, path, status, headers, body",
    [
        pytest.param("GET", "/runs/1", 418, JSON_HEADERS, b'{"error": "x"}', id="status"),
        pytest.param(
            "GET",
            "/runs/1",
            404,
            {"Content-Type": "application/json"},
            b'{"error": "x"}',
            id="no-request-id",
        ),
        pytest.param("GET", "/runs/1", 404, JSON_HEADERS, b'{"message": "x"}', id="error-shape"),
        pytest.param(
            "GET",
            "/runs/1",
            404,
            {**JSON_HEADERS, "Content-Type": "text/plain"},
            b'{"error": "x"}',
            id="content-type",
        ),
        pytest.param("POST", "/runs", 201, JSON_HEADERS, b'{"id": 1}', id="no-location"),
        pytest.param(
            "GET",
            "/workflows/1",
            200,
            JSON_HEADERS,
            b'{"id": 1, "name": "w", "description": "", "created_at": "yesterday", "steps": []}',
            id="timestamp",
        ),
        pytest.param("DELETE", "/runs/1", 200, JSON_HEADERS, b"{}", id="undocumented-method"),
        pytest.param("GET", "/elsewhere", 404, JSON_HEADERS, b'{"error": "x"}', id="unknown-path"),
    ],
)
def test_contract_check_refuses_what_the_document_does_not_promise(
    method: str, path: str, status: int, headers: dict[str, str], body: bytes
) -> None:
    with pytest.raises((AssertionError, jsonschema.ValidationError)):
        openapi_contract.assert_conforms(method, path, status, headers, body)


def test_contract_check_accepts_a_405_for_an_undocumented_method() -> None:
    openapi_contract.assert_conforms(
        "DELETE", "/runs/1", 405, JSON_HEADERS, b'{"error": "Unsupported method: DELETE"}'
    )


def test_storage_unavailable_answers_the_documented_503(unreachable_dynamodb: None) -> None:
    with Client(app_module.app) as test_client:
        api = Api(test_client)
        assert api.get("/runs/1").status_code == 503
        assert api.post("/workflows", {"name": "Unstored"}).status_code == 503
