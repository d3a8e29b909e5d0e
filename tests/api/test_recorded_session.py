"""A recorded session: the same requests answer the same bytes, and store the same events.

tests/api/recorded_session.json holds a session of requests
(every route, the approver rules, quorums, deadlines, minimal answers, keyed
retries, errors), each answer's status, headers and body exactly as sent, and
then every event the session stored, as delivered: one recording, which every
backend must answer alike. The clock and the event ids
are fixed per request, so hashes, times and bodies are reproducible; event
ids, random in service, are compared by the event they name.

Replaying it must give the same bytes: the service's answers, its audit chain
and its events do not change when its code is reorganised. A change of
behaviour that is meant shows here; record again on purpose with

    RECORD_SESSION=1 .venv/bin/python -m pytest tests/api/test_recorded_session.py
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Optional

import pytest
from chalice.test import Client

from chalicelib import engine
from chalicelib.domain.models import Event
from chalicelib.storage import Backend

RECORDING = Path(__file__).with_name("recorded_session.json")
START = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
# The headers an answer is compared by (X-Request-Id and the access line differ per run).
KEPT_HEADERS = ("Content-Type", "Location", "Preference-Applied", "Idempotent-Replayed")
JSON = {"Content-Type": "application/json"}


class FixedTime:
    """datetime as engine.utc_now reads it: the time the session says it is."""

    now_at = START

    @classmethod
    def now(cls, tz: Any = None) -> datetime:
        return cls.now_at


class Session:
    """Sends the session's requests and keeps each answer as sent."""

    def __init__(self, client: Client, storage: Backend) -> None:
        self.client = client
        self.storage = storage
        self.answers: list[dict[str, Any]] = []
        self.tick = 0

    def at(self, seconds: float) -> str:
        """Move the session's clock to `seconds` after its start; that time."""
        FixedTime.now_at = START + timedelta(seconds=seconds)
        return engine.utc_now()

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Optional[dict[str, str]] = None,
        raw: Optional[bytes] = None,
    ) -> Any:
        self.tick += 1
        self.at(self.tick)
        sent = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        response = self.client.http.request(
            method, path, headers={**JSON, **(headers or {})}, body=sent
        )
        self.answers.append(
            {
                "request": [method, path, sent.decode("utf-8", "surrogateescape")],
                "status": response.status_code,
                "headers": {
                    name: response.headers[name]
                    for name in KEPT_HEADERS
                    if name in response.headers
                },
                "body": response.body.decode("utf-8"),
            }
        )
        try:
            return json.loads(response.body)
        except ValueError:
            return None

    def sweep(self, seconds: float) -> None:
        now = self.at(seconds)
        self.answers.append({"sweep": now, "applied": engine.sweep(self.storage, lambda: now)})


def play(session: Session) -> None:
    """The session: what a team does in its first hour, and what goes wrong."""
    s = session
    purchase = s.send(
        "POST",
        "/workflows",
        {
            "name": "Purchase order",
            "description": "Laptops and other equipment",
            "steps": [
                "Manager",
                {"name": "Finance", "approvers": ["group:finance"], "required_approvals": 2},
            ],
            "distinct_approvers": True,
        },
    )
    wid = purchase["id"]
    s.send("POST", f"/workflows/{wid}/steps", {"name": "CFO", "approvers": ["user:cfo"]})
    s.send(
        "POST",
        "/workflows",
        {
            "name": "Deploy",
            "steps": [
                {
                    "name": "Review",
                    "approvers": ["user:lead", "group:ops"],
                    "deadline_seconds": 60,
                    "on_deadline": "escalate",
                    "escalate_to": ["user:cto"],
                },
                {"name": "Sign-off", "deadline_seconds": 30, "on_deadline": "reject"},
            ],
            "reject_requires_comment": True,
        },
    )
    s.send(
        "POST",
        "/workflows",
        {"name": "Contract", "steps": [{"name": "Legal", "deadline_seconds": 45}]},
    )
    # Content and conditions: a tiered purchase order, routed by its amount
    # (defined before the refusals: DynamoDB's ids may skip a refused one).
    tiered = s.send(
        "POST",
        "/workflows",
        {
            "name": "Tiered purchase",
            "input_schema": {
                "type": "object",
                "required": ["amount"],
                "properties": {
                    "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
                    "supplier": {"type": "string"},
                },
            },
            "steps": [
                "Manager",
                {"name": "Finance", "when": {">=": [{"var": "amount"}, 1000]}},
                {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}},
            ],
        },
    )
    # And one a delegate will decide.
    cover = s.send(
        "POST",
        "/workflows",
        {"name": "Holiday cover", "steps": [{"name": "CFO sign-off", "approvers": ["user:cfo"]}]},
    )
    s.send("POST", "/workflows", {"name": "Purchase order"})  # 409: the name is taken
    s.send("POST", "/workflows", {"name": " ", "steps": []})  # 400
    s.send("GET", "/workflows/999")
    s.send("GET", "/workflows/abc")

    # Purchase orders: the requester, a quorum of two, distinct approvers.
    po = s.send(
        "POST",
        "/runs",
        {"workflow_id": wid, "title": "PO-1042: 12 laptops", "requested_by": "rita"},
    )
    second = s.send(
        "POST", "/runs", {"workflow_id": wid, "title": "PO-1043", "requested_by": "sam"}
    )
    s.send("POST", "/runs", {"workflow_id": wid, "title": "PO-1044"})
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "rita"})  # 403: self-approval
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "mo", "comment": "fine"})
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "mo", "expected_step_id": 1})  # 409
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "fay"})  # 403: not finance
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "mo", "groups": ["finance"]})  # 403
    s.send("GET", "/inbox?actor=fay&group=finance&limit=1")
    first_page = s.send("GET", "/inbox?actor=gus&group=finance&limit=1")
    s.send(
        "POST",
        f"/runs/{po['id']}/approve",
        {"actor": "fay", "groups": ["finance"], "expected_step_id": 2},
    )
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "fay", "groups": ["finance"]})  # 409
    s.send("GET", "/inbox?actor=fay&group=finance")
    s.send("GET", "/inbox?actor=gus&group=finance")
    if first_page and first_page.get("next_cursor"):
        s.send("GET", f"/inbox?actor=gus&group=finance&limit=1&cursor={first_page['next_cursor']}")
    s.send(
        "POST",
        f"/runs/{po['id']}/approve",
        {"actor": "gus", "groups": ["finance"], "comment": "budget ok"},
        headers={"Prefer": "return=minimal"},
    )
    s.send("GET", "/inbox?actor=cfo")
    keyed = {"Idempotency-Key": "po-1042-cfo"}
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "cfo"}, headers=keyed)
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "cfo"}, headers=keyed)  # replayed
    s.send("POST", f"/runs/{po['id']}/approve", {"actor": "cfo", "comment": "x"}, headers=keyed)
    s.send("POST", f"/runs/{po['id']}/reject", {"actor": "cfo"})  # 409: completed
    s.send("GET", f"/runs/{po['id']}")
    s.send("GET", f"/runs/{po['id']}/audit")
    s.send("POST", f"/runs/{second['id']}/cancel", {"actor": "mo"})  # 403: not the requester
    s.send("POST", f"/runs/{second['id']}/cancel", {"actor": "sam", "reason": "not needed"})
    s.send("POST", f"/runs/{second['id']}/approve", {"actor": "mo"})  # 409: cancelled

    # Deploys: deadlines that escalate and reject, a reason required to reject.
    review = s.send(
        "POST", "/runs", {"workflow_id": 2, "title": "Release 4.2", "requested_by": "dev"}
    )
    s.send("POST", "/runs", {"workflow_id": 2, "title": "Release 4.3"})
    s.send("POST", "/runs", {"workflow_id": 3, "title": "NDA with Acme"})
    s.send("GET", "/inbox?actor=cto")
    s.sweep(100)  # Review escalated for both, Legal reminded
    s.sweep(101)  # nothing more is due
    s.send("GET", "/inbox?actor=cto")
    s.send("POST", f"/runs/{review['id']}/reject", {"actor": "cto"})  # 400: no reason
    s.send("POST", f"/runs/{review['id']}/approve", {"actor": "cto", "comment": "ship it"})
    s.sweep(200)  # Sign-off expires: rejected by the deadline
    s.send("GET", f"/runs/{review['id']}", headers={"Prefer": "return=minimal"})
    s.send("GET", f"/runs/{review['id']}")
    s.send("POST", "/runs/5/approve", {"actor": "lead"})
    s.send("POST", "/runs/5/reject", {"actor": "ops1", "groups": ["ops"], "comment": "broken"})

    # Lists, pages and events.
    s.send("GET", "/workflows?limit=2")
    listed = s.send("GET", "/runs?limit=2")
    if listed and listed.get("next_cursor"):
        s.send("GET", f"/runs?limit=2&cursor={listed['next_cursor']}")
    s.send("GET", f"/runs?workflow_id={wid}&status=in_progress")
    s.send("GET", "/runs?status=rejected")
    s.send("GET", "/runs?status=bogus")
    events = s.send("GET", f"/runs/{po['id']}/events?limit=3")
    if events and events.get("next_cursor"):
        s.send("GET", f"/runs/{po['id']}/events?limit=3&cursor={events['next_cursor']}")
    s.send("GET", "/runs/999/events")
    s.send("POST", "/runs", raw=b"{not json")
    s.send("POST", "/runs", {"workflow_id": wid})
    s.send("POST", "/runs", {"workflow_id": 999, "title": "x"})

    # The tiered orders: 500, 5,000 and 50,000 EUR take 1, 2 and 3 decisions.
    for amount in (500, 5000, 50000):
        order = s.send(
            "POST",
            "/runs",
            {
                "workflow_id": tiered["id"],
                "title": f"PO for {amount} EUR",
                "input": {"amount": amount, "supplier": "Acme"},
            },
        )
        while order.get("status") == "in_progress":
            order = s.send("POST", f"/runs/{order['id']}/approve", {"actor": "mo"})
    s.send("GET", f"/runs/{order['id']}/audit")
    s.send("POST", "/runs", {"workflow_id": tiered["id"], "title": "x", "input": {"amount": -1}})
    s.send("POST", "/runs", {"workflow_id": tiered["id"], "title": "x"})  # 400: /amount

    # Delegation: the CFO is away, a deputy decides for them; then it is revoked.
    away = s.send(
        "POST",
        "/delegations",
        {
            "delegator": "cfo",
            "delegate": "dep",
            "starts_at": "2030-01-01T00:00:00Z",
            "ends_at": "2030-01-10T00:00:00Z",
            "reason": "Holiday",
        },
    )
    covered = s.send("POST", "/runs", {"workflow_id": cover["id"], "title": "PO-2001"})
    s.send("GET", "/inbox?actor=dep")
    s.send("GET", f"/runs/{covered['id']}/permissions?actor=dep")
    s.send("POST", f"/runs/{covered['id']}/approve", {"actor": "dep", "comment": "for the CFO"})
    s.send("GET", "/delegations?delegator=CFO")
    s.send("DELETE", f"/delegations/{away['id']}?actor=cfo")
    s.send("DELETE", f"/delegations/{away['id']}?actor=cfo")  # 409: revoked already

    # Send back for changes: returned, resubmitted with a new input, approved.
    nda = s.send(
        "POST", "/runs", {"workflow_id": 3, "title": "NDA with Initech", "requested_by": "sam"}
    )
    s.send("POST", f"/runs/{nda['id']}/return", {"actor": "lee", "comment": "Wrong party"})
    s.send("POST", f"/runs/{nda['id']}/approve", {"actor": "lee"})  # 409: returned
    s.send(
        "POST",
        f"/runs/{nda['id']}/resubmit",
        {"actor": "sam", "comment": "Fixed", "input": {"party": "Initrode"}},
    )
    s.send("POST", f"/runs/{nda['id']}/approve", {"actor": "lee", "expected_round": 2})
    s.send("GET", f"/runs/{nda['id']}/audit")


def stored_events(storage: Backend) -> dict[str, list[Event]]:
    """Every event the session stored, by subject, as it is delivered."""
    subjects = [f"workflows/{n}" for n in range(1, 7)] + [f"runs/{n}" for n in range(1, 15)]
    subjects += ["delegations/1"]
    return {subject: list(storage.list_events(subject, None, 100).items) for subject in subjects}


def named_by_place(answers: list[dict[str, Any]], stored: dict[str, list[Event]]) -> Any:
    """The answers and events with each event's id (random in service, numbered
    here in the order they are made, which need not be the same order however
    the code is arranged) named by its place in its stream: `<subject>#<sequence>`."""
    places = {
        event.id: f"{event.subject}#{event.sequence}"
        for events in stored.values()
        for event in events
    }
    ids = re.compile("|".join(map(re.escape, places)) or "^$")

    def named(text: str) -> str:
        return ids.sub(lambda match: places[match.group(0)], text)

    return {
        "answers": [
            {**answer, "body": named(answer["body"])} if "body" in answer else answer
            for answer in answers
        ],
        "events": {
            subject: [named(event.body) for event in events] for subject, events in stored.items()
        },
    }


@pytest.fixture
def fixed_session(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The clock the session sets, and event ids numbered in the order they are made."""
    monkeypatch.setattr(engine, "datetime", FixedTime)
    numbers = itertools.count(1)
    monkeypatch.setattr(
        "chalicelib.domain.events._uuid", lambda: f"00000000-0000-4000-8000-{next(numbers):012d}"
    )
    monkeypatch.delenv("WORKFLOW_AUTH", raising=False)
    monkeypatch.delenv("WORKFLOW_CURSOR_SECRET", raising=False)
    monkeypatch.setenv("WORKFLOW_STAGE", "dev")
    yield


def test_the_recorded_session_answers_and_stores_the_same_bytes(
    client: Client, storage: Backend, fixed_session: None
) -> None:
    session = Session(client, storage)
    play(session)
    played = named_by_place(session.answers, stored_events(storage))
    if os.environ.get("RECORD_SESSION"):
        RECORDING.write_text(json.dumps(played, indent=1, ensure_ascii=False) + "\n")
        pytest.skip("recorded")
    expected = json.loads(RECORDING.read_text(encoding="utf-8"))
    for sent, kept in zip(played["answers"], expected["answers"], strict=True):
        assert sent == kept
    assert played["events"] == expected["events"]


def test_the_session_exercises_what_it_claims() -> None:
    """The recording is no empty success: it holds refusals, replays and every event kind."""
    recorded = json.loads(RECORDING.read_text(encoding="utf-8"))
    answers = recorded["answers"]
    statuses = {answer["status"] for answer in answers if "status" in answer}
    assert {200, 201, 400, 403, 404, 409, 422} <= statuses, statuses
    assert any(answer.get("headers", {}).get("Idempotent-Replayed") for answer in answers)
    assert any(answer.get("headers", {}).get("Preference-Applied") for answer in answers)
    assert [answer["applied"] for answer in answers if "sweep" in answer] == [3, 0, 1]
    types = {json.loads(body)["type"] for bodies in recorded["events"].values() for body in bodies}
    assert len(types) == 17, sorted(types)
