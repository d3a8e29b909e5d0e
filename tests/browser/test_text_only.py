"""What people type reaches the page as text, never as markup: a title, a
workflow's name, a comment or an actor that look like HTML are shown as
written, and no script in them runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from playwright.sync_api import expect

from tests.support.api import Api
from tests.support.browser import PageUnderTest

TITLE = "<img src=x onerror=window.pwned=1>"
WORKFLOW = "<b>Bold</b><script>window.pwned=2</script>"
COMMENT = "<img src=y onerror=window.pwned=3>"
ACTOR = "<svg onload=window.pwned=4>"


def test_markup_in_data_is_shown_literally_and_never_runs(tab: PageUnderTest, api: Api) -> None:
    workflow = api.create_workflow(WORKFLOW, steps=["<i>Manager</i>", "Finance"])
    run = api.start_run(workflow["id"], TITLE)
    api.approve(run["id"], ACTOR, COMMENT)
    tab.act_as(ACTOR)

    expect(tab.page.get_by_role("link", name=TITLE)).to_be_visible()
    expect(tab.fact("Workflow")).to_have_text(WORKFLOW)
    tab.page.get_by_role("link", name=TITLE).click()
    expect(tab.heading).to_have_text(TITLE)
    expect(tab.page.locator("blockquote.comment")).to_have_text(COMMENT)
    assert tab.steps()[0] == "<i>Manager</i> Done"
    assert tab.history()[0].endswith(f"{ACTOR} approved at <i>Manager</i> {COMMENT}")
    assert tab.page.title() == f"{TITLE} · Approvals"

    tab.visit("#/workflows")
    expect(tab.page.get_by_role("heading", name=WORKFLOW)).to_be_visible()

    # Nothing the data held became an element, and nothing in it ran.
    assert tab.page.locator("#view img, #view script, #view svg, #view b, #view i").count() == 0
    assert tab.page.evaluate("() => typeof window.pwned") == "undefined"


def test_markup_in_a_delegation_and_in_a_return_is_shown_literally_and_never_runs(
    tab: PageUnderTest, api: Api
) -> None:
    workflow = api.create_workflow(WORKFLOW, steps=["Manager"])
    run = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": TITLE, "requested_by": ACTOR}
    ).json_body
    returned = api.post(f"/runs/{run['id']}/return", {"actor": "maria", "comment": COMMENT})
    assert returned.status_code == 200, returned.body
    now = datetime.now(UTC)
    lent = {
        "delegator": ACTOR,
        "delegate": "dave",
        "workflow_id": workflow["id"],
        "reason": COMMENT,
        "starts_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ends_at": (now + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert api.post("/delegations", lent).status_code == 201
    tab.act_as(ACTOR)

    tab.visit("#/delegations")
    delegation = tab.page.locator("li.card")
    expect(delegation.locator("dl.facts")).to_contain_text(COMMENT)
    expect(delegation.locator("dl.facts")).to_contain_text(WORKFLOW)
    tab.open_run(run)
    expect(tab.page.get_by_role("form", name="Change and resubmit")).to_contain_text(COMMENT)
    assert tab.history()[0].endswith(f"maria sent it back for changes at Manager {COMMENT}")

    assert tab.page.locator("#view img, #view script, #view svg, #view b, #view i").count() == 0
    assert tab.page.evaluate("() => typeof window.pwned") == "undefined"
