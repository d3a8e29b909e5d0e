"""The approvers' page: one HTML document, one script and one style sheet from
chalicelib/ui/, served as text by the app that serves the API (GET /,
GET /ui/app.js, GET /ui/app.css), so a browser needs no other origin.

Each file is read on its first request, not at import: a cold start that
serves only the API does not pay for it. Text only (no images, no fonts):
Chalice and API Gateway treat binary answers to browsers differently, and a
`data:` icon keeps the browser from asking for /favicon.ico.

The document is the one file rendered per request: it names where the API is
(the stage's base path, "" locally and "/api" behind API Gateway's stage, so
the script and style load and the script calls the API under it: a relative
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
new page and script always arrive together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from chalice.app import Response

from chalicelib.api import identity
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
SCRIPT = Asset("app.js", "text/javascript; charset=utf-8")
STYLE = Asset("app.css", "text/css; charset=utf-8")

_texts: dict[str, str] = {}


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


def script() -> Response:
    return _answer(SCRIPT, _text(SCRIPT))


def style() -> Response:
    return _answer(STYLE, _text(STYLE))


class AuthSettings(Record):
    """What the page needs to know of WORKFLOW_AUTH: the mode, and in `jwt` mode
    the claims that name the caller and their groups, and the admin group."""

    mode: str
    actor_claim: str = "sub"
    groups_claim: str = "groups"
    admin_group: str = identity.DEFAULT_ADMIN_GROUP


def auth_settings() -> AuthSettings:
    try:
        config = identity.settings()
    except errors.Unavailable:
        # Misconfigured: every API call answers 503, which the page shows; it
        # asks for a token meanwhile rather than for a name it would trust.
        return AuthSettings(identity.JWT)
    return AuthSettings(config.mode, config.actor_claim, config.groups_claim, config.admin_group)


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
    }
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", html.escape(value, quote=True))
    return template
