"""Slack on every backend, against a fake Slack Web API on loopback: messages
posted with buttons to the contacts' ids; a signed click decides as the
mapped person (channel slack); a bad or old signature is 401; an unknown
Slack user decides nothing and is told why; any decision updates the
messages of its step, without buttons."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from chalicelib.storage import Backend
from tests.api.test_api_notifications import Telling, setup_run
from tests.support.api import Api
from tests.support.fake_slack import TOKEN, FakeSlack
from tests.support.shapes import assert_error

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture
def fake_slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        monkeypatch.setenv("WORKFLOW_SLACK_TOKEN", TOKEN)
        monkeypatch.setenv("WORKFLOW_SLACK_SIGNING_SECRET", SECRET)
        monkeypatch.setenv("WORKFLOW_SLACK_API_URL", f"{server.url}/api/")
        monkeypatch.setenv("WORKFLOW_PUBLIC_URL", "https://approvals.example.com")
        monkeypatch.setenv("WORKFLOW_MAIL", "dir:/nonexistent-never-written")
        yield server


def slack_run(api: Api) -> int:
    """setup_run's run, its people reached on Slack only."""
    run_id = setup_run(api)
    for principal, slack_id in (("user:maria", "U0MARIA"), ("group:finance", "C0FIN")):
        api.delete(f"/contacts/{principal}")
        assert api.request("PUT", f"/contacts/{principal}", {"slack": slack_id}).status_code == 200
    for principal in ("user:rita", "user:cy", "user:dave"):
        api.delete(f"/contacts/{principal}")
    return run_id


def slack_run_told(api: Api, storage: Backend) -> tuple[int, Telling]:
    """slack_run's run, its arrival posted to Slack."""
    run_id = slack_run(api)
    telling = Telling(storage)
    telling.pump()
    return run_id, telling


def click(
    api: Api, server: FakeSlack, user: str, action: str, value: str, age: float = 0.0,
    secret: str = SECRET,
) -> Any:  # fmt: skip
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "actions": [{"action_id": action, "value": value}],
        "response_url": f"{server.url}/respond/1",
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time() - age))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": "v0=" + digest.hexdigest(),
    }
    return api.request("POST", "/integrations/slack/interactions", raw=body, headers=headers)


def buttons(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (element["action_id"], element.get("value", ""))
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if "value" in element
    ]


def test_posted_with_buttons_to_the_contacts_ids(
    api: Api, storage: Backend, fake_slack: FakeSlack
) -> None:
    run_id = slack_run(api)
    Telling(storage).pump()
    posted = {m["channel"]: m for m in fake_slack.made("chat.postMessage")}
    assert sorted(posted) == ["C0FIN", "U0MARIA"]
    step_id = api.get(f"/runs/{run_id}").json_body["current_step"]["id"]
    value = f"{run_id}:1:{step_id}"
    assert buttons(posted["U0MARIA"]) == [("approve", value), ("reject", value)]
    assert buttons(posted["C0FIN"]) == []
    assert "Acme" in json.dumps(posted["U0MARIA"]["blocks"])
    assert all(call.authorization == f"Bearer {TOKEN}" for call in fake_slack.calls)


def test_a_signed_click_decides_as_the_mapped_person_and_the_messages_are_updated(
    api: Api, storage: Backend, fake_slack: FakeSlack
) -> None:
    run_id, telling = slack_run_told(api, storage)
    (value,) = {v for m in fake_slack.made("chat.postMessage") for _, v in buttons(m)}
    answer = click(api, fake_slack, "U0MARIA", "approve", value)
    assert answer.status_code == 200 and answer.json_body == {}
    run = api.get(f"/runs/{run_id}").json_body
    assert run["current_step"]["name"] == "CFO"
    assert (run["actions"][-1]["actor"], run["actions"][-1]["channel"]) == ("maria", "slack")
    telling.pump()
    updates = fake_slack.made("chat.update")
    assert sorted(u["channel"] for u in updates) == ["C0FIN", "U0MARIA"]
    assert all("approved by maria" in u["text"] and buttons(u) == [] for u in updates)
    stale = click(api, fake_slack, "U0MARIA", "reject", value)
    assert stale.status_code == 200
    assert "decided already" in fake_slack.calls[-1].body["text"]
    assert api.get(f"/runs/{run_id}").json_body["status"] == "in_progress"


@pytest.mark.parametrize("age, secret", [(0.0, "another secret"), (301.0, SECRET)])
def test_a_bad_or_old_signature_is_401_and_decides_nothing(
    api: Api, storage: Backend, fake_slack: FakeSlack, age: float, secret: str
) -> None:
    run_id = slack_run(api)
    Telling(storage).pump()
    (value,) = {v for m in fake_slack.made("chat.postMessage") for _, v in buttons(m)}
    assert_error(click(api, fake_slack, "U0MARIA", "approve", value, age, secret), 401)
    assert api.get(f"/runs/{run_id}").json_body["actions"] == []


def test_an_unknown_slack_user_decides_nothing_and_is_told_why(
    api: Api, storage: Backend, fake_slack: FakeSlack
) -> None:
    run_id = slack_run(api)
    Telling(storage).pump()
    (value,) = {v for m in fake_slack.made("chat.postMessage") for _, v in buttons(m)}
    assert click(api, fake_slack, "U0STRANGER", "approve", value).status_code == 200
    told = fake_slack.calls[-1]
    assert told.path == "/respond/1" and told.body["response_type"] == "ephemeral"
    assert "not the contact of anyone" in told.body["text"]
    assert api.get(f"/runs/{run_id}").json_body["actions"] == []


def test_a_decision_through_the_api_updates_the_slack_message(
    api: Api, storage: Backend, fake_slack: FakeSlack
) -> None:
    run_id, telling = slack_run_told(api, storage)
    assert (
        api.post(f"/runs/{run_id}/reject", {"actor": "maria", "comment": "No"}).status_code == 200
    )
    telling.pump()
    updates = fake_slack.made("chat.update")
    assert len(updates) == 2 and all("rejected by maria" in u["text"] for u in updates)


def test_one_the_steps_notify_names_is_posted_no_buttons_and_told_the_outcome(
    api: Api, storage: Backend, fake_slack: FakeSlack
) -> None:
    steps = [{"name": "Manager", "approvers": ["user:maria"], "notify": ["user:cy"]}, "Legal"]
    run_id = setup_run(api, steps=steps)
    for principal in ("user:maria", "group:finance", "user:rita", "user:dave"):
        api.delete(f"/contacts/{principal}")
    assert api.request("PUT", "/contacts/user:cy", {"slack": "U0CY"}).status_code == 200
    telling = Telling(storage)
    telling.pump()
    (posted,) = fake_slack.made("chat.postMessage")
    assert posted["channel"] == "U0CY" and buttons(posted) == []
    assert "waits at Manager" in posted["text"]
    assert api.post(f"/runs/{run_id}/approve", {"actor": "maria"}).status_code == 200
    telling.pump()
    (update,) = fake_slack.made("chat.update")
    assert update["channel"] == "U0CY" and "approved by maria" in update["text"]


def test_a_cancelled_run_updates_its_steps_messages_without_buttons(
    api: Api, storage: Backend, fake_slack: FakeSlack
) -> None:
    run_id, telling = slack_run_told(api, storage)
    cancelled = api.post(f"/runs/{run_id}/cancel", {"actor": "rita", "reason": "Bought elsewhere"})
    assert cancelled.status_code == 200, cancelled.body
    telling.pump()
    updates = fake_slack.made("chat.update")
    assert sorted(u["channel"] for u in updates) == ["C0FIN", "U0MARIA"]
    assert all(
        "PO-1042* was cancelled by rita" in u["text"] and buttons(u) == [] for u in updates
    ), updates
    (value,) = {v for m in fake_slack.made("chat.postMessage") for _, v in buttons(m)}
    assert click(api, fake_slack, "U0MARIA", "approve", value).status_code == 200
    assert api.get(f"/runs/{run_id}").json_body["status"] == "cancelled"
