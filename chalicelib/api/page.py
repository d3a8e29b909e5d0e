"""The approvers' page: one HTML document, and the ES modules and style sheets
beside it in chalicelib/ui/, served as text by the app that serves the API
(GET /, GET /ui/{name}), so a browser needs no other origin. No bundler: the
document loads one entry module, which imports the others by relative paths,
so they resolve under API Gateway's stage (/api/ui/...) as locally (/ui/...).
GET /ui/{name} answers the .js and .css files of chalicelib/ui/ and nothing
else: the name must be one of those listed there, so no path leaves the folder.

The folder is listed, and each file read, on first request, not at import: a
cold start that serves only the API does not pay for it. Text only (no
images, no fonts): Chalice and API Gateway treat binary answers to browsers
differently, and a `data:` icon keeps the browser from asking for /favicon.ico.

The document is the one file rendered per request: it names where the API is
(the stage's base path, "" locally and "/api" behind API Gateway's stage, so
the entry module and style sheets load and the modules call the API under it: a relative
URL would break at "https://.../api", without the trailing slash, and
`base-uri 'none'` rules out <base>) and how callers are known (WORKFLOW_AUTH:
`none`, the page asks for a name; `jwt`, it asks for a token, which claims
name the caller and their groups, to show who a token belongs to, and the
admin group, WORKFLOW_ADMIN_GROUP, whose members alone are shown the forms
that define workflows and append steps). Rendering these costs no request and
no route of its own; the API still has the last word on each call, and the
page goes back to asking for a token on any 401.

Every answer carries a strict Content-Security-Policy (no inline script or
style, no other origin, not framed) and is never cached, so a deployment's
new page and modules always arrive together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from chalice.app import Response

from chalicelib.api import http, identity, paths
from chalicelib.domain import errors
from chalicelib.domain.record import Record

# chalicelib/ui/, beside this package: the page's assets are the project's, not the edge's code.
UI_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ui")
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Asset(Record):
    filename: str
    content_type: str


DOCUMENT = Asset("index.html", "text/html; charset=utf-8")
# What GET /ui/{name} serves, by the file's extension: scripts and style sheets.
CONTENT_TYPES: Mapping[str, str] = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}

_texts: dict[str, str] = {}
_files: Optional[Mapping[str, Asset]] = None


def _text(asset: Asset) -> str:
    """The asset's text, read once per process."""
    text = _texts.get(asset.filename)
    if text is None:
        with open(os.path.join(UI_DIR, asset.filename), encoding="utf-8") as source:
            text = _texts[asset.filename] = source.read()
    return text


def _answer(asset: Asset, body: str) -> Response:
    return Response(
        body=body, status_code=200, headers={**HEADERS, "Content-Type": asset.content_type}
    )


def document(base_path: str) -> Response:
    """The page, for an app whose routes are under `base_path` ("" or "/stage")."""
    return _answer(DOCUMENT, render(_text(DOCUMENT), base_path, auth_settings()))


def file(name: str) -> Response:
    """The script or style sheet `name` of chalicelib/ui/; a 404 for any other name."""
    asset = served_files().get(name)
    if asset is None:
        message = f"Page file {paths.shown(name)} not found"
        return http.json_response({"error": message}, 404, HEADERS)
    return _answer(asset, _text(asset))


def served_files() -> Mapping[str, Asset]:
    """The files GET /ui/{name} answers, by name: listed once per process (and
    set whole, so that a thread serving meanwhile sees no half of the list)."""
    global _files
    if _files is None:
        found = {}
        for name in sorted(os.listdir(UI_DIR)):
            content_type = CONTENT_TYPES.get(os.path.splitext(name)[1])
            if content_type and os.path.isfile(os.path.join(UI_DIR, name)):
                found[name] = Asset(name, content_type)
        _files = found
    return _files


class AuthSettings(Record):
    """What the page needs to know of WORKFLOW_AUTH: the mode, and in `jwt` mode
    the claims that name the caller and their groups, and the admin group."""

    mode: str
    actor_claim: str = "sub"
    groups_claim: str = "groups"
    admin_group: str = identity.DEFAULT_ADMIN_GROUP
    # "oidc" where the service signs people in (chalicelib/api/signin.py), else "".
    sign_in: str = ""


def auth_settings() -> AuthSettings:
    try:
        config = identity.settings()
    except errors.Unavailable:
        # Misconfigured: every API call answers 503, which the page shows; it
        # asks for a token meanwhile rather than for a name it would trust.
        return AuthSettings(identity.JWT)
    from chalicelib.api import signin

    try:
        sign_in = "oidc" if signin.provider() is not None else ""
    except errors.Unavailable:
        sign_in = ""  # misconfigured: the page asks for a token, and sign-in answers 503
    return AuthSettings(
        config.mode, config.actor_claim, config.groups_claim, config.admin_group, sign_in
    )


def render(template: str, base_path: str, auth: AuthSettings) -> str:
    """The document with its placeholders ({{name}}) filled in, each value
    escaped for an HTML attribute."""
    import html

    values = {
        "base": base_path,
        "auth_mode": auth.mode,
        "actor_claim": auth.actor_claim,
        "groups_claim": auth.groups_claim,
        "admin_group": auth.admin_group,
        "sign_in": auth.sign_in,
    }
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", html.escape(value, quote=True))
    return template
