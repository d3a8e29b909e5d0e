"""Every view passes axe-core, has one h1 and the landmarks, and fits a phone's
360 px as well as 1280 px; the keyboard alone can decide."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.support import tokens
from tests.support.api import Api
from tests.support.browser import WIDTHS, PageUnderTest

STAMP = "%Y-%m-%dT%H:%M:%SZ"


def check_view(tab: PageUnderTest, heading: str) -> None:
    expect(tab.heading).to_have_text(heading)
    tab.assert_one_h1_and_the_landmarks()
    tab.assert_fits()
    tab.assert_accessible()


@pytest.mark.parametrize("width", WIDTHS)
def test_every_view_is_accessible_and_fits_the_width(tab: PageUnderTest, api: Api) -> None:
    tab.visit()
    check_view(tab, "Who are you?")
    tab.act_as("maria", "finance")
    check_view(tab, "Waiting for you")  # with nothing

    workflow = api.create_workflow(
        "Purchase order with a name long enough to wrap on a phone",
        steps=["Manager", "Finance", "Chief financial officer"],
    )
    run = api.start_run(workflow["id"], "PO-1042: twelve laptops for the new team in Lisbon")
    ended = api.start_run(workflow["id"], "PO-1043: chairs")
    api.approve(run["id"], "sam", "Within budget, and the quote is attached to the request")
    for step in workflow["steps"]:
        api.approve(ended["id"], f"approver of {step['name']}")
    tab.visit("#/inbox")
    check_view(tab, "Waiting for you")

    tab.open_run(run)
    check_view(tab, run["title"])
    tab.decide("Approve", "Fine by me")
    expect(tab.status).to_contain_text("You approved step 2, Finance.")
    check_view(tab, run["title"])

    api.approve(run["id"], "someone-else")  # the page is stale now
    tab.expect_failed_request(409)
    tab.decide("Reject", "Too late")
    expect(tab.alert).to_have_text(
        "Your rejection was not recorded: the run was completed meanwhile."
    )
    check_view(tab, run["title"])

    tab.open_run(ended)
    check_view(tab, ended["title"])

    tab.visit("#/workflows")
    expect(tab.page.locator("li.card")).to_have_count(1)
    tab.page.get_by_text("Append a step").click()
    tab.page.get_by_text("Start a run").click()
    tab.page.get_by_role("button", name="Add another step").click()
    tab.page.get_by_text("Edit as a new version, or retire").click()
    tab.page.get_by_role("button", name="Add a step").click()
    check_view(tab, "Workflows")
    tab.page.get_by_role("button", name="Edit as JSON text (advanced)").click()
    check_view(tab, "Workflows")

    tab.visit(f"#/workflows/{workflow['id']}")
    check_view(tab, f"How long {workflow['name']} takes")


@pytest.mark.parametrize("width", WIDTHS)
def test_delegations_a_run_sent_back_and_its_second_round_are_accessible_and_fit(
    tab: PageUnderTest, api: Api
) -> None:
    schema = {"type": "object", "properties": {"amount": {"type": "number"}}}
    workflow = api.post(
        "/workflows",
        {
            "name": "Purchase order",
            "steps": [{"name": "Finance", "approvers": ["user:bob"]}, "CFO"],
            "input_schema": schema,
        },
    ).json_body
    run = api.post(
        "/runs",
        {"workflow_id": workflow["id"], "title": "PO-9: a desk", "requested_by": "rita"},
    ).json_body
    now = datetime.now(UTC)
    window = {
        "starts_at": (now - timedelta(minutes=1)).strftime(STAMP),
        "ends_at": (now + timedelta(days=7)).strftime(STAMP),
    }
    later = {
        "starts_at": (now + timedelta(days=1)).strftime(STAMP),
        "ends_at": (now + timedelta(days=8)).strftime(STAMP),
    }
    lent = {"delegator": "bob", "reason": "Holiday, the whole week in the mountains", **window}
    assert api.post("/delegations", {**lent, "delegate": "dave"}).status_code == 201
    assert (
        api.post("/delegations", {**lent, "delegate": "group:finance", **later}).status_code == 201
    )
    assert (
        api.post("/delegations", {**lent, "delegator": "ann", "delegate": "bob"}).status_code == 201
    )

    tab.act_as("bob")
    tab.visit("#/delegations")
    expect(tab.page.locator("li.card")).to_have_count(3)
    check_view(tab, "Delegations")

    tab.act_as("dave")
    expect(tab.page.locator(".on-behalf")).to_have_count(1)
    check_view(tab, "Waiting for you")
    tab.page.get_by_role("link", name="PO-9: a desk").click()
    expect(tab.page.get_by_role("form", name="Send back for changes")).to_be_visible()
    check_view(tab, "PO-9: a desk")
    tab.page.get_by_label("What should change").fill("Say how much it costs")
    tab.page.get_by_role("button", name="Send back for changes").click()
    expect(tab.status).to_contain_text("You sent this run back to rita for changes")
    check_view(tab, "PO-9: a desk")

    tab.act_as("rita")
    tab.open_run(run)
    expect(tab.page.get_by_role("form", name="Change and resubmit")).to_be_visible()
    check_view(tab, "PO-9: a desk")
    tab.page.get_by_label("amount").fill("450")
    tab.page.get_by_role("button", name="Resubmit").click()
    expect(tab.status).to_contain_text("round 2 starts")
    check_view(tab, "PO-9: a desk")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.usefixtures("secret_mode")
def test_the_token_view_is_accessible_and_fits_the_width(tab: PageUnderTest) -> None:
    tab.visit()
    check_view(tab, "Who are you?")
    tab.visit(f"#token={tokens.hs256(tokens.claims('maria', ['finance', 'managers']))}")
    expect(tab.status).to_have_text("Using the token of maria (finance, managers).")
    tab.visit("#/me")
    check_view(tab, "Who are you?")


def test_the_keyboard_alone_can_say_who_you_are_open_a_run_and_decide(
    tab: PageUnderTest, api: Api
) -> None:
    api.started_run(steps=["Manager", "Finance"], title="PO-5: a monitor")
    tab.visit()
    expect(tab.heading).to_have_text("Who are you?")
    tab.page.keyboard.press("Tab")
    expect(tab.page.get_by_role("link", name="Skip to the content")).to_be_focused()
    tab.page.keyboard.press("Enter")
    expect(tab.page.get_by_role("main")).to_be_focused()
    tab.tab_until(tab.page.get_by_label("Your name"))
    tab.page.keyboard.type("maria")
    tab.page.keyboard.press("Enter")  # submits the form
    expect(tab.status).to_have_text("Acting as maria.")

    tab.tab_until(tab.page.get_by_role("link", name="PO-5: a monitor"))
    tab.page.keyboard.press("Enter")
    expect(tab.heading).to_have_text("PO-5: a monitor")
    expect(tab.heading).to_be_focused()
    tab.tab_until(tab.page.get_by_label("Comment"))
    tab.page.keyboard.type("Fine")
    tab.page.keyboard.press("Tab")
    expect(tab.page.get_by_role("button", name="Approve")).to_be_focused()
    tab.page.keyboard.press("Enter")
    expect(tab.status).to_have_text(
        "You approved step 1, Manager. The run waits at step 2 of 2: Finance now."
    )
    expect(tab.status).to_be_focused()
    tab.tab_until(tab.page.get_by_role("button", name="Reject"))
    tab.page.keyboard.press("Space")
    expect(tab.status).to_have_text("You rejected step 2, Finance. The run is rejected.")
