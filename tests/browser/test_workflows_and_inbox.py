"""The workflows view (define, append a step, start a run) and the inbox (its
rows, its pages, a deadline when the API gives one)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.sync_api import Route, expect

from tests.support.api import Api
from tests.support.browser import PageUnderTest


def test_define_a_workflow_append_a_step_and_start_a_run(tab: PageUnderTest, api: Api) -> None:
    tab.act_as("maria")
    tab.page.get_by_role("link", name="Workflows").click()
    expect(tab.heading).to_have_text("Workflows")
    expect(tab.page.get_by_text("No workflow yet: define the first one below.")).to_be_visible()
    define = tab.page.get_by_role("form", name="Define a workflow")
    define.get_by_label("Name", exact=True).fill("Purchase order")
    define.get_by_label("Description (optional)").fill("Anything over 500 EUR")
    define.get_by_label("Step name").fill("Manager")
    define.get_by_role("button", name="Add another step").click()
    expect(define.get_by_label("Step name").nth(1)).to_be_focused()
    define.get_by_label("Step name").nth(1).fill("Finance")
    define.get_by_role("button", name="Define workflow").click()
    expect(tab.status).to_have_text("Workflow Purchase order defined with 2 steps.")
    card = tab.page.locator("li.card").filter(has_text="Purchase order")
    expect(card.locator("ol.steps > li .step-name")).to_have_text(["Manager", "Finance"])

    card.get_by_text("Append a step").click()
    card.get_by_label("Step name").fill("CFO")
    card.get_by_role("button", name="Append step").click()
    expect(tab.status).to_have_text("Step 3, CFO, appended to Purchase order.")
    card = tab.page.locator("li.card").filter(has_text="Purchase order")
    expect(card.locator("ol.steps > li .step-name")).to_have_text(["Manager", "Finance", "CFO"])

    card.get_by_text("Start a run").click()
    card.get_by_label("Title of the new run of Purchase order").fill("PO-9: a desk")
    card.get_by_role("button", name="Start run").click()
    expect(tab.heading).to_have_text("PO-9: a desk")
    expect(tab.status).to_contain_text("started: it waits at its first step.")
    assert tab.steps() == ["Manager Current step", "Finance To come", "CFO To come"]
    expect(tab.fact("Requested by")).to_have_text("maria")
    (workflow,) = api.get("/workflows").json_body["items"]
    assert workflow["description"] == "Anything over 500 EUR"


def test_a_workflow_without_steps_offers_no_run_to_start(tab: PageUnderTest, api: Api) -> None:
    api.create_workflow("Not ready")
    tab.act_as("maria")
    tab.visit("#/workflows")
    card = tab.page.locator("li.card").filter(has_text="Not ready")
    expect(card).to_contain_text("No step yet: append one before starting runs.")
    expect(card.get_by_text("Append a step")).to_be_visible()
    assert card.get_by_text("Start a run").count() == 0


def test_the_apis_refusal_is_shown_and_the_form_kept(tab: PageUnderTest, api: Api) -> None:
    api.create_workflow("Purchase order", steps=["Manager"])
    tab.act_as("maria")
    tab.visit("#/workflows")
    tab.expect_failed_request(409)
    define = tab.page.get_by_role("form", name="Define a workflow")
    define.get_by_label("Name", exact=True).fill("Purchase order")
    define.get_by_label("Step name").fill("Manager")
    define.get_by_role("button", name="Define workflow").click()
    expect(tab.alert).to_contain_text("Purchase order")
    expect(tab.alert).to_be_focused()
    expect(define.get_by_label("Name", exact=True)).to_have_value("Purchase order")


def test_the_inbox_shows_each_runs_step_and_pages_through_many(
    tab: PageUnderTest, api: Api
) -> None:
    workflow = api.create_workflow("Purchase order", steps=["Manager", "Finance", "CFO"])
    runs = [api.start_run(workflow["id"], f"PO-{number}") for number in range(1, 23)]
    api.approve(runs[0]["id"], "maria")
    tab.act_as("finn")
    # 22 runs, 20 a page: the first page, then the rest.
    rows = tab.page.locator("ul.cards > li")
    expect(rows).to_have_count(20)
    expect(tab.page.get_by_text("Page 1", exact=True)).to_be_visible()
    tab.page.get_by_role("button", name="Next page").click()
    expect(tab.page.get_by_text("Page 2", exact=True)).to_be_visible()
    expect(tab.heading).to_be_focused()
    expect(rows).to_have_count(2)
    assert tab.page.get_by_role("button", name="Next page").count() == 0
    first = tab.page.locator("li.card").filter(has_text="PO-1")
    first = first.filter(has=tab.page.get_by_role("link", name="PO-1", exact=True))
    expect(first.locator("dd")).to_contain_text(
        ["Purchase order", "nobody named", "2 of 3: Finance"]
    )
    tab.page.get_by_role("button", name="Previous page").click()
    expect(rows).to_have_count(20)


def test_a_deadline_the_api_gives_is_shown_and_an_overdue_one_marked(
    tab: PageUnderTest, api: Api
) -> None:
    """Deadlines come with the events API: runs then carry current_step_due_at and
    steps deadline_seconds. Added here to what this API answers, as those will."""
    workflow, late = api.started_run(steps=["Manager"], title="Late")
    on_time = api.start_run(workflow["id"], "On time")
    due = {
        late["id"]: (datetime.now(UTC) - timedelta(hours=2)).isoformat(),
        on_time["id"]: (datetime.now(UTC) + timedelta(days=2)).isoformat(),
    }

    def with_deadlines(route: Route) -> None:
        answer = route.fetch()
        body = answer.json()
        runs = body.get("items", [body]) if "/workflows/" not in route.request.url else []
        for run in runs:
            run["current_step_due_at"] = due[run["id"]]
        steps = [run["current_step"] for run in runs] or body.get("steps", [])
        for step in steps:
            step.update(deadline_seconds=2 * 86400, on_deadline="reject")
        route.fulfill(response=answer, body=json.dumps(body))

    tab.page.route(re.compile(r"/(inbox\?.*|runs(\?.*|/\d+)|workflows/\d+)$"), with_deadlines)
    tab.act_as("maria")
    late_row = tab.page.locator("li.card").filter(has_text="Late")
    on_time_row = tab.page.locator("li.card").filter(has_text="On time")
    expect(late_row).to_contain_text("Overdue")
    expect(on_time_row).not_to_contain_text("Overdue")
    late_deadline: Any = late_row.locator("time").last
    expect(late_deadline).to_have_attribute("datetime", due[late["id"]])

    late_row.get_by_role("link", name="Late").click()
    expect(tab.heading).to_have_text("Late")
    expect(tab.fact("Deadline")).to_contain_text("Overdue")
    expect(tab.page.locator("ol.timeline .step-rules")).to_contain_text(
        "Deadline: 2 days after it starts, then the run is rejected."
    )


def test_each_field_takes_as_many_characters_as_the_api_does(tab: PageUnderTest, api: Api) -> None:
    """The page reads its limits from the OpenAPI document, the API's own."""
    from chalicelib.api import validation

    _, run = api.started_run(steps=["Manager"])
    at_run = f"#/runs/{run['id']}"
    group_name = len("group:") + validation.MAX_ACTOR
    expected = {
        ("#/me", 'input[name="actor"]'): len("user:") + validation.MAX_ACTOR,
        (
            "#/workflows",
            '[aria-labelledby="define-heading"] input[name="name"]',
        ): validation.MAX_NAME,
        ("#/workflows", 'textarea[name="description"]'): validation.MAX_TEXT,
        ("#/workflows", '.step-list input[name="name"]'): validation.MAX_NAME,
        ("#/workflows", 'input[name="title"]'): validation.MAX_TITLE,
        ("#/delegations", 'input[name="delegate"]'): group_name,
        ("#/delegations", 'input[name="reason"]'): validation.MAX_TEXT,
        (at_run, '[aria-labelledby="decide-heading"] textarea[name="comment"]'): (
            validation.MAX_TEXT
        ),
        (at_run, '[aria-labelledby="return-heading"] textarea[name="comment"]'): (
            validation.MAX_TEXT
        ),
    }
    tab.act_as("maria")
    for (route, selector), most in expected.items():
        tab.visit(route)
        expect(tab.page.locator(f"#view {selector}").first).to_have_attribute(
            "maxlength", str(most)
        )
