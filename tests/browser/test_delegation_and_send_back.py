"""Delegation and send back for changes through the page: lending one's rights
and revoking them, a delegate deciding on someone's behalf from the inbox, a
run sent back with what should change and resubmitted into a new round, and
"Send back for changes" offered only to whom the API allows it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import tokens
from tests.support.api import Api
from tests.support.browser import PageUnderTest

STAMP = "%Y-%m-%dT%H:%M:%SZ"


def created(api: Api, path: str, body: dict[str, Any]) -> Any:
    response = api.post(path, body)
    assert response.status_code == 201, response.body
    return response.json_body


def delegation(api: Api, delegator: str, delegate: str, days: int = 7) -> Any:
    """A delegation from `delegator` to `delegate`, active from now for `days`."""
    now = datetime.now(UTC)
    return created(
        api,
        "/delegations",
        {
            "delegator": delegator,
            "delegate": delegate,
            "reason": "Holiday",
            "starts_at": (now - timedelta(minutes=1)).strftime(STAMP),
            "ends_at": (now + timedelta(days=days)).strftime(STAMP),
        },
    )


def run_of(api: Api, workflow: dict[str, Any], **run: Any) -> Any:
    workflow_id = created(api, "/workflows", {"name": "Purchase order", **workflow})["id"]
    return created(api, "/runs", {"workflow_id": workflow_id, "title": "PO-7: a desk", **run})


def card(tab: PageUnderTest, section: str, title: str) -> Any:
    """The delegation card titled `title` ("To dave") in the section `section`."""
    region = tab.page.get_by_role("region", name=section)
    return region.locator("li.card").filter(has=tab.page.get_by_role("heading", name=title))


def test_a_delegation_is_made_listed_refused_when_wrong_and_revoked(
    tab: PageUnderTest, api: Api
) -> None:
    created(api, "/workflows", {"name": "Travel", "steps": ["Manager"]})
    tab.act_as("bob")
    tab.page.get_by_role("link", name="Delegations").click()
    expect(tab.heading).to_have_text("Delegations")
    expect(tab.page.get_by_text("You have lent your rights to nobody.")).to_be_visible()

    form = tab.page.get_by_role("form", name="Lend your rights")
    tab.expect_failed_request(422)
    form.get_by_label("To whom").fill("Bob")  # bob, as the API compares names
    form.get_by_role("button", name="Lend my rights").click()
    expect(form.locator(".form-error")).to_have_text(
        "The delegation was not made: A delegation lends rights to someone else:"
        " not to the delegator."
    )
    assert api.get("/delegations").json_body["items"] == []

    form.get_by_label("To whom").fill("dave")
    form.get_by_label("For which workflow").select_option(label="Travel")
    form.get_by_label("Reason (optional)").fill("On holiday")
    form.get_by_role("button", name="Lend my rights").click()
    expect(tab.status).to_contain_text("You lent your rights to dave, from ")
    lent = card(tab, "Lent by you", "To dave Active")
    expect(lent).to_be_visible()
    expect(lent.locator("dl.facts")).to_contain_text("Travel")
    expect(lent.locator("dl.facts")).to_contain_text("On holiday")
    (stored,) = api.get("/delegations?delegator=bob").json_body["items"]
    assert stored["delegate"] == "user:dave" and stored["workflow_id"] is not None
    assert stored["reason"] == "On holiday"

    tab.act_as("dave")
    tab.visit("#/delegations")
    received = card(tab, "Lent to you", "From bob Active")
    expect(received).to_be_visible()
    assert received.get_by_role("button").count() == 0  # only the delegator revokes

    tab.act_as("bob")
    tab.visit("#/delegations")
    card(tab, "Lent by you", "To dave Active").get_by_role(
        "button", name="Revoke the delegation to dave"
    ).click()
    expect(tab.status).to_have_text("You revoked the delegation to dave: it ends now.")
    revoked = card(tab, "Lent by you", "To dave Revoked")
    expect(revoked).to_contain_text("by bob")
    assert revoked.get_by_role("button").count() == 0
    assert api.get(f"/delegations/{stored['id']}").json_body["revoked_by"] == "bob"


def test_a_delegate_sees_the_run_in_the_inbox_and_approves_on_behalf_of_the_delegator(
    tab: PageUnderTest, api: Api
) -> None:
    run = run_of(
        api, {"steps": [{"name": "Finance", "approvers": ["user:bob"]}, "CFO"]}, requested_by="rita"
    )
    delegation(api, "bob", "dave")
    tab.act_as("dave")
    item = tab.page.locator("li.card").filter(has_text=run["title"])
    expect(item.locator(".on-behalf")).to_have_text(
        "On behalf of bob, who lent you their rights to decide."
    )
    item.get_by_role("link", name=run["title"]).click()
    expect(tab.heading).to_have_text(run["title"])
    expect(tab.page.get_by_text("You decide on behalf of bob")).to_be_visible()
    tab.decide("Approve", "For bob, within budget")
    expect(tab.status).to_have_text(
        "You approved step 1, Finance, on behalf of bob. The run waits at step 2 of 2: CFO now."
    )
    assert "dave on behalf of bob approved at Finance" in tab.history()[0]
    expect(tab.page.locator(".step-decisions")).to_contain_text("Approved by dave on behalf of bob")

    (action,) = api.get_run(run["id"])["actions"]
    assert (action["actor"], action["on_behalf_of"]) == ("dave", "bob")
    (sent,) = tab.decisions_sent()
    assert sent["body"]["on_behalf_of"] == "bob"
    assert sent["body"]["expected_round"] == 1
    assert sent["body"]["expected_step_id"] == run["current_step_id"]
    assert any("on_behalf_of=bob" in asked for asked in tab.permissions_asked)


def test_a_run_sent_back_with_a_comment_is_resubmitted_with_new_input_into_round_two(
    tab: PageUnderTest, api: Api
) -> None:
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "number", "title": "Amount (EUR)"}, "quote": {}},
        "required": ["amount"],
    }
    run = run_of(
        api,
        {"steps": ["Manager", "Finance"], "input_schema": schema},
        requested_by="rita",
        input={"amount": 900, "quote": None},
    )
    tab.act_as("maria")
    tab.open_run(run)
    form = tab.page.get_by_role("form", name="Send back for changes")
    form.get_by_role("button", name="Send back for changes").click()
    expect(tab.alert).to_have_text(
        "Say what should change: the requester reads it before resubmitting."
    )
    expect(form.get_by_label("What should change")).to_be_focused()
    assert tab.sent == []
    form.get_by_label("What should change").fill("Attach the quote")
    form.get_by_role("button", name="Send back for changes").click()
    expect(tab.status).to_have_text(
        "You sent this run back to rita for changes at step 1 of 2: Manager."
    )
    expect(tab.page.locator("p.lead")).to_have_text(
        "Status: Sent back for changes It waits for rita, who requested it, to change and"
        " resubmit it."
    )
    expect(tab.fact("Round")).to_have_text("1")
    assert tab.offered() == []
    assert tab.page.get_by_role("button", name="Send back for changes").count() == 0
    assert tab.steps() == ["Manager Sent back here", "Finance To come"]
    assert "maria sent it back for changes at Manager Attach the quote" in tab.history()[-1]
    (sent,) = tab.sent
    assert sent["path"].endswith("/return")
    assert sent["body"]["expected_round"] == 1 and sent["body"]["comment"] == "Attach the quote"

    tab.act_as("rita")
    tab.open_run(run)
    resubmit = tab.page.get_by_role("form", name="Change and resubmit")
    expect(resubmit.locator("blockquote.comment")).to_have_text("Attach the quote")
    assert tab.offered() == ["cancel"]
    amount = resubmit.get_by_label("Amount (EUR)")
    expect(amount).to_have_value("900")
    amount.fill("950")
    resubmit.get_by_label("quote").fill('"Q-7"')
    resubmit.get_by_label("What you changed (optional)").fill("Quote attached")
    resubmit.get_by_role("button", name="Resubmit").click()
    expect(tab.status).to_have_text(
        "You resubmitted this run with its new input: round 2 starts, at step 1 of 2: Manager."
    )
    expect(tab.page.locator("p.lead")).to_contain_text("Status: In progress")
    expect(tab.fact("Round")).to_have_text("2")
    assert tab.steps() == ["Manager Current step", "Finance To come"]
    rounds = tab.page.locator("h3.history-round").all_inner_texts()
    assert rounds == ["Round 1", "Round 2"]
    assert "rita resubmitted the run with a new input Quote attached" in tab.history()[-1]

    stored = api.get_run(run["id"])
    assert stored["round"] == 2 and stored["input"] == {"amount": 950, "quote": "Q-7"}
    assert [(a["action"], a["round"]) for a in stored["actions"]] == [
        ("return", 1),
        ("resubmit", 2),
    ]

    tab.act_as("maria")
    tab.open_run(run)
    tab.decide("Approve")
    expect(tab.status).to_contain_text("You approved step 1, Manager.")
    assert tab.decisions_sent()[-1]["body"]["expected_round"] == 2


def test_send_back_is_offered_only_to_whom_the_api_allows_it(tab: PageUnderTest, api: Api) -> None:
    run = run_of(
        api, {"steps": [{"name": "Finance", "approvers": ["user:bob"]}]}, requested_by="rita"
    )
    tab.act_as("maria")
    tab.open_run(run)
    expect(tab.page.locator("ul.why-not > li")).to_have_count(2)
    assert tab.page.get_by_role("button", name="Send back for changes").count() == 0
    assert tab.not_offered() == [
        "Approve, Reject and Send back for changes: Only bob can decide this step.",
        "Cancel: Only rita, who requested this run, can cancel it.",
    ]

    tab.act_as("rita")
    tab.open_run(run)
    assert tab.page.get_by_role("button", name="Send back for changes").count() == 0
    assert tab.not_offered()[0] == (
        "Approve, Reject and Send back for changes: Only bob can decide this step."
    )

    tab.act_as("bob")
    tab.open_run(run)
    expect(tab.page.get_by_role("button", name="Send back for changes")).to_be_visible()


def test_the_keyboard_alone_lends_rights_revokes_them_and_sends_a_run_back(
    tab: PageUnderTest, api: Api
) -> None:
    run = run_of(api, {"steps": ["Manager"]}, requested_by="rita")
    tab.act_as("bob")
    tab.tab_until(tab.page.get_by_role("link", name="Delegations"), most=60)
    tab.page.keyboard.press("Enter")
    expect(tab.heading).to_have_text("Delegations")
    tab.tab_until(tab.page.get_by_label("To whom"), most=60)
    tab.page.keyboard.type("dave")
    tab.page.keyboard.press("Enter")  # submits the form
    expect(tab.status).to_contain_text("You lent your rights to dave")
    expect(tab.status).to_be_focused()
    tab.tab_until(tab.page.get_by_role("button", name="Revoke the delegation to dave"), most=60)
    tab.page.keyboard.press("Enter")
    expect(tab.status).to_have_text("You revoked the delegation to dave: it ends now.")

    tab.open_run(run)
    tab.tab_until(tab.page.get_by_label("What should change"), most=60)
    tab.page.keyboard.type("Name the supplier")
    tab.page.keyboard.press("Tab")
    expect(tab.page.get_by_role("button", name="Send back for changes")).to_be_focused()
    tab.page.keyboard.press("Enter")
    expect(tab.status).to_have_text(
        "You sent this run back to rita for changes at step 1 of 1: Manager."
    )
    expect(tab.status).to_be_focused()


@pytest.mark.usefixtures("secret_mode")
def test_in_jwt_mode_the_token_says_who_lends_and_who_revokes(tab: PageUnderTest, api: Api) -> None:
    tab.visit(f"#token={tokens.hs256(tokens.claims('bob', []))}")
    expect(tab.status).to_contain_text("Using the token of bob")
    tab.visit("#/delegations")
    form = tab.page.get_by_role("form", name="Lend your rights")
    form.get_by_label("To whom").fill("group:deputies")
    form.get_by_role("button", name="Lend my rights").click()
    expect(tab.status).to_contain_text("You lent your rights to the deputies group, from ")
    created_one = next(request for request in tab.sent if request["path"] == "/delegations")
    assert "delegator" not in created_one["body"]  # the token says who lends
    tab.page.get_by_role("button", name="Revoke the delegation to the deputies group").click()
    expect(tab.status).to_have_text(
        "You revoked the delegation to the deputies group: it ends now."
    )
    bearer = {"Authorization": f"Bearer {tokens.hs256(tokens.claims('bob', []))}"}
    listed = api.request("GET", "/delegations?delegator=bob", headers=bearer).json_body
    (stored,) = listed["items"]
    assert (stored["delegate"], stored["revoked_by"]) == ("group:deputies", "bob")
