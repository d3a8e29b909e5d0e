"""Trust over real HTTP: the server of `make run` (and of `make run-dynamodb`,
on the single-request moto server), in both auth modes. Every spelling of a
name that is one person counts as that person; every name that hides what it
is (a zero-width, bidirectional or control character, the reserved system:
prefix) is refused, 400 in a body and 401 in a token; and a run whose stored
state was forged shows it in its audit and never advances on it."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest

from chalicelib.storage import Backend
from tests.support import tamper, tokens
from tests.support.http import Answer, request
from tests.support.serving import served


@pytest.fixture
def served_storage(
    race_storage_factory: Callable[[], Backend], serve: None
) -> Iterator[tuple[int, Backend]]:
    storage = race_storage_factory()
    with served(storage) as port:
        yield port, storage


@pytest.fixture(params=["none", "jwt"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "jwt":
        monkeypatch.setenv("WORKFLOW_AUTH", "jwt")
        monkeypatch.setenv("WORKFLOW_JWT_ISSUER", tokens.ISSUER)
        monkeypatch.setenv("WORKFLOW_JWT_SECRET", tokens.SECRET)
    else:
        monkeypatch.delenv("WORKFLOW_AUTH", raising=False)
    return str(request.param)


class As:
    """Calls as `actor`: named in the body (none mode) or by its token (jwt)."""

    def __init__(self, port: int, mode: str) -> None:
        self.port, self.jwt = port, mode == "jwt"

    def call(
        self, actor: Optional[str], method: str, path: str, body: Optional[dict[str, Any]] = None
    ) -> Answer:
        body = dict(body or {})
        if not self.jwt:
            if actor is not None and method == "POST" and path.startswith("/runs/"):
                body["actor"] = actor
            if actor is not None and path == "/runs":
                body["requested_by"] = actor
        sent = body if method == "POST" else None
        if not self.jwt:
            return request(self.port, method, path, sent)
        token = tokens.admin_token() if actor is None else tokens.hs256(tokens.claims(actor))
        return request(self.port, method, path, sent, headers=tokens.bearer(token))

    def refused_name(self) -> int:
        """The status a name that hides what it is gets: 401 in a token, 400 in a body."""
        return 401 if self.jwt else 400


# Workflow names, unique in the process: an id() is reused once its object is freed.
_WORKFLOW_NAMES = itertools.count(1)


def workflow(caller: As, steps: list[Any], **policy: bool) -> int:
    name = f"W{next(_WORKFLOW_NAMES)}"
    answer = caller.call(None, "POST", "/workflows", {"name": name, "steps": steps, **policy})
    assert answer.status == 201, answer.body
    return int(answer.json()["id"])


def started(caller: As, workflow_id: int, requester: str) -> int:
    answer = caller.call(requester, "POST", "/runs", {"workflow_id": workflow_id, "title": "PO"})
    assert answer.status == 201, answer.body
    return int(answer.json()["id"])


def test_every_spelling_of_the_requester_is_the_requester(
    served_storage: tuple[int, Backend], mode: str
) -> None:
    caller = As(served_storage[0], mode)
    run = started(caller, workflow(caller, ["Manager"]), "Rita")

    for spelling in ("rita", "RITA", "Ｒｉｔａ", "ritａ"):
        answer = caller.call(spelling, "POST", f"/runs/{run}/approve")
        assert answer.status == 403, (spelling, answer.body)
        assert "requested this run" in answer.json()["error"]
    for hidden in ("Ri\u200bta", "\ufeffRita", "\u202eRita", "Rita\u2800", "Ri\x00ta"):
        answer = caller.call(hidden, "POST", f"/runs/{run}/approve")
        assert answer.status == caller.refused_name(), (hidden, answer.body)
    assert caller.call("maria", "POST", f"/runs/{run}/approve").status == 200


def test_one_person_counts_once_toward_a_quorum_and_as_one_approver(
    served_storage: tuple[int, Backend], mode: str
) -> None:
    caller = As(served_storage[0], mode)
    quorum = workflow(
        caller, [{"name": "Finance", "required_approvals": 2}, "CFO"], distinct_approvers=True
    )
    run = started(caller, quorum, "sam")

    assert caller.call("fay", "POST", f"/runs/{run}/approve").status == 200
    for spelling in ("Fay", "ｆａｙ", "FAY"):
        answer = caller.call(spelling, "POST", f"/runs/{run}/approve")
        assert answer.status == 409, (spelling, answer.body)
        assert "already approved" in answer.json()["error"]
    assert caller.call("fay\u200b", "POST", f"/runs/{run}/approve").status == caller.refused_name()
    moved = caller.call("lee", "POST", f"/runs/{run}/approve")
    assert moved.json()["current_step"]["name"] == "CFO"
    for spelling in ("Lee", "ＬＥＥ", "fay"):
        answer = caller.call(spelling, "POST", f"/runs/{run}/approve")
        assert answer.status == 403, (spelling, answer.body)
        assert "distinct" in answer.json()["error"]


def test_names_that_hide_what_they_are_are_refused_and_system_is_reserved(
    served_storage: tuple[int, Backend], mode: str
) -> None:
    caller = As(served_storage[0], mode)
    open_step = workflow(caller, ["Manager"])
    for hidden in ("\u202eatir", "\u200b", "ma\x00ria", "n" * 201, "system:deadline", "System:x"):
        answer = caller.call(hidden, "POST", "/runs", {"workflow_id": open_step, "title": "PO"})
        assert answer.status == caller.refused_name(), (hidden, answer.body)
        assert "error" in answer.json()
    assert caller.call(None, "GET", "/runs").json()["items"] == []


def test_a_forged_approval_in_the_stored_state_shows_and_advances_nothing(
    served_storage: tuple[int, Backend], mode: str
) -> None:
    port, storage = served_storage
    caller = As(port, mode)
    board = workflow(caller, [{"name": "Board", "required_approvals": 3}, "Sign-off"])
    run = started(caller, board, "sam")
    assert caller.call("p", "POST", f"/runs/{run}/approve").status == 200

    tamper.set_run_state(storage, run, approved_by=["p", "q"])

    audit = caller.call(None, "GET", f"/runs/{run}/audit").json()
    assert (audit["valid"], audit["state_valid"]) == (True, False)
    assert audit["state_mismatches"] == ["current_step_approved_by"]
    after = caller.call("r", "POST", f"/runs/{run}/approve").json()
    assert after["current_step"]["name"] == "Board"
    assert after["current_step_approved_by"] == ["p", "r"]
    assert caller.call(None, "GET", f"/runs/{run}/audit").json()["state_valid"] is True
