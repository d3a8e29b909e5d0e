"""What people type reaches the page as text, never as markup: a title, a
workflow's name, a comment or an actor that look like HTML are shown as
written, and no script in them runs."""

from __future__ import annotations

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
