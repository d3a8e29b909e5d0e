"""Deciding through the page: approve and reject until a run ends, the quorum
as it fills, a stale page, a double click, withdrawing a request."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.api import Api
from tests.support.browser import WIDTHS, PageUnderTest


@pytest.mark.parametrize("width", WIDTHS)
def test_approve_and_reject_through_the_page_until_each_run_ends(
    tab: PageUnderTest, api: Api
) -> None:
    workflow, laptops = api.started_run(steps=["Manager", "Finance"], title="PO-1042: laptops")
    chairs = api.start_run(workflow["id"], "PO-1043: chairs")
    tab.act_as("maria")
    expect(tab.page.get_by_role("link", name="PO-1042: laptops")).to_be_visible()
    expect(tab.page.get_by_role("link", name="PO-1043: chairs")).to_be_visible()

    tab.page.get_by_role("link", name="PO-1042: laptops").click()
    expect(tab.heading).to_have_text("PO-1042: laptops")
    assert tab.steps() == ["Manager Current step", "Finance To come"]
    tab.decide("Approve", "Within budget")
    expect(tab.status).to_have_text(
        "You approved step 1, Manager. The run waits at step 2 of 2: Finance now."
    )
    expect(tab.status).to_be_focused()
    assert tab.steps() == ["Manager Done", "Finance Current step"]
    tab.act_as("finn", "finance")
    tab.open_run(laptops)
    tab.decide("Approve")
    expect(tab.status).to_have_text("You approved step 2, Finance. The run is completed.")
    expect(tab.page.locator("p.lead")).to_have_text("Status: Completed")
    assert tab.steps() == ["Manager Done", "Finance Done"]
    assert tab.page.get_by_role("button", name="Approve").count() == 0
    history = tab.history()
    assert len(history) == 2
    assert "maria approved at Manager" in history[0] and "Within budget" in history[0]
    assert "finn approved at Finance" in history[1]

    tab.act_as("maria")
    tab.open_run(chairs)
    tab.decide("Approve")
    expect(tab.status).to_contain_text("waits at step 2 of 2: Finance")
    tab.act_as("finn", "finance")
    tab.open_run(chairs)
    tab.decide("Reject", "Not this quarter")
    expect(tab.status).to_have_text("You rejected step 2, Finance. The run is rejected.")
    expect(tab.page.locator("p.lead")).to_have_text("Status: Rejected")
    assert tab.steps() == ["Manager Done", "Finance Rejected here"]
    assert "Not this quarter" in tab.history()[-1]

    assert api.get_run(laptops["id"])["status"] == "completed"
    assert [a["action"] for a in api.get_run(chairs["id"])["actions"]] == ["approve", "reject"]
    # Each decision named the step it was made on, under a key of its own.
    sent = tab.decisions_sent()
    assert len(sent) == 4
    steps = [step["id"] for step in workflow["steps"]]
    assert [request["body"]["expected_step_id"] for request in sent] == steps + steps
    keys = [request["headers"]["idempotency-key"] for request in sent]
    assert len(set(keys)) == 4


def test_the_quorum_is_shown_and_fills_up_with_each_approval(tab: PageUnderTest, api: Api) -> None:
    created = api.post(
        "/workflows",
        {"name": "Payments", "steps": [{"name": "Finance", "required_approvals": 2}, "CFO"]},
    )
    assert created.status_code == 201, created.body
    workflow = created.json_body
    run = api.start_run(workflow["id"], "Pay the supplier")
    tab.act_as("maria")
    expect(tab.fact("Approvals")).to_have_text("0 of 2")
    tab.open_run(run)
    expect(tab.fact("Approvals")).to_have_text("0 of 2")
    tab.decide("Approve")
    expect(tab.status).to_have_text("You approved step 1, Finance. Approvals so far: 1 of 2.")
    expect(tab.fact("Approvals")).to_have_text("1 of 2")
    assert tab.steps()[0] == "Finance Current step"

    tab.act_as("finn")
    tab.open_run(run)
    expect(tab.page.get_by_text("1 approval of the 2 this step needs (maria).")).to_be_visible()
    tab.decide("Approve")
    expect(tab.status).to_contain_text("The run waits at step 2 of 2: CFO now.")
    assert tab.steps() == ["Finance Done", "CFO Current step"]
    decided_by = tab.page.locator("ol.timeline > li").first.locator(".step-decisions li")
    expect(decided_by).to_have_count(2)
    expect(decided_by.nth(0)).to_contain_text("Approved by maria")
    expect(decided_by.nth(1)).to_contain_text("Approved by finn")


def test_a_stale_page_shows_the_conflict_and_the_run_as_it_is_now(
    tab: PageUnderTest, api: Api
) -> None:
    workflow, run = api.started_run(steps=["Manager", "Finance"])
    manager, finance = (step["id"] for step in workflow["steps"])
    tab.act_as("maria")
    tab.open_run(run)
    api.approve(run["id"], "someone-else")  # meanwhile, in another tab
    tab.expect_failed_request(409)
    tab.decide("Approve", "Looks fine")
    expect(tab.alert).to_have_text(
        "Your approval was not recorded: the run moved on meanwhile, to step 2 of 2: Finance."
        " Your comment is kept: decide again if you still want to."
    )
    expect(tab.alert).to_be_focused()
    # Reloaded: the run as it is, the comment still there to send again.
    expect(tab.page.get_by_role("heading", name="Decide step 2 of 2: Finance")).to_be_visible()
    assert tab.steps() == ["Manager Done", "Finance Current step"]
    assert "someone-else approved at Manager" in tab.history()[0]
    expect(tab.page.get_by_label("Comment")).to_have_value("Looks fine")
    assert len(api.get_run(run["id"])["actions"]) == 1
    (sent,) = tab.decisions_sent()
    assert sent["body"]["expected_step_id"] == manager != finance


def test_a_double_click_decides_once(tab: PageUnderTest, api: Api) -> None:
    _, run = api.started_run(steps=["Manager", "Finance", "Legal"])
    tab.act_as("maria")
    tab.open_run(run)
    tab.page.get_by_role("button", name="Approve").dblclick()
    expect(tab.status).to_contain_text("You approved step 1, Manager.")
    assert len(api.get_run(run["id"])["actions"]) == 1
    assert len(tab.decisions_sent()) == 1


def test_rejecting_needs_a_comment_where_the_workflow_says_so(tab: PageUnderTest, api: Api) -> None:
    created = api.post(
        "/workflows", {"name": "Strict", "steps": ["Manager"], "reject_requires_comment": True}
    )
    assert created.status_code == 201, created.body
    workflow: dict[str, Any] = created.json_body
    run = api.start_run(workflow["id"], "Needs a reason")
    tab.act_as("maria")
    tab.open_run(run)
    expect(tab.page.get_by_text("Required to reject; optional to approve.")).to_be_visible()
    tab.decide("Reject")
    expect(tab.alert).to_have_text("Say why you reject: this workflow needs a comment to reject.")
    expect(tab.page.get_by_label("Comment")).to_be_focused()
    assert tab.decisions_sent() == []
    tab.decide("Reject", "Missing the quote")
    expect(tab.status).to_have_text("You rejected step 1, Manager. The run is rejected.")


def test_the_requester_can_withdraw_a_run_and_nobody_else_is_offered_to(
    tab: PageUnderTest, api: Api
) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    started = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "Mine", "requested_by": "sam"}
    )
    assert started.status_code == 201, started.body
    run = started.json_body
    tab.act_as("maria")
    tab.open_run(run)
    assert tab.page.get_by_role("button", name="Cancel this run").count() == 0
    tab.act_as("sam")
    tab.open_run(run)
    tab.page.get_by_label("Reason (optional)").fill("Bought elsewhere")
    tab.page.get_by_role("button", name="Cancel this run").click()
    expect(tab.status).to_have_text("You cancelled this run.")
    expect(tab.page.locator("p.lead")).to_have_text("Status: Cancelled")
    assert api.get_run(run["id"])["status"] == "cancelled"
