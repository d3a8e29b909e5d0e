"""Delegation and send back over real HTTP: the server of `make run` (and of
`make run-dynamodb`, on the single-request moto server), in both auth modes.
A delegation in its window lets the delegate decide, recorded for the
delegator in the chain, and not outside it; revoking it takes effect at once;
separation of duties counts each human once; the delegate's inbox shows the
delegated runs. A run sent back, resubmitted with a new input and approved to
completion counts only its last round's approvals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.local.test_trust_over_http import As, mode, served_storage, started, workflow
from tests.support import chain
from tests.support.http import request

__all__ = ["mode", "served_storage"]  # the fixtures this module's tests use


def at(days: float) -> str:
    moment = datetime.now(UTC) + timedelta(days=days)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delegate(caller: As, delegator: str, delegate: str, starts: float, ends: float) -> Any:
    """A delegation `delegator` makes (their token in jwt mode)."""
    body = {"delegate": delegate, "starts_at": at(starts), "ends_at": at(ends)}
    if not caller.jwt:
        body["delegator"] = delegator
    return caller.call(delegator, "POST", "/delegations", body)


def revoke(caller: As, actor: str, delegation_id: int) -> Any:
    path = f"/delegations/{delegation_id}" + ("" if caller.jwt else f"?actor={actor}")
    return caller.call(actor, "DELETE", path)


def inbox(caller: As, actor: str) -> list[tuple[int, Any]]:
    path = "/inbox" + ("" if caller.jwt else f"?actor={actor}")
    return [
        (item["id"], item["on_behalf_of"])
        for item in caller.call(actor, "GET", path).json()["items"]
    ]


def test_a_delegation_in_its_window_lets_the_delegate_decide_for_the_delegator(
    served_storage: Any, mode: str
) -> None:
    caller = As(served_storage[0], mode)
    bobs = workflow(caller, [{"name": "Finance", "approvers": ["user:bob"]}, "Sign-off"])
    run = started(caller, bobs, "rita")
    later = delegate(caller, "bob", "dave", 2, 5)
    assert later.status == 201, later.body
    assert caller.call("dave", "POST", f"/runs/{run}/approve").status == 403

    now = delegate(caller, "bob", "dave", -1, 5)
    assert now.status == 201, now.body
    assert inbox(caller, "dave") == [(run, "bob")]
    decided = caller.call("dave", "POST", f"/runs/{run}/approve")

    assert decided.status == 200, decided.body
    action = decided.json()["actions"][-1]
    assert (action["actor"], action["on_behalf_of"]) == ("dave", "bob")
    chain.assert_chained(decided.json())
    audit = caller.call(None, "GET", f"/runs/{run}/audit").json()
    assert audit["valid"] and audit["entries"][0]["on_behalf_of"] == "bob"

    second = started(caller, bobs, "rita")
    assert revoke(caller, "dave", now.json()["id"]).status == 403  # not the delegator
    assert revoke(caller, "bob", now.json()["id"]).status == 200
    assert caller.call("dave", "POST", f"/runs/{second}/approve").status == 403
    assert inbox(caller, "dave") == [(run, None)]  # at Sign-off now, open to anyone


def test_separation_of_duties_holds_over_the_person_and_whom_they_act_for(
    served_storage: Any, mode: str
) -> None:
    caller = As(served_storage[0], mode)
    assert delegate(caller, "bob", "ann", -1, 5).status == 201
    assert delegate(caller, "rita", "dave", -1, 5).status == 201
    quorum = {
        "name": "Board",
        "approvers": ["user:ann", "user:bob", "user:cy"],
        "required_approvals": 2,
    }
    run = started(caller, workflow(caller, [quorum]), "sam")

    assert caller.call("ann", "POST", f"/runs/{run}/approve").status == 200
    second_seat = caller.call("ann", "POST", f"/runs/{run}/approve", {"on_behalf_of": "bob"})
    assert second_seat.status == 409, second_seat.body
    requested = started(
        caller, workflow(caller, [{"name": "Legal", "approvers": ["user:rita"]}]), "rita"
    )
    for_the_requester = caller.call("dave", "POST", f"/runs/{requested}/approve")
    assert for_the_requester.status == 403, for_the_requester.body
    assert "who requested this run" in for_the_requester.json()["error"]


def test_a_run_sent_back_and_resubmitted_counts_only_its_last_rounds_approvals(
    served_storage: Any, mode: str
) -> None:
    caller = As(served_storage[0], mode)
    flow = workflow(caller, [{"name": "Board", "required_approvals": 2}, "Sign-off"])
    run = started(caller, flow, "rita")
    assert caller.call("ann", "POST", f"/runs/{run}/approve").status == 200

    returned = caller.call("mo", "POST", f"/runs/{run}/return", {"comment": "Add the quote"})
    assert returned.status == 200, returned.body
    assert caller.call("bo", "POST", f"/runs/{run}/approve").status == 409
    again = caller.call("rita", "POST", f"/runs/{run}/resubmit", {"input": {"quote": "Q-7"}})
    assert again.status == 200, again.body
    assert (again.json()["round"], again.json()["input"]) == (2, {"quote": "Q-7"})

    assert caller.call("ann", "POST", f"/runs/{run}/approve").json()[
        "current_step_approved_by"
    ] == ["ann"]
    caller.call("bo", "POST", f"/runs/{run}/approve")
    done = caller.call("cy", "POST", f"/runs/{run}/approve").json()
    assert done["status"] == "completed"
    audit = caller.call(None, "GET", f"/runs/{run}/audit").json()
    assert audit["valid"] and audit["state_valid"], audit
    plain = request(served_storage[0], "GET", "/openapi.json")
    assert "/runs/{run_id}/return" in plain.json()["paths"]
