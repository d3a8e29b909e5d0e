"""The approvers' page as the app serves it: GET /, its modules and its style
sheets, as text with their security headers, under API Gateway's stage as
locally, to anyone (the page asks for a token itself); no other file. What it
does in a browser: tests/browser/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
from chalice.test import Client

import app as app_module
from chalicelib.api import page
from scripts.gateway_events import proxy_event
from tests.support.api import Api

PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
UI = Path(page.UI_DIR)
CONTENT_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# The page's modules and style sheets: every file of chalicelib/ui/ but the document.
SERVED = sorted(path.name for path in UI.iterdir() if path.suffix in CONTENT_TYPES)
FILES = [("/", "text/html; charset=utf-8")] + [
    (f"/ui/{name}", CONTENT_TYPES[Path(name).suffix]) for name in SERVED
]


@pytest.fixture
def bare_api() -> Iterator[Api]:
    """The API helper on an app that needs no storage for what is asked here."""
    with Client(app_module.app) as test_client:
        yield Api(test_client)


def meta(document: str, name: str) -> str:
    match = re.search(rf'<meta name="{name}" content="([^"]*)">', document)
    assert match, name
    return match.group(1)


def gateway_event(
    method: str, path: str, resource: str, body: Optional[Any] = None, **path_parameters: str
) -> dict[str, Any]:
    """The event API Gateway's REST proxy sends for `path` on the stage "api"."""
    event = proxy_event(
        method,
        path.removeprefix("/api") or "/",
        {"Content-Type": "application/json", "Host": "x.execute-api.test"},
        None if body is None else json.dumps(body).encode(),
        http_api=False,
        route=resource,
        path_parameters=path_parameters,
        stage="api",
    )
    event["requestContext"]["path"] = path  # as requested: /api, or /api/
    return event


@pytest.mark.parametrize("path, content_type", FILES)
def test_the_pages_files_are_text_with_the_security_headers(
    bare_api: Api, path: str, content_type: str
) -> None:
    response = bare_api.get(path)  # checked against the OpenAPI document too
    assert response.status_code == 200
    assert response.headers["Content-Type"] == content_type
    for name, value in PAGE_HEADERS.items():
        assert response.headers[name] == value
    assert response.body.decode("utf-8")


def test_the_page_is_the_one_in_chalicelib_ui_with_its_files_named_locally(
    bare_api: Api,
) -> None:
    document = bare_api.get("/").body.decode()
    assert '<script type="module" src="/ui/app.js"></script>' in document
    assert '<link rel="stylesheet" href="/ui/app.css">' in document
    assert '<link rel="stylesheet" href="/ui/forms.css">' in document
    assert meta(document, "api-base") == ""
    assert meta(document, "auth-mode") == "none"
    assert '<link rel="icon" href="data:,">' in document


def test_each_module_and_style_sheet_is_served_as_it_is_in_chalicelib_ui(bare_api: Api) -> None:
    assert "app.js" in SERVED and "app.css" in SERVED
    for name in SERVED:
        assert bare_api.get(f"/ui/{name}").body.decode() == (UI / name).read_text(), name


@pytest.mark.parametrize(
    "name",
    [
        "nope.js",
        "index.html",  # the document's template: served rendered, at /, only
        "APP.JS",
        "app.js.map",
        ".js",
        "app.py",
        "..%2Fapi%2Fpage.py",
        "%2E%2E%2Fopenapi.json",
    ],
)
def test_a_name_that_is_no_module_or_style_sheet_of_the_page_answers_404(
    bare_api: Api, name: str
) -> None:
    response = bare_api.get(f"/ui/{name}")  # checked against the OpenAPI document too
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    assert response.json_body["error"].startswith("Page file ")
    for header, value in PAGE_HEADERS.items():
        assert response.headers[header] == value


@pytest.mark.parametrize(
    "name", ["../api/page.py", "../openapi.json", "..", ".", "/etc/passwd", "ui/app.js"]
)
def test_a_path_out_of_chalicelib_ui_is_a_404_however_the_gateway_decodes_it(name: str) -> None:
    """API Gateway hands the route its path parameter decoded: %2F is a slash then."""
    event = gateway_event("GET", f"/api/ui/{name}", "/ui/{name}", name=name)
    answer = app_module.app(event, None)
    assert answer["statusCode"] == 404
    assert json.loads(answer["body"])["error"].startswith("Page file ")


@pytest.mark.parametrize("requested", ["/api", "/api/"])
def test_under_api_gateways_stage_the_page_names_its_files_and_api_under_the_stage(
    requested: str,
) -> None:
    answer = app_module.app(gateway_event("GET", requested, "/"), None)
    assert answer["statusCode"] == 200
    document = answer["body"]
    assert meta(document, "api-base") == "/api"
    assert '<script type="module" src="/api/ui/app.js"></script>' in document
    assert '<link rel="stylesheet" href="/api/ui/app.css">' in document
    assert '<link rel="stylesheet" href="/api/ui/forms.css">' in document


def test_a_location_names_the_stage_on_routes_with_ids_too(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    event = gateway_event(
        "POST",
        f"/api/workflows/{workflow['id']}/steps",
        "/workflows/{workflow_id}/steps",
        {"name": "Finance"},
        workflow_id=str(workflow["id"]),
    )
    answer = app_module.app(event, None)
    assert answer["statusCode"] == 201, answer["body"]
    assert answer["headers"]["Location"] == f"/api/workflows/{workflow['id']}"


@pytest.mark.usefixtures("secret_mode")
def test_in_jwt_mode_anyone_gets_the_page_which_then_asks_for_a_token(bare_api: Api) -> None:
    for path, _ in FILES:
        assert bare_api.get(path).status_code == 200
    assert bare_api.get("/workflows").status_code == 401
    document = bare_api.get("/").body.decode()
    assert meta(document, "auth-mode") == "jwt"
    assert meta(document, "actor-claim") == "sub"
    assert meta(document, "groups-claim") == "groups"
    assert meta(document, "admin-group") == "workflow-admins"
    assert meta(document, "sign-in") == ""  # no provider: the page asks for a token


@pytest.mark.usefixtures("secret_mode")
def test_with_a_sign_in_provider_the_page_offers_sign_in(
    bare_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKFLOW_OIDC_ISSUER", "https://login.example.com")
    monkeypatch.setenv("WORKFLOW_OIDC_CLIENT_ID", "approvals")
    assert meta(bare_api.get("/").body.decode(), "sign-in") == "oidc"
    monkeypatch.delenv("WORKFLOW_OIDC_CLIENT_ID")  # misconfigured: a token, and sign-in's 503
    assert meta(bare_api.get("/").body.decode(), "sign-in") == ""
    assert bare_api.request("GET", "/auth/signin", headers={}).status_code == 503


@pytest.mark.usefixtures("secret_mode")
def test_the_page_names_the_claims_and_the_admin_group_the_service_reads_escaped(
    bare_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKFLOW_JWT_ACTOR_CLAIM", 'email"><script>alert(1)</script>')
    monkeypatch.setenv("WORKFLOW_JWT_GROUPS_CLAIM", "cognito:groups")
    monkeypatch.setenv("WORKFLOW_ADMIN_GROUP", "Ops & <admins>")
    document = bare_api.get("/").body.decode()
    assert "<script>alert" not in document
    assert meta(document, "actor-claim") == "email&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    assert meta(document, "groups-claim") == "cognito:groups"
    assert meta(document, "admin-group") == "Ops &amp; &lt;admins&gt;"


def test_a_misconfigured_service_still_serves_the_page_asking_for_a_token(
    bare_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKFLOW_AUTH", "jwt")  # no issuer, no key: every API call is a 503
    response = bare_api.get("/")
    assert response.status_code == 200
    assert meta(response.body.decode(), "auth-mode") == "jwt"
    assert bare_api.get("/workflows").status_code == 503
