"""GET /runs/{id}/permissions on every backend and in both auth modes: every
reason code, and the decision routes and the inbox saying the same."""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import urlencode

import pytest

from tests.support.api import Api
from tests.support.shapes import assert_error
from tests.support.tokens import admin_token, as_, claims, hs256

REASONS = (
    "run_not_in_progress",
    "not_an_approver",
    "requester_may_not_decide",
    "already_approved_this_step",
    "approved_another_step",
    "not_the_requester",
    "run_returned",
    "run_not_returned",
    "returns_exhausted",
    "delegation_not_active",
    "not_an_administrator",
)
# The reasons about the run's state, not the caller: 409, the others 403.
CONFLICTS = (
    "run_not_in_progress",
    "already_approved_this_step",
    "run_returned",
    "run_not_returned",
    "returns_exhausted",
)
VERBS = ("approve", "reject", "cancel", "return", "resubmit")


class Asker:
    """One caller of the none mode: their permissions, decisions and inbox."""

    def __init__(
        self, api: Api, actor: str, *groups: str, on_behalf_of: Optional[str] = None
    ) -> None:
        self.api, self.actor, self.groups = api, actor, groups
        self.on_behalf_of = on_behalf_of

    def query(self) -> str:
        return urlencode([("actor", self.actor), *(("group", group) for group in self.groups)])

    def permissions(self, run_id: int) -> dict[str, Any]:
        asked = self.query() + (f"&on_behalf_of={self.on_behalf_of}" if self.on_behalf_of else "")
        return self.api._expect(200, self.api.get(f"/runs/{run_id}/permissions?{asked}"))

    def decide(self, run_id: int, verb: str) -> Any:
        body: dict[str, Any] = {"actor": self.actor, "comment": "checked"}
        if verb in ("approve", "reject", "return"):
            if self.groups:
                body["groups"] = list(self.groups)
            if self.on_behalf_of:
                body["on_behalf_of"] = self.on_behalf_of
        if verb == "cancel":
            body = {"actor": self.actor, "reason": "checked"}
        return self.api.post(f"/runs/{run_id}/{verb}", body)

    def inbox(self) -> list[int]:
        page = self.api._expect(200, self.api.get(f"/inbox?{self.query()}&limit=100"))
        return [run["id"] for run in page["items"]]


def workflow(api: Api, *steps: Any, **flags: Any) -> dict[str, Any]:
    body = {"name": f"W{len(api.get('/workflows').json_body['items'])}", "steps": list(steps)}
    return api._expect(201, api.post("/workflows", {**body, **flags}))


def started(api: Api, flow: dict[str, Any], requested_by: Optional[str] = "rita") -> int:
    body: dict[str, Any] = {"workflow_id": flow["id"], "title": "Laptops"}
    if requested_by:
        body["requested_by"] = requested_by
    return int(api._expect(201, api.post("/runs", body))["id"])


def agrees(asker: Asker, run_id: int) -> dict[str, Optional[str]]:
    """The caller's permissions on the run, checked against what the decision
    routes answer (the refused ones, which write nothing) and against the inbox;
    the reason code of each action (None: allowed)."""
    allowed = asker.permissions(run_id)
    assert allowed["run_id"] == run_id and allowed["actor"] == asker.actor
    codes: dict[str, Optional[str]] = {}
    for verb in VERBS:
        answer = allowed[verb]
        codes[verb] = answer["reason"]
        assert answer["allowed"] is (answer["reason"] is None)
        assert (answer["message"] is None) is answer["allowed"]
        if not answer["allowed"]:
            before = asker.api.get(f"/runs/{run_id}").json_body
            refused = asker.decide(run_id, verb)
            status = 409 if answer["reason"] in CONFLICTS else 403
            assert_error(refused, status)
            assert refused.json_body["error"] == answer["message"]
            assert asker.api.get(f"/runs/{run_id}").json_body == before
    assert (run_id in asker.inbox()) is allowed["approve"]["allowed"]
    return codes


def test_a_caller_who_may_decide_is_allowed_everything_and_finds_the_run_in_their_inbox(
    api: Api,
) -> None:
    run = started(api, workflow(api, "Manager"), requested_by=None)
    assert agrees(Asker(api, "mo"), run) == {
        "approve": None,
        "reject": None,
        "cancel": None,
        "return": None,
        "resubmit": "run_not_returned",
    }


def test_an_ended_run_allows_nothing(api: Api) -> None:
    run = started(api, workflow(api, "Manager"))
    api.approve(run, "mo")
    assert agrees(Asker(api, "mo"), run) == {
        **dict.fromkeys(("approve", "reject", "cancel", "return"), "run_not_in_progress"),
        "resubmit": "run_not_returned",
    }


def test_someone_the_step_does_not_name_may_not_decide_it(api: Api) -> None:
    run = started(api, workflow(api, {"name": "Finance", "approvers": ["group:finance"]}))
    assert agrees(Asker(api, "bob"), run) == {
        "approve": "not_an_approver",
        "reject": "not_an_approver",
        "cancel": "not_the_requester",
        "return": "not_an_approver",
        "resubmit": "run_not_returned",
    }
    assert agrees(Asker(api, "fay", "finance"), run)["approve"] is None


def test_the_requester_may_not_decide_but_may_cancel(api: Api) -> None:
    run = started(api, workflow(api, {"name": "Finance", "approvers": ["group:finance"]}))
    assert agrees(Asker(api, "rita", "finance"), run) == {
        "approve": "requester_may_not_decide",
        "reject": "requester_may_not_decide",
        "cancel": None,
        "return": "requester_may_not_decide",
        "resubmit": "run_not_returned",
    }


def test_an_approval_given_is_not_given_again_but_the_step_may_still_be_rejected(
    api: Api,
) -> None:
    quorum = {"name": "Board", "approvers": ["group:board"], "required_approvals": 2}
    run = started(api, workflow(api, quorum))
    fay = Asker(api, "fay", "board")
    assert fay.decide(run, "approve").status_code == 200
    assert agrees(fay, run) == {
        "approve": "already_approved_this_step",
        "reject": None,
        "cancel": "not_the_requester",
        "return": None,
        "resubmit": "run_not_returned",
    }


def test_distinct_approvers_keep_an_approver_of_one_step_from_approving_the_next(
    api: Api,
) -> None:
    run = started(api, workflow(api, "Manager", "Finance", distinct_approvers=True))
    mo = Asker(api, "mo")
    assert mo.decide(run, "approve").status_code == 200
    assert agrees(mo, run) == {
        "approve": "approved_another_step",
        "reject": None,
        "cancel": "not_the_requester",
        "return": None,
        "resubmit": "run_not_returned",
    }


def test_a_returned_run_waits_for_its_requester_alone(api: Api) -> None:
    run = started(api, workflow(api, "Manager"))
    assert Asker(api, "mo").decide(run, "return").status_code == 200
    decided = {"approve": "run_returned", "reject": "run_returned", "return": "run_returned"}
    assert agrees(Asker(api, "mo"), run) == {
        **decided,
        "cancel": "not_the_requester",
        "resubmit": "not_the_requester",
    }
    assert agrees(Asker(api, "rita"), run) == {**decided, "cancel": None, "resubmit": None}


def test_a_run_sent_back_as_often_as_its_workflow_allows_is_not_sent_back_again(
    api: Api,
) -> None:
    run = started(api, workflow(api, "Manager", max_returns=1))
    mo = Asker(api, "mo")
    assert mo.decide(run, "return").status_code == 200
    assert Asker(api, "rita").decide(run, "resubmit").status_code == 200
    assert agrees(mo, run)["return"] == "returns_exhausted"


def test_deciding_for_someone_needs_their_delegation_active_now(api: Api) -> None:
    run = started(api, workflow(api, {"name": "Finance", "approvers": ["user:bob"]}))
    asker = Asker(api, "dave", on_behalf_of="bob")
    codes = agrees(asker, run)
    assert codes["approve"] == codes["reject"] == codes["return"] == "delegation_not_active"


def test_every_reason_code_is_walked_through() -> None:
    """The tests above name each code of the document's enum."""
    import json
    from pathlib import Path

    document = json.loads(
        (Path(__file__).resolve().parents[2] / "chalicelib" / "openapi.json").read_text()
    )
    reason = document["components"]["schemas"]["Permission"]["properties"]["reason"]
    assert tuple(reason["anyOf"][0]["enum"]) == REASONS
    source = Path(__file__).read_text()
    assert all(source.count(f'"{code}"') >= 2 for code in REASONS)


@pytest.mark.parametrize(
    "query", ["", "?group=finance", "?actor=", "?actor=a&actor=b", "?actor=a&limit=1"]
)
def test_a_bad_permissions_query_is_400(api: Api, query: str) -> None:
    run = started(api, workflow(api, "Manager"))
    assert_error(api.get(f"/runs/{run}/permissions{query}"), 400)


def test_permissions_of_a_run_that_does_not_exist_are_404(api: Api) -> None:
    assert_error(api.get("/runs/999/permissions?actor=mo"), 404)
    assert_error(api.get("/runs/abc/permissions?actor=mo"), 404)


# -- with verified callers -----------------------------------------------------------


def test_a_token_says_who_asks_and_an_administrator_may_cancel_any_run(
    api: Api, secret_mode: None
) -> None:
    admin = admin_token()
    flow = as_(
        api,
        admin,
        "POST",
        "/workflows",
        {"name": "Pay", "steps": [{"name": "Finance", "approvers": ["group:finance"]}]},
    ).json_body
    rita = hs256(claims("rita", groups=["finance"]))
    run = as_(api, rita, "POST", "/runs", {"workflow_id": flow["id"], "title": "Laptops"}).json_body
    path = f"/runs/{run['id']}/permissions"

    mine = as_(api, rita, "GET", path).json_body
    assert (mine["actor"], mine["approve"]["reason"], mine["cancel"]["allowed"]) == (
        "rita",
        "requester_may_not_decide",
        True,
    )
    fay = as_(api, hs256(claims("fay", groups=["finance"])), "GET", path).json_body
    assert (fay["approve"]["allowed"], fay["cancel"]["reason"]) == (True, "not_the_requester")
    ada = as_(api, admin, "GET", path).json_body
    assert (ada["approve"]["reason"], ada["cancel"]["allowed"]) == ("not_an_approver", True)
    assert_error(as_(api, rita, "GET", f"{path}?actor=rita"), 400)
    assert_error(api.get(path), 401)


def test_only_an_administrator_may_reassign_or_move_a_run(api: Api, secret_mode: None) -> None:
    admin = admin_token()
    flow = as_(api, admin, "POST", "/workflows", {"name": "Moves", "steps": ["Manager"]}).json_body
    maria = hs256(claims("maria"))
    run = as_(api, maria, "POST", "/runs", {"workflow_id": flow["id"], "title": "Desk"}).json_body
    path = f"/runs/{run['id']}"

    mine = as_(api, maria, "GET", f"{path}/permissions").json_body
    reassign = as_(api, maria, "POST", f"{path}/reassign", {"approvers": [], "comment": "x"})
    move = as_(api, maria, "POST", f"{path}/move", {"to_version": 2, "step": "Manager"})

    assert mine["reassign"]["reason"] == mine["move"]["reason"] == "not_an_administrator"
    for refused, verb in ((reassign, "reassign"), (move, "move")):
        assert_error(refused, 403)
        assert refused.json_body["error"] == mine[verb]["message"]
    assert as_(api, admin, "GET", f"{path}/permissions").json_body["reassign"]["allowed"]
