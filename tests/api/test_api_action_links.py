"""One-time action links on every backend: the GET page decides nothing, the
POST decides once as the link's person (channel email-link, in the history,
the events and the chain), then 410; forged and malformed tokens 404; expired
and moved-on links 410; the token is nowhere in the database or the logs."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from chalicelib.domain import links
from chalicelib.storage import Backend
from tests.api.test_api_notifications import LINK, SmtpServer, Telling, setup_run, smtp, text
from tests.support import chain
from tests.support.api import Api
from tests.support.tokens import as_, claims, hs256

__all__ = ["smtp"]  # the fixture, shared
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def mailed_links(api: Api, storage: Backend, server: SmtpServer, to: str) -> dict[str, str]:
    """The approve and reject tokens of `to`'s email about the run's first step."""
    Telling(storage).pump()
    message = next(m for m in server.received if str(m["To"]) == to)
    approve, reject = LINK.findall(text(message))
    return {"approve": approve, "reject": reject}


def post(api: Api, token: str, comment: str = "") -> Any:
    from urllib.parse import urlencode

    raw = urlencode({"comment": comment}).encode()
    return api.request("POST", f"/act/{token}", raw=raw, headers=FORM)


def test_get_changes_nothing_post_decides_once_then_410(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    run_id = setup_run(api)
    tokens = mailed_links(api, storage, smtp, "maria@example.com")
    before = api.get(f"/runs/{run_id}").json_body
    for _ in range(2):  # a scanner's prefetch, then the person
        page = api.get(f"/act/{tokens['approve']}")
        assert page.status_code == 200 and page.headers["Referrer-Policy"] == "no-referrer"
        assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        assert b"PO-1042" in page.body and b"Acme" in page.body and b"<form" in page.body
    assert api.get(f"/runs/{run_id}").json_body == before
    done = post(api, tokens["approve"], "Fine by me")
    assert done.status_code == 200, done.body
    run = api.get(f"/runs/{run_id}").json_body
    assert run["current_step"]["name"] == "CFO"
    decision = run["actions"][-1]
    assert (decision["actor"], decision["comment"]) == ("maria", "Fine by me")
    assert decision["channel"] == "email-link"
    audit = api.get(f"/runs/{run_id}/audit").json_body
    assert audit["valid"] and audit["entries"][-1]["channel"] == "email-link"
    assert chain.first_broken(audit) is None
    events = api.get(f"/runs/{run_id}/events").json_body["items"]
    approved = [e for e in events if e["type"] == "approval.step.approved"]
    assert approved[-1]["data"]["channel"] == "email-link"
    again = post(api, tokens["approve"])
    assert again.status_code == 410 and b"used already" in again.body
    sibling = api.get(f"/act/{tokens['reject']}")
    assert sibling.status_code == 410 and b"Another of your links" in sibling.body


@pytest.mark.parametrize("token", ["A" * 43, "short", "A" * 42 + "!", "x" * 500])
def test_a_forged_or_malformed_token_is_404(api: Api, token: str) -> None:
    from urllib.parse import quote

    assert api.get(f"/act/{quote(token)}").status_code == 404
    assert post(api, quote(token)).status_code == 404


def test_a_link_of_a_step_decided_elsewhere_or_expired_is_410(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    run_id = setup_run(api)
    tokens = mailed_links(api, storage, smtp, "maria@example.com")
    assert api.post(f"/runs/{run_id}/approve", {"actor": "maria"}).status_code == 200
    moved = api.get(f"/act/{tokens['reject']}")
    assert moved.status_code == 410 and b"moved on" in moved.body
    assert post(api, tokens["reject"]).status_code == 410
    token = links.new_token()
    run = storage.get_run(run_id, history=False)
    assert run.current_step is not None
    old = "2020-01-01T00:00:00.000Z"
    stale = links.ActionLink(
        links.digest(token), run_id, 1, run.current_step.id, "cy", "approve", old, old
    )
    storage.put_links([stale])
    expired = api.get(f"/act/{token}")
    assert expired.status_code == 410 and b"expired" in expired.body


def test_a_refused_decision_leaves_the_link_usable(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    steps = [{"name": "Manager", "approvers": ["user:maria"]}]
    flow = api.post(
        "/workflows", {"name": "Strict", "steps": steps, "reject_requires_comment": True}
    )
    assert flow.status_code == 201
    api.request("PUT", "/contacts/user:maria", {"email": "maria@example.com"})
    api.post("/runs", {"workflow_id": flow.json_body["id"], "title": "T", "requested_by": "rita"})
    tokens = mailed_links(api, storage, smtp, "maria@example.com")
    refused = post(api, tokens["reject"])
    assert refused.status_code == 422 and b"comment" in refused.body
    assert post(api, tokens["reject"], "Too dear").status_code == 200


def test_the_token_is_nowhere_in_the_database_or_the_logs(
    api: Api, storage: Backend, smtp: SmtpServer, capfd: pytest.CaptureFixture[str]
) -> None:
    run_id = setup_run(api)
    tokens = mailed_links(api, storage, smtp, "maria@example.com")
    api.get(f"/act/{tokens['approve']}")
    post(api, tokens["approve"])
    api.get(f"/act/{tokens['approve']}")
    logged = capfd.readouterr()
    stored = dump(storage)
    for token in tokens.values():
        assert token not in logged.out + logged.err
        assert token not in stored
        assert links.digest(token) in stored  # what is kept instead
    assert api.get(f"/runs/{run_id}").json_body["current_step"]["name"] == "CFO"


def dump(storage: Backend) -> str:
    """Everything the store holds, as text."""
    from chalicelib.storage.dynamodb.adapter import DynamoDBStorage

    if isinstance(storage, DynamoDBStorage):
        items = storage.client.scan(TableName=storage.table)["Items"]
        return json.dumps(items, default=str)
    path = storage.path  # type: ignore[attr-defined]
    files = [name for name in (path, path + "-wal") if os.path.exists(name)]
    return "".join(open(name, "rb").read().decode("latin-1") for name in files)


def test_with_tokens_links_are_off_unless_switched_on(
    api: Api, storage: Backend, smtp: SmtpServer, secret_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = hs256(claims("ada", groups=["workflow-admins"]))
    steps = [{"name": "Manager", "approvers": ["user:maria"]}]
    flow = as_(api, admin, "POST", "/workflows", {"name": "J", "steps": steps}).json_body
    as_(api, admin, "PUT", "/contacts/user:maria", {"email": "maria@example.com"})
    as_(api, hs256(claims("rita")), "POST", "/runs", {"workflow_id": flow["id"], "title": "T"})
    Telling(storage).pump()
    assert LINK.findall(text(smtp.received[0])) == []
    monkeypatch.setenv("WORKFLOW_LINKS", "on")
    token = links.new_token()
    run = storage.get_run(1, history=False)
    assert run.current_step is not None
    now = "2026-01-01T00:00:00.000Z"
    link = links.ActionLink(
        links.digest(token),
        1,
        1,
        run.current_step.id,
        "maria",
        "approve",
        now,
        "2999-01-01T00:00:00.000Z",
    )
    storage.put_links([link])
    assert api.get(f"/act/{token}").status_code == 200
    monkeypatch.delenv("WORKFLOW_LINKS")
    assert api.get(f"/act/{token}").status_code == 404
