"""Delegations on every backend: made, listed, read and revoked; in their window
a delegate decides what the delegator may, on their behalf, in the chain; the
rules count each human once; the delegate's inbox and permissions show it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Optional
from urllib.parse import quote

import pytest

from tests.support import chain
from tests.support.api import JSON_HEADERS, Api
from tests.support.shapes import assert_error
from tests.support.tokens import admin_token, as_, claims, hs256


def at(days: float = 0.0) -> str:
    moment = datetime.now(UTC) + timedelta(days=days)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delegated(
    api: Api,
    delegator: str = "bob",
    delegate: str = "dave",
    starts: float = -1,
    ends: float = 7,
    **more: Any,
) -> dict[str, Any]:
    body = {
        "delegator": delegator,
        "delegate": delegate,
        "starts_at": at(starts),
        "ends_at": at(ends),
        "reason": "Holiday",
        **more,
    }
    response = api.post("/delegations", body)
    assert response.status_code == 201, response.body
    assert response.headers["Location"] == f"/delegations/{response.json_body['id']}"
    return dict(response.json_body)


def workflow(api: Api, *steps: Any, **flags: Any) -> dict[str, Any]:
    body = {"name": f"W{len(api.get('/workflows').json_body['items'])}", "steps": list(steps)}
    return api._expect(201, api.post("/workflows", {**body, **flags}))


def started(api: Api, flow: dict[str, Any], requested_by: Optional[str] = "rita") -> int:
    body: dict[str, Any] = {"workflow_id": flow["id"], "title": "PO"}
    if requested_by:
        body["requested_by"] = requested_by
    return int(api._expect(201, api.post("/runs", body))["id"])


def decide(api: Api, run_id: int, actor: str, verb: str = "approve", **more: Any) -> Any:
    return api.post(f"/runs/{run_id}/{verb}", {"actor": actor, "comment": "ok", **more})


BOBS = {"name": "Finance", "approvers": ["user:bob"]}


def test_a_delegate_decides_for_the_delegator_in_the_window_and_the_chain_says_so(
    api: Api,
) -> None:
    run = started(api, workflow(api, BOBS, "Sign-off"))
    assert_error(decide(api, run, "dave"), 403)
    delegation = delegated(api)

    decided = decide(api, run, "dave")

    assert decided.status_code == 200, decided.body
    action = decided.json_body["actions"][-1]
    assert (action["actor"], action["on_behalf_of"]) == ("dave", "bob")
    chain.assert_chained(decided.json_body)
    audit = api.get(f"/runs/{run}/audit").json_body
    assert audit["entries"][0]["on_behalf_of"] == "bob" and audit["valid"]
    events = api.get(f"/runs/{run}/events").json_body["items"]
    approved = next(e for e in events if e["type"] == "approval.step.approved")
    assert approved["data"]["on_behalf_of"] == "bob"
    assert api.get(f"/delegations/{delegation['id']}").json_body == delegation


def test_outside_its_window_a_delegation_lends_nothing(api: Api) -> None:
    run = started(api, workflow(api, BOBS))
    delegated(api, starts=1, ends=3)  # not yet

    assert_error(decide(api, run, "dave"), 403)
    refused = decide(api, run, "dave", on_behalf_of="bob")
    assert_error(refused, 403)
    assert "no delegation from 'bob' active now" in refused.json_body["error"]
    asked = api.get(f"/runs/{run}/permissions?actor=dave&on_behalf_of=bob").json_body
    assert asked["approve"]["reason"] == "delegation_not_active"


def test_a_revoked_delegation_lends_nothing_at_once_and_stays_readable(api: Api) -> None:
    run = started(api, workflow(api, BOBS))
    delegation = delegated(api)
    assert_error(api.delete(f"/delegations/{delegation['id']}?actor=dave"), 403)

    revoked = api.delete(f"/delegations/{delegation['id']}?actor=Bob")

    assert revoked.status_code == 200, revoked.body
    assert revoked.json_body["revoked_by"] == "Bob" and revoked.json_body["revoked_at"]
    assert_error(decide(api, run, "dave"), 403)
    assert api.get(f"/delegations/{delegation['id']}").json_body == revoked.json_body
    assert_error(api.delete(f"/delegations/{delegation['id']}?actor=bob"), 409)


def test_a_group_may_be_the_delegate_and_a_delegation_may_cover_one_workflow(api: Api) -> None:
    first, other = workflow(api, BOBS), workflow(api, BOBS)
    delegated(api, delegate="group:deputies", workflow_id=first["id"])
    covered, not_covered = started(api, first), started(api, other)

    assert decide(api, covered, "eve", groups=["deputies"]).status_code == 200
    assert_error(decide(api, not_covered, "eve", groups=["deputies"]), 403)
    assert_error(decide(api, started(api, first), "eve"), 403)  # not in the group


def test_separation_of_duties_counts_each_human_once(api: Api) -> None:
    delegated(api, delegator="bob", delegate="ann")
    delegated(api, delegator="rita", delegate="dave")
    quorum = {
        "name": "Board",
        "approvers": ["user:ann", "user:bob", "user:cy"],
        "required_approvals": 2,
    }
    run = started(api, workflow(api, quorum))

    # ann approves as herself: she may not fill bob's seat too.
    assert decide(api, run, "ann").status_code == 200
    refused = decide(api, run, "ann", on_behalf_of="bob")
    assert_error(refused, 409)
    # nor may bob approve himself once ann acted for him (checked on a fresh run).
    other = started(api, workflow(api, quorum))
    assert decide(api, other, "ann", on_behalf_of="bob").status_code == 200
    assert_error(decide(api, other, "bob"), 409)
    # a delegate may not act on behalf of the requester.
    requested = started(api, workflow(api, {"name": "Legal", "approvers": ["user:rita"]}))
    refused = decide(api, requested, "dave")
    assert_error(refused, 403)
    assert "who requested this run" in refused.json_body["error"]


def test_distinct_approvers_counts_both_names(api: Api) -> None:
    delegated(api, delegator="bob", delegate="ann")
    flow = workflow(api, {"name": "A", "approvers": ["user:bob"]}, "B", distinct_approvers=True)
    run = started(api, flow)
    assert decide(api, run, "ann").json_body["actions"][-1]["on_behalf_of"] == "bob"

    for actor in ("ann", "bob"):
        refused = decide(api, run, actor)
        assert_error(refused, 403)
        assert "distinct approvers" in refused.json_body["error"]
    assert decide(api, run, "cy").status_code == 200


def test_a_delegation_does_not_chain(api: Api) -> None:
    delegated(api, delegator="bob", delegate="carol")
    delegated(api, delegator="carol", delegate="dave")
    run = started(api, workflow(api, BOBS))

    assert_error(decide(api, run, "dave"), 403)
    assert decide(api, run, "carol").status_code == 200


def test_the_delegates_inbox_holds_the_delegated_runs_marked_for_whom(api: Api) -> None:
    run = started(api, workflow(api, BOBS))
    own = started(api, workflow(api, {"name": "Ops", "approvers": ["user:dave"]}))
    assert [item["id"] for item in api.get("/inbox?actor=dave").json_body["items"]] == [own]
    delegated(api)

    items = api.get("/inbox?actor=dave").json_body["items"]

    assert [(item["id"], item["on_behalf_of"]) for item in items] == [(run, "bob"), (own, None)]
    allowed = api.get(f"/runs/{run}/permissions?actor=dave").json_body["approve"]
    assert (allowed["allowed"], allowed["on_behalf_of"]) == (True, "bob")


def test_delegations_are_listed_by_delegator_delegate_and_time(api: Api) -> None:
    first = delegated(api, delegator="bob", delegate="dave")
    second = delegated(api, delegator="ann", delegate="group:deputies", starts=10, ends=20)
    third = delegated(api, delegator="Bob", delegate="eve")

    def ids(query: str) -> list[int]:
        body = api.get(f"/delegations{query}").json_body
        return [item["id"] for item in body["items"]]

    assert ids("") == [first["id"], second["id"], third["id"]]
    assert ids("?delegator=BOB") == [first["id"], third["id"]]
    assert ids("?delegate=group:deputies") == [second["id"]]
    assert ids("?delegate=dave") == ids("?delegate=user:Dave") == [first["id"]]
    assert ids(f"?active_at={at(15)}") == [second["id"]]
    page = api.get("/delegations?limit=2").json_body
    assert len(page["items"]) == 2 and page["next_cursor"]
    rest = api.get(f"/delegations?limit=2&cursor={page['next_cursor']}").json_body
    assert [item["id"] for item in rest["items"]] == [third["id"]]
    assert_error(api.get("/delegations?active_at=yesterday"), 400)
    assert_error(api.get("/delegations?active_at=0001-01-01T00:00:00%2B01:00"), 422)


@pytest.mark.parametrize(
    ("change", "status", "says"),
    [
        # Rules no schema states are 422; what the document's schema refuses is 400.
        ({"ends_at": at(-2), "starts_at": at(-3)}, 422, "has passed"),
        ({"ends_at": at(0), "starts_at": at(1)}, 422, "after 'starts_at'"),
        ({"starts_at": at(0), "ends_at": at(91)}, 422, "at most 90 days"),
        ({"delegate": "Bob"}, 422, "not to the delegator"),
        ({"delegate": "user:ＢＯＢ"}, 422, "not to the delegator"),
        ({"starts_at": "tomorrow"}, 400, "RFC 3339"),
        ({"starts_at": "2026-12-24T10:00:00"}, 400, "offset"),
        # What datetime.fromisoformat reads and RFC 3339 (the document's pattern) does not.
        ({"starts_at": "2026-12-24 10:00:00Z"}, 400, "RFC 3339"),
        ({"starts_at": "20261224T100000Z"}, 400, "RFC 3339"),
        ({"starts_at": at(0) + "\n"}, 400, "RFC 3339"),
        ({"starts_at": "2026-02-30T10:00:00Z"}, 400, "RFC 3339"),
        # Valid by the pattern and the format, and no instant this service keeps.
        ({"ends_at": "9999-12-31T23:59:59-01:00"}, 422, "years 1 to 9999 in UTC"),
        ({"starts_at": "0000-01-01T00:00:00.0000000000000-00:00"}, 422, "years 1 to 9999"),
        ({"delegate": "group:\u200bx"}, 400, "invisible"),
    ],
)
def test_a_delegation_that_cannot_be_one_is_refused_and_stores_nothing(
    api: Api, change: dict[str, Any], status: int, says: str
) -> None:
    body = {"delegator": "bob", "delegate": "dave", "starts_at": at(0), "ends_at": at(5), **change}

    refused = api.post("/delegations", body)

    assert_error(refused, status)
    assert says in refused.json_body["error"], refused.json_body
    assert api.get("/delegations").json_body["items"] == []


def test_a_delegation_to_a_workflow_that_does_not_exist_is_404(api: Api) -> None:
    body = {"delegator": "bob", "delegate": "dave", "starts_at": at(0), "ends_at": at(5)}
    assert_error(api.post("/delegations", {**body, "workflow_id": 999}), 404)
    assert_error(api.get("/delegations/999"), 404)
    assert_error(api.delete("/delegations/999?actor=bob"), 404)


def test_delegations_are_events_of_their_own(api: Api, storage: Any) -> None:
    delegation = delegated(api)
    api.delete(f"/delegations/{delegation['id']}?actor=bob")

    told = storage.list_events(f"delegations/{delegation['id']}", None, 10).items

    assert [event.type for event in told] == [
        "approval.delegation.created",
        "approval.delegation.revoked",
    ]


def test_a_revocation_with_an_idempotency_key_runs_once_and_its_retry_is_replayed(
    api: Api,
) -> None:
    delegation = delegated(api)
    path = f"/delegations/{delegation['id']}?actor=bob"
    keyed = {**JSON_HEADERS, "Idempotency-Key": "revoke-1"}

    first = api.request("DELETE", path, headers=keyed)
    retry = api.request("DELETE", path, headers=keyed)
    other_actor = api.request("DELETE", f"/delegations/{delegation['id']}?actor=eve", headers=keyed)
    malformed = api.request("DELETE", path, headers={**JSON_HEADERS, "Idempotency-Key": "\x01"})

    assert first.status_code == 200 and "Idempotent-Replayed" not in first.headers
    assert retry.status_code == 200 and retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json_body == first.json_body
    assert_error(other_actor, 422)
    assert_error(malformed, 400)


def test_a_verified_caller_reads_only_the_delegations_they_are_party_to(
    api: Api, secret_mode: None
) -> None:
    body = {"delegate": "group:deputies", "starts_at": at(-1), "ends_at": at(5)}
    made = as_(api, hs256(claims("bob")), "POST", "/delegations", body)
    assert made.status_code == 201, made.body
    path = f"/delegations/{made.json_body['id']}"
    deputy = hs256(claims("dave", groups=["deputies"]))
    stranger = hs256(claims("eve", groups=["sales"]))

    assert as_(api, hs256(claims("BOB")), "GET", path).status_code == 200
    assert as_(api, deputy, "GET", path).status_code == 200
    assert as_(api, admin_token(), "GET", path).status_code == 200
    assert_error(as_(api, stranger, "GET", path), 403)

    def listed(token: str, query: str) -> Any:
        return as_(api, token, "GET", f"/delegations{query}")

    assert [d["id"] for d in listed(deputy, "?delegate=group:Deputies").json_body["items"]] == [
        made.json_body["id"]
    ]
    assert len(listed(hs256(claims("bob")), "?delegator=bob").json_body["items"]) == 1
    assert len(listed(admin_token(), "").json_body["items"]) == 1
    assert listed(stranger, "?delegate=eve").json_body["items"] == []
    for query in ("", "?delegator=bob", "?delegate=group:deputies", "?delegate=dave"):
        assert_error(listed(stranger, query), 403)


@pytest.mark.parametrize("letter", ["é", "\U0001f600"])
def test_a_list_filtered_by_the_longest_names_turns_its_pages(api: Api, letter: str) -> None:
    """Its cursor binds the filters, which JSON escapes to up to 12 characters a
    letter: the cursor the service issues for any filter it accepts is one it
    takes back."""
    delegator, delegate = letter * 200, "group:" + letter * 194
    made = [delegated(api, delegator=delegator, delegate=delegate)["id"] for _ in range(3)]
    query = f"/delegations?limit=2&delegator={quote(delegator)}&delegate={quote(delegate)}"
    page = api.get(query).json_body
    rest = api.get(f"{query}&cursor={page['next_cursor']}")
    assert rest.status_code == 200, rest.body
    assert [item["id"] for item in page["items"] + rest.json_body["items"]] == made
    assert rest.json_body["next_cursor"] is None


# -- one spelling of a principal in every field ------------------------------------------


@pytest.mark.parametrize(
    "delegator, delegate",
    [("user:bob", "dave"), ("bob", "user:dave"), ("user:bob", "user:dave")],
    ids=repr,
)
def test_a_delegation_named_with_user_prefixes_lends_the_same_rights(
    api: Api, delegator: str, delegate: str
) -> None:
    run = started(api, workflow(api, BOBS, "Sign-off"))
    delegation = delegated(api, delegator=delegator, delegate=delegate)

    decided = decide(api, run, "dave")

    assert (delegation["delegator"], delegation["delegate"]) == ("bob", "user:dave")
    assert decided.status_code == 200, decided.body
    action = decided.json_body["actions"][-1]
    assert (action["actor"], action["on_behalf_of"]) == ("dave", "bob")
    mine = api.get("/delegations?delegator=user:bob").json_body["items"]
    assert [d["id"] for d in mine] == [delegation["id"]]


def test_a_user_named_with_the_prefix_is_that_user_in_every_field(api: Api) -> None:
    run = started(api, workflow(api, BOBS, "Sign-off"), requested_by="user:bob")
    assert api.get(f"/runs/{run}").json_body["requested_by"] == "bob"

    # bob asked for the run: written either way, he may not decide it.
    refused = decide(api, run, "user:bob")

    assert_error(refused, 403)
    assert "'bob' requested this run" in refused.json_body["error"]
    inbox = api.get("/inbox?actor=user:bob").json_body["items"]
    assert inbox == []


@pytest.mark.parametrize(
    "field, body",
    [
        ("actor", {"actor": "group:finance"}),
        ("groups[]", {"actor": "fay", "groups": ["user:fay"]}),
        ("on_behalf_of", {"actor": "fay", "on_behalf_of": "group:finance"}),
        ("actor", {"actor": "user:user:bob"}),
        ("actor", {"actor": "User:bob"}),
    ],
    ids=repr,
)
def test_a_field_of_one_kind_refuses_a_name_of_the_other_and_writes_nothing(
    api: Api, field: str, body: dict[str, Any]
) -> None:
    run = started(api, workflow(api, BOBS))

    refused = api.post(f"/runs/{run}/approve", body)

    assert_error(refused, 400)
    assert repr(field) in refused.json_body["error"]
    assert api.get(f"/runs/{run}").json_body["actions"] == []


def test_a_delegator_named_as_a_group_is_400(api: Api) -> None:
    body = {"delegator": "group:finance", "delegate": "dave"}
    refused = api.post("/delegations", {**body, "starts_at": at(), "ends_at": at(1)})

    assert_error(refused, 400)
    assert api.get("/delegations?delegate=dave").json_body["items"] == []
