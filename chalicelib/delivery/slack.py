"""Slack: the Web API calls the notifier makes, and the check of Slack's
signed interaction requests.

    WORKFLOW_SLACK_TOKEN (or _PARAMETER)            the bot token (xoxb-...)
    WORKFLOW_SLACK_SIGNING_SECRET (or _PARAMETER)   the app's signing secret
    WORKFLOW_SLACK_API_URL                          default https://slack.com/api/

chat.postMessage and chat.update take a JSON body with `Authorization:
Bearer`; Slack answers 200 with {"ok": false, "error": ...} for what it
refuses, which is a failure here as any other. An interaction request is
signed `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{raw body}` under the
signing secret; one older than five minutes is a replay.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from chalicelib.domain.notifications import DECISIONS
from chalicelib.domain.record import Record

TOKEN_VARIABLE = "WORKFLOW_SLACK_TOKEN"
SIGNING_SECRET_VARIABLE = "WORKFLOW_SLACK_SIGNING_SECRET"
API_URL_VARIABLE = "WORKFLOW_SLACK_API_URL"
DEFAULT_API_URL = "https://slack.com/api/"
TIMEOUT_SECONDS = 5
REPLAY_WINDOW_SECONDS = 300
# A button's value: the run, round and step it decides ("7:2:13").
VALUE_SEPARATOR = ":"


class SlackError(Exception):
    """Slack refused a call, or could not be reached."""


class Posted(Record):
    channel: str
    ts: str


def configured_token() -> Optional[str]:
    from chalicelib import secret_store

    return secret_store.value(TOKEN_VARIABLE)


def api_url() -> str:
    url = os.environ.get(API_URL_VARIABLE, "").strip() or DEFAULT_API_URL
    return url if url.endswith("/") else url + "/"


def call(method: str, token: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One Web API call; its answer, or SlackError."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        api_url() + method,
        data=json.dumps(body).encode("utf-8"),
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "Authorization": f"Bearer {token}",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            parsed: dict[str, Any] = json.loads(answer.read())
    except (OSError, ValueError) as exc:
        raise SlackError(f"{method}: {exc}") from exc
    if not parsed.get("ok"):
        raise SlackError(f"{method}: {parsed.get('error', 'refused')}")
    return parsed


def post_message(token: str, channel: str, text: str, blocks: Sequence[Any]) -> Posted:
    answer = call("chat.postMessage", token, {"channel": channel, "text": text, "blocks": blocks})
    return Posted(str(answer["channel"]), str(answer["ts"]))


def update_message(token: str, channel: str, ts: str, text: str) -> None:
    """The message as the outcome: its text, no buttons any more."""
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    call("chat.update", token, {"channel": channel, "ts": ts, "text": text, "blocks": blocks})


def blocks(
    summary: str,
    fields: Sequence[tuple[str, str]],
    run_url: Optional[str],
    decide: Optional[str],
) -> list[dict[str, Any]]:
    """A message's blocks: the summary, the input's fields, the run's page, and
    Approve and Reject where `decide` (the button's value) is given."""
    made: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": summary}}]
    if fields:
        made.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": f"*{_escape(name)}*\n{_escape(value)}"}
                    for name, value in fields[:10]  # Slack takes ten fields a section
                ],
            }
        )
    elements: list[dict[str, Any]] = []
    if decide is not None:
        approve, reject = DECISIONS
        for action, style in ((approve, "primary"), (reject, "danger")):
            elements.append(
                {
                    "type": "button",
                    "action_id": action,
                    "style": style,
                    "text": {"type": "plain_text", "text": action.capitalize()},
                    "value": decide,
                }
            )
    if run_url is not None:
        elements.append(
            {
                "type": "button",
                "action_id": "open",
                "text": {"type": "plain_text", "text": "Open the run"},
                "url": run_url,
            }
        )
    if elements:
        made.append({"type": "actions", "elements": elements})
    return made


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def button_value(run_id: int, round_: int, step_id: int) -> str:
    return VALUE_SEPARATOR.join(map(str, (run_id, round_, step_id)))


def parse_button_value(value: str) -> Optional[tuple[int, int, int]]:
    parts = value.split(VALUE_SEPARATOR)
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    run_id, round_, step_id = (int(part) for part in parts)
    return run_id, round_, step_id


def verified(
    secret: str, timestamp: Optional[str], signature: Optional[str], body: bytes, now: float
) -> bool:
    """Whether a request is Slack's: signed with `secret`, and recent."""
    import hashlib
    import hmac

    if not timestamp or not signature or not timestamp.isdigit():
        return False
    if abs(now - int(timestamp)) > REPLAY_WINDOW_SECONDS:
        return False
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    expected = "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def respond(response_url: str, text: str) -> None:
    """An ephemeral answer to the person who clicked (Slack's response_url):
    best effort, a failure is logged only."""
    import logging
    import urllib.request

    request = urllib.request.Request(
        response_url,
        data=json.dumps(
            {"response_type": "ephemeral", "replace_original": False, "text": text}
        ).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=2):
            pass
    except OSError as exc:
        logging.getLogger("approval-workflows.notifications").warning("Slack response_url: %s", exc)
