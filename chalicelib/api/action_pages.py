"""The pages of a one-time action link (GET and POST /act/{token}): HTML for
a browser opened from an email, never JSON. GET shows what the link would
decide and a form with one button, and changes nothing (a mail scanner that
prefetches the link decides nothing); POST answers the outcome. Every page
carries the approvers' page's strict Content-Security-Policy (no inline
script or style: the page's own style sheet) and Referrer-Policy:
no-referrer, and is never cached; the token is in no page but the form's
own action, which is the path the browser is at."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from chalice.app import Response

from chalicelib.api.page import HEADERS
from chalicelib.domain.lifecycle import ActionKind, RunStatus

HTML_HEADERS: Mapping[str, str] = {**HEADERS, "Content-Type": "text/html; charset=utf-8"}


def _page(base: str, title: str, body: str, status: int) -> Response:
    e = html.escape
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title>"
        f'<link rel="stylesheet" href="{e(base)}/ui/app.css">'
        f'<link rel="stylesheet" href="{e(base)}/ui/forms.css">'
        f'</head><body><main class="act"><h1>{e(title)}</h1>{body}</main></body></html>'
    )
    return Response(body=document, status_code=status, headers=dict(HTML_HEADERS))


def confirmation(
    base: str,
    action: str,
    title: str,
    workflow: str,
    step: str,
    person: str,
    fields: Mapping[str, Any],
    on_behalf_of: str | None,
) -> Response:
    """What the link decides, a comment box and one button: nothing is decided yet."""
    e = html.escape
    verb = action.capitalize()
    rows = "".join(
        f"<tr><th>{e(name)}</th><td>{e(_shown(value))}</td></tr>" for name, value in fields.items()
    )
    behalf = f" on behalf of {e(on_behalf_of)}" if on_behalf_of else ""
    body = (
        f"<p>{e(workflow)}: <strong>{e(title)}</strong></p>"
        f"<p>Step: {e(step)}. You decide as {e(person)}{behalf}.</p>"
        + (f"<table>{rows}</table>" if rows else "")
        + '<form method="post">'
        '<label for="comment">Comment</label>'
        '<textarea id="comment" name="comment" rows="4" maxlength="5000"></textarea>'
        f'<button type="submit">{verb}</button></form>'
    )
    return _page(base, f"{verb}: {title}", body, 200)


def outcome(base: str, action: str, title: str, status: str) -> Response:
    e = html.escape
    done = "approved" if action == ActionKind.APPROVE else RunStatus.REJECTED.value
    body = f"<p>You {done} <strong>{e(title)}</strong>. The run is {e(status)} now.</p>"
    return _page(base, "Done", body, 200)


def refusal(base: str, status: int, message: str) -> Response:
    """A link that names nothing (404), can decide nothing any more (410), or
    whose decision the rules refused (4xx): why, in words."""
    titles = {404: "No such link", 410: "This link can no longer be used"}
    title = titles.get(status, "The decision was not taken")
    return _page(base, title, f"<p>{html.escape(message)}</p>", status)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
