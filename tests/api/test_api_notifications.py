"""Notifications on every backend, through a real SMTP server on loopback:
one email per awaited person per arrival (delegates included), the requester
on outcomes, each at most once under redelivery; a mail server down delays
mail and never a decision."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

import pytest

from chalicelib.delivery import dispatch, mail, notifier
from chalicelib.domain.models import Event
from chalicelib.storage import Backend
from tests.support.api import Api
from tests.support.smtp_server import SmtpServer

PUBLIC_URL = "https://approvals.example.com"
LINK = re.compile(re.escape(PUBLIC_URL) + r"/act/([A-Za-z0-9_-]{43})")


@pytest.fixture
def smtp(monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        monkeypatch.setenv("WORKFLOW_MAIL", server.url)
        monkeypatch.setenv("WORKFLOW_MAIL_FROM", "approvals@example.com")
        monkeypatch.setenv("WORKFLOW_PUBLIC_URL", PUBLIC_URL)
        yield server


class Telling:
    """The local path: the dispatcher delivers the recorded events, and hands
    each to the notifier, whose thread sends them (driven here by hand)."""

    def __init__(self, storage: Backend) -> None:
        self.storage = storage
        mailer = mail.configured_mailer()
        assert mailer is not None
        self.retrying = notifier.Retrying(
            lambda: storage, mailer, notifier.settings(), lambda attempt: 60.0
        )
        self.sink = self.retrying.after(lambda event, now: True)

    def pump(self, now: float = 0.0) -> None:
        at = now or time.time()
        dispatch.deliver_due(self.storage, self.sink, lambda: at, lambda attempt: 1.0)
        self.retrying.send_due(at)


def at(days: float = 0.0) -> str:
    moment = datetime.now(UTC) + timedelta(days=days)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def contact(api: Api, principal: str, email: str) -> None:
    response = api.request("PUT", f"/contacts/{principal}", {"email": email})
    assert response.status_code == 200, response.body


def setup_run(api: Api, steps: Any = None) -> int:
    """Rita's run of a two-step workflow: Manager (maria, or finance), then CFO (cy)."""
    steps = steps or [
        {"name": "Manager", "approvers": ["user:maria", "group:finance"]},
        {"name": "CFO", "approvers": ["user:cy"]},
    ]
    flow = api.post("/workflows", {"name": "Purchase order", "steps": steps}).json_body
    for principal in ("user:maria", "group:finance", "user:rita", "user:cy", "user:dave"):
        contact(api, principal, principal.split(":")[1] + "@example.com")
    body = {"workflow_id": flow["id"], "title": "PO-1042", "requested_by": "rita"}
    body["input"] = {"amount": 1200, "vendor": "Acme"}
    created = api.post("/runs", body)
    assert created.status_code == 201, created.body
    return int(created.json_body["id"])


def to(messages: list[EmailMessage]) -> list[str]:
    return sorted(str(message["To"]) for message in messages)


def text(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    assert part is not None
    return str(part.get_content())


def test_an_arrival_tells_each_awaited_principal_and_a_delegate_once(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    lent = {"delegator": "maria", "delegate": "dave", "starts_at": at(-1), "ends_at": at(3)}
    assert api.post("/delegations", lent).status_code == 201
    run_id = setup_run(api)
    telling = Telling(storage)
    telling.pump()
    assert to(smtp.received) == ["dave@example.com", "finance@example.com", "maria@example.com"]
    mails = {str(m["To"]): m for m in smtp.received}
    maria, finance, dave = (mails[f"{n}@example.com"] for n in ("maria", "finance", "dave"))
    assert maria["Subject"] == "[Purchase order] PO-1042 waits for you at Manager"
    assert "amount: 1200" in text(maria) and "vendor: Acme" in text(maria)
    assert "user:maria, group:finance" in text(maria)
    assert len(LINK.findall(text(maria))) == 2 and maria.get_body(("html",)) is not None
    assert LINK.findall(text(finance)) == [] and f"{PUBLIC_URL}/#/runs/{run_id}" in text(finance)
    assert "on behalf of maria" in text(dave) and len(LINK.findall(text(dave))) == 2
    # Redelivered (at least once), by concurrent senders too: nothing is sent again.
    events = storage.list_events(f"runs/{run_id}", None, 100).items
    for event in events:
        assert notifier.notify(
            event, storage, telling.retrying._mailer, time.time(), notifier.settings()
        )
    assert len(smtp.received) == 3


def test_the_requester_is_told_of_the_outcome_and_the_next_step_is_told(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    run_id = setup_run(api)
    telling = Telling(storage)
    telling.pump()
    smtp.received.clear()
    assert api.post(f"/runs/{run_id}/approve", {"actor": "maria"}).status_code == 200
    telling.pump()
    assert to(smtp.received) == ["cy@example.com"]
    assert api.post(f"/runs/{run_id}/reject", {"actor": "cy", "comment": "No"}).status_code == 200
    telling.pump()
    assert to(smtp.received) == ["cy@example.com", "rita@example.com"]
    rita = smtp.received[-1]
    assert rita["Subject"] == "[Purchase order] PO-1042 was rejected"
    assert "rejected by cy" in text(rita) and "Comment: No" in text(rita)


def test_a_reassign_tells_the_new_approvers_and_not_again_those_already_told(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    run_id = setup_run(api)
    telling = Telling(storage)
    telling.pump()
    smtp.received.clear()
    body = {"actor": "ada", "approvers": ["user:cy", "user:maria"], "comment": "Finance is away"}
    assert api.post(f"/runs/{run_id}/reassign", body).status_code == 200
    telling.pump()
    assert to(smtp.received) == ["cy@example.com"]
    assert smtp.received[0]["Subject"] == "[Purchase order] PO-1042 waits for you at Manager"


def test_no_decision_waits_on_a_mail_server_and_mail_is_retried_later(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    smtp.failing = True
    run_id = setup_run(api)
    telling = Telling(storage)
    now = time.time()
    telling.pump(now)
    assert smtp.received == []
    # The decision is answered without a word to the mail server: sending is
    # the notifier's, after the event is recorded (no request waits on it).
    assert api.post(f"/runs/{run_id}/approve", {"actor": "maria"}).status_code == 200
    assert smtp.received == []
    smtp.failing = False
    telling.pump(now + 1)  # not due again yet: the backoff holds
    assert to(smtp.received) == ["cy@example.com"]
    telling.pump(now + 61)
    # The Manager step was decided meanwhile: nobody is asked to decide it any more.
    assert to(smtp.received) == ["cy@example.com"]


def test_without_a_contact_or_a_public_url_no_one_is_told_or_offered_links(
    api: Api, storage: Backend, smtp: SmtpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WORKFLOW_PUBLIC_URL")
    run_id = setup_run(api)
    assert api.delete("/contacts/group:finance").status_code == 200
    Telling(storage).pump()
    assert to(smtp.received) == ["maria@example.com"]
    assert "/act/" not in smtp.received[0].as_string() and f"runs/{run_id}" not in text(
        smtp.received[0]
    )


def test_a_step_open_to_anyone_tells_nobody(api: Api, storage: Backend, smtp: SmtpServer) -> None:
    setup_run(api, steps=["Anyone"])
    Telling(storage).pump()
    assert smtp.received == []


def test_a_step_open_to_anyone_asks_whom_its_notify_names(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    run_id = setup_run(api, steps=[{"name": "Anyone", "notify": ["user:cy", "group:finance"]}])
    telling = Telling(storage)
    telling.pump()
    assert to(smtp.received) == ["cy@example.com", "finance@example.com"]
    cy, finance = sorted(smtp.received, key=lambda m: str(m["To"]))
    assert cy["Subject"] == "[Purchase order] PO-1042 waits for you at Anyone"
    assert "Who may decide it: anyone" in text(cy) and len(LINK.findall(text(cy))) == 2
    assert LINK.findall(text(finance)) == [] and f"{PUBLIC_URL}/#/runs/{run_id}" in text(finance)


def test_notify_tells_of_each_arrival_besides_the_approvers_with_the_runs_page_only(
    api: Api, storage: Backend, smtp: SmtpServer
) -> None:
    steps = [
        {"name": "Manager", "approvers": ["user:maria"], "notify": ["user:cy", "user:Maria"]},
        {"name": "CFO", "approvers": ["user:cy"]},
    ]
    run_id = setup_run(api, steps=steps)
    telling = Telling(storage)
    telling.pump()
    assert to(smtp.received) == ["cy@example.com", "maria@example.com"]
    mails = {str(m["To"]): m for m in smtp.received}
    cy, maria = mails["cy@example.com"], mails["maria@example.com"]
    assert cy["Subject"] == "[Purchase order] PO-1042 waits at Manager"
    assert "it names you to be told" in text(cy) and "Who may decide it: user:maria" in text(cy)
    assert "/act/" not in cy.as_string() and f"{PUBLIC_URL}/#/runs/{run_id}" in text(cy)
    assert len(LINK.findall(text(maria))) == 2  # an approver it names too: asked, once
    smtp.received.clear()
    assert api.post(f"/runs/{run_id}/approve", {"actor": "maria"}).status_code == 200
    telling.pump()
    (asked,) = smtp.received  # cy, now asked to decide the next step
    assert asked["Subject"] == "[Purchase order] PO-1042 waits for you at CFO"


def test_ses_sends_the_same_message_on_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws
    from moto.backends import get_backend

    from tests.support.backends import aws_env

    with aws_env(), mock_aws():
        import boto3

        mail.forget_clients()
        boto3.client("sesv2").create_email_identity(EmailIdentity="approvals@example.com")
        letter = mail.Letter("maria@example.com", "Hello", ("Line",), (("amount", "1"),), ())
        where = mail.ses_send(mail.message(letter, "approvals@example.com"))
        assert where.startswith("ses:")
        sent = get_backend("ses")["123456789012"]["us-east-1"].sent_messages
        assert len(sent) == 1 and "Subject: Hello" in sent[0].raw_data
        mail.forget_clients()


def test_events_that_concern_nobody_send_nothing(storage: Backend) -> None:
    event = Event(
        "x",
        "workflows/1",
        1,
        "approval.workflow.created",
        '{"type": "approval.workflow.created", "data": {}}',
    )
    assert notifier.notify(event, storage, lambda message: "nowhere", 0.0, notifier.settings())


def test_the_deployed_notifier_consumes_the_bus_s_events_and_mails_through_ses(
    ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """app.notify_people, as the stack's queue hands it the bus's events, on
    DynamoDB and SES (moto); a redelivered batch sends nothing twice."""
    import json as json_module

    import boto3
    from chalice.test import Client
    from moto.backends import get_backend

    import app as app_module

    monkeypatch.setenv("WORKFLOW_MAIL_FROM", "approvals@example.com")
    monkeypatch.setenv("WORKFLOW_PUBLIC_URL", PUBLIC_URL)
    mail.forget_clients()
    boto3.client("sesv2").create_email_identity(EmailIdentity="example.com")
    with Client(app_module.app) as client:
        api = Api(client)
        setup_run(api)
        recorded = ddb.list_events("runs/1", None, 100).items
        bus = [{"detail-type": e.type, "detail": json_module.loads(e.body)} for e in recorded]
        records = [
            {"messageId": str(i), "body": json_module.dumps(message), "receiptHandle": "r",
             "eventSource": "aws:sqs", "eventSourceARN": app_module.NOTIFICATION_QUEUE,
             "attributes": {}, "messageAttributes": {}}
            for i, message in enumerate(bus)
        ]  # fmt: skip
        for _ in range(2):
            answer = client.lambda_.invoke("notify_people", {"Records": records})
            assert answer.payload == {"batchItemFailures": []}
    sent = get_backend("ses")["123456789012"]["us-east-1"].sent_messages
    assert sorted(m.destinations[0] for m in sent) == ["finance@example.com", "maria@example.com"]
    assert ["/act/" in m.raw_data for m in sorted(sent, key=lambda m: m.destinations)] == [
        False,
        True,
    ]
    mail.forget_clients()


def test_a_marker_given_back_may_be_claimed_again_once(storage: Backend) -> None:
    assert storage.claim_notice("1#1#2#user:maria#arrived", "first")
    assert not storage.claim_notice("1#1#2#user:maria#arrived", "second")
    storage.release_notice("1#1#2#user:maria#arrived", "second")  # not its claim: kept
    assert not storage.claim_notice("1#1#2#user:maria#arrived", "third")
    storage.release_notice("1#1#2#user:maria#arrived", "first")
    assert storage.claim_notice("1#1#2#user:maria#arrived", "fourth")
    assert not storage.claim_notice("1#1#2#user:maria#arrived", "fifth")
