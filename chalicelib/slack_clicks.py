"""The use case of a click on a Slack message's button (POST
/integrations/slack/interactions): Slack's signature checked, the Slack user
mapped to the `user:` contact with that Slack id, and the decision taken by
the engine's own decision function as that person, through exactly the
API's rules. Whatever decides nothing is said to the person who clicked,
ephemerally (Slack's response_url); the message itself is updated by the
notifier once the step is decided (chalicelib/delivery/notifier.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import parse_qs

from chalicelib import engine
from chalicelib.delivery import slack
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import USER_PREFIX
from chalicelib.domain.notifications import DECISIONS
from chalicelib.storage import Backend

CHANNEL = "slack"


def click(
    storage: Backend,
    body: bytes,
    headers: Mapping[str, str],
    now: float,
) -> Optional[str]:
    """Take the click's decision; what to tell the person who clicked where it
    decides nothing (None: it decided). Unauthorized, and nothing changes,
    unless Slack signed the request within the last five minutes."""
    from chalicelib import secret_store

    secret = secret_store.value(slack.SIGNING_SECRET_VARIABLE)
    timestamp = headers.get("x-slack-request-timestamp")
    signature = headers.get("x-slack-signature")
    if not secret or not slack.verified(secret, timestamp, signature, body, now):
        raise errors.Unauthorized("Not a request Slack signed in the last five minutes")
    payload = _payload(body)
    if payload is None:
        return None  # not a button of ours: nothing to do
    action, target, slack_user, response_url = payload
    refusal = _decide(storage, action, target, slack_user)
    if refusal is not None and response_url:
        slack.respond(response_url, refusal)
    return refusal


def _payload(body: bytes) -> Optional[tuple[str, str, str, str]]:
    """(action, button value, Slack user id, response_url) of a block_actions click."""
    try:
        form = parse_qs(body.decode("utf-8"))
        payload: dict[str, Any] = json.loads(form["payload"][0])
        (pressed,) = payload["actions"][:1]
        found = (pressed["action_id"], pressed["value"], payload["user"]["id"])
    except (UnicodeDecodeError, KeyError, IndexError, ValueError, TypeError):
        raise errors.InvalidInput("Not a Slack interaction payload") from None
    if payload.get("type") != "block_actions" or found[0] not in DECISIONS:
        return None
    return (*found, str(payload.get("response_url") or ""))


def _decide(storage: Backend, action: str, target: str, slack_user: str) -> Optional[str]:
    step = slack.parse_button_value(str(target))
    if step is None:
        return "This button names no step of this service: nothing was decided."
    contact = storage.contact_of_slack_user(slack_user)
    if contact is None:
        return (
            "Your Slack user is not the contact of anyone here: nothing was decided. "
            "Set your Slack member id on the approvers' page (Who are you?)."
        )
    run_id, round_, step_id = step
    try:
        run = storage.get_run(run_id, history=False)
    except errors.NotFound:
        return "This run does not exist: nothing was decided."
    waits = run.current_step is not None and run.current_step.id == step_id
    if run.status != RunStatus.IN_PROGRESS or not waits or run.round != round_:
        return "This step was decided already, or the run moved on: nothing was decided."
    seen = engine.Seen(step_id, round_, None, CHANNEL)
    decide = engine.approve if action == ActionKind.APPROVE else engine.reject
    person = contact.principal[len(USER_PREFIX) :]
    try:
        decide(storage, run_id, person, "", seen=seen, history=False)
    except errors.WorkflowError as exc:
        return f"Not decided: {exc.message}"
    return None
