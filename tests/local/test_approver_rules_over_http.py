"""The approver rules over real HTTP: the server of `make run` (and of `make
run-dynamodb`, on the single-request moto server), in both auth modes, with the
exact status of each rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest

from chalicelib.storage import Backend
from tests.support.http import Answer, request
from tests.support.serving import served
from tests.support.tokens import admin_token, bearer, claims, hs256

FINANCE = [
    "Manager",
    {"name": "Finance", "approvers": ["group:finance", "user:cfo"], "required_approvals": 2},
]


@pytest.fixture
def port(race_storage_factory: Callable[[], Backend], serve: None) -> Iterator[int]:
    with served(race_storage_factory()) as port:
        yield port


class Caller:
    """One person calling the API: asserted (none mode) or with a token (jwt)."""

    def __init__(self, port: int, actor: str, groups: tuple[str, ...], jwt: bool) -> None:
        self.port, self.actor, self.groups, self.jwt = port, actor, groups, jwt

    def call(self, method: str, path: str, body: Optional[dict[str, Any]] = None) -> Answer:
        if self.jwt:
            token = admin_token(self.actor) if "admins" in self.groups else None
            token = token or hs256(claims(self.actor, groups=list(self.groups)))
            return request(self.port, method, path, body, headers=bearer(token))
        return request(self.port, method, path, body)

    def decide(self, verb: str, run_id: int, **body: Any) -> Answer:
        if not self.jwt:
            body["actor"] = self.actor
            if self.groups and verb != "cancel":
                body["groups"] = list(self.groups)
        return self.call("POST", f"/runs/{run_id}/{verb}", body)

    def inbox(self) -> list[int]:
        query = "" if self.jwt else "?actor=" + self.actor
        query += "".join(f"&group={g}" for g in self.groups) if not self.jwt else ""
        answer = self.call("GET", "/inbox" + query)
        assert answer.status == 200, answer.body
        return [run["id"] for run in answer.json()["items"]]


@pytest.mark.parametrize("mode", ["none", "jwt"])
def test_every_rule_answers_its_status_over_http(
    port: int, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    jwt = mode == "jwt"
    if jwt:
        from tests.support import tokens

        monkeypatch.setenv("WORKFLOW_AUTH", "jwt")
        monkeypatch.setenv("WORKFLOW_JWT_ISSUER", tokens.ISSUER)
        monkeypatch.setenv("WORKFLOW_JWT_SECRET", tokens.SECRET)
    ada, ann, mo, gus, fay, cfo = (
        Caller(port, name, groups, jwt)
        for name, groups in [
            ("ada", ("admins",)),
            ("ann", ("finance",)),
            ("mo", ()),
            ("gus", ("sales",)),
            ("fay", ("finance",)),
            ("cfo", ()),
        ]
    )
    body = {"name": "Purchase", "steps": FINANCE, "reject_requires_comment": True}
    workflow = ada.call("POST", "/workflows", body)
    assert workflow.status == 201, workflow.body
    start = {"workflow_id": workflow.json()["id"], "title": "Servers"}
    if not jwt:
        start["requested_by"] = "ann"
    run_id = ann.call("POST", "/runs", start).json()["id"]

    assert mo.decide("approve", run_id).status == 200
    assert ann.decide("approve", run_id).status == 403  # their own run
    assert gus.decide("approve", run_id).status == 403  # not an approver
    assert fay.inbox() == [run_id] and gus.inbox() == [] and ann.inbox() == []
    once = fay.decide("approve", run_id)
    assert (once.status, once.json()["current_step_approved_by"]) == (200, ["fay"])
    assert fay.decide("approve", run_id).status == 409  # twice
    assert fay.inbox() == [] and cfo.inbox() == [run_id]
    assert fay.decide("reject", run_id).status == 422  # no reason
    assert mo.decide("cancel", run_id).status == 403  # not the requester
    done = cfo.decide("approve", run_id)
    assert (done.status, done.json()["status"]) == (200, "completed")
    assert cfo.decide("approve", run_id).status == 409
    assert ann.decide("cancel", run_id).status == 409

    second = ann.call("POST", "/runs", start).json()["id"]
    cancelled = ann.decide("cancel", second, reason="not needed")
    assert (cancelled.status, cancelled.json()["status"]) == (200, "cancelled")
    assert mo.inbox() == []
