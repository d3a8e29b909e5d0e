"""A workflow's versions on the page: a run page names the version its run
keeps and a newer one, reassigns the step it waits at and moves it to a newer
version; a retired workflow offers no "Start a run"; an administrator edits
a workflow as its next version in a form, a fieldset per step, or as JSON
text, sees the changes (a rename said as the service takes it: a step
removed and one added), publishes, and is told when the editor is stale."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Locator, expect

from tests.support.api import Api
from tests.support.browser import PageUnderTest


def created(api: Api, path: str, body: dict[str, Any]) -> Any:
    response = api.post(path, body)
    assert response.status_code == 201, response.body
    return response.json_body


def test_a_run_page_keeps_its_version_reassigns_and_moves_the_run(
    tab: PageUnderTest, api: Api
) -> None:
    workflow = created(
        api,
        "/workflows",
        {"name": "Purchase", "steps": [{"name": "Finance", "approvers": ["user:fay"]}]},
    )
    run = created(api, "/runs", {"workflow_id": workflow["id"], "title": "PO-9: a chair"})
    created(
        api,
        f"/workflows/{workflow['id']}/versions",
        {"steps": [{"name": "Legal", "approvers": ["user:lee"]}, "Finance"]},
    )
    tab.act_as("ada")
    tab.open_run(run)

    expect(tab.fact("Version")).to_have_text("1 (version 2 is newer; this run keeps its own)")
    assert tab.steps()[0].startswith("Finance")
    tab.page.get_by_text("Reassign the step, or move the run to a newer version").click()
    reassign = tab.page.get_by_role("form", name="Reassign the current step")
    reassign.get_by_label("Who decides it from now on", exact=False).fill("user:gil")
    reassign.get_by_label("Why").fill("Fay left")
    reassign.get_by_role("button", name="Reassign").click()
    expect(tab.page.locator("ol.history")).to_contain_text("reassigned the step")
    assert api.get_run(run["id"])["current_step"]["approvers"] == ["user:gil"]

    tab.page.get_by_text("Reassign the step, or move the run to a newer version").click()
    move = tab.page.get_by_role("form", name="Move the run to a newer version")
    move.get_by_label("Step of that version where it continues").fill("Legal")
    move.get_by_role("button", name="Move").click()
    expect(tab.fact("Version")).to_have_text("2")
    moved = api.get_run(run["id"])
    assert (moved["workflow_version"], moved["current_step"]["name"]) == (2, "Legal")

    api.post(f"/workflows/{workflow['id']}/retire")
    tab.visit("#/workflows")
    expect(tab.page.get_by_text("Version 2")).to_be_visible()
    expect(tab.page.get_by_text("Start a run")).to_have_count(0)


def open_editor(tab: PageUnderTest, name: str, version: int) -> Locator:
    tab.page.get_by_text("Edit as a new version, or retire").click()
    return tab.page.get_by_role("form", name=f"Edit {name} as version {version}")


def step_fieldset(editor: Locator, number: int) -> Locator:
    return editor.get_by_role("group", name=f"Step {number}", exact=True)


def test_an_administrator_edits_each_step_in_the_form_sees_the_changes_and_publishes(
    tab: PageUnderTest, api: Api
) -> None:
    steps = [{"name": "Manager", "approvers": ["user:ann"]}, "Finance", "Archive", "Audit"]
    workflow = created(api, "/workflows", {"name": "Travel", "steps": steps})
    tab.act_as("ada")
    tab.visit("#/workflows")
    editor = open_editor(tab, "Travel", 2)
    editor.get_by_label("Description").fill("Trips abroad")
    editor.get_by_role("button", name="Move step 2 up").click()
    expect(step_fieldset(editor, 1).get_by_label("Step name")).to_have_value("Finance")
    finance = step_fieldset(editor, 1)
    finance.get_by_label("Who may decide", exact=True).fill("group:finance\nuser:cfo")
    finance.get_by_label("Approvals needed").fill("2")
    condition = finance.get_by_label("Applies only if", exact=False)
    condition.fill('{"more than": [{"var": "amount"}, 1000]}')
    finance.get_by_label("Deadline, in hours", exact=False).fill("24")
    finance.get_by_label("When the deadline passes").select_option("reject")
    step_fieldset(editor, 3).get_by_label("Step name").fill("Records")
    editor.get_by_role("button", name="Remove step 4").click()
    editor.get_by_role("button", name="Add a step").click()
    legal = step_fieldset(editor, 4)
    expect(legal.get_by_label("Step name")).to_be_focused()
    legal.get_by_label("Step name").fill("Legal")
    legal.get_by_label("Who may decide", exact=True).fill("user:lee")

    tab.expect_failed_request(400)
    editor.get_by_role("button", name="Show the changes").click()
    editor.get_by_role("button", name="Publish version 2").click()
    expect(finance.locator(".field-error:not([hidden])")).to_contain_text("'when' uses 'more than'")
    expect(condition).to_be_focused()
    condition.fill('{">": [{"var": "amount"}, 1000]}')

    editor.get_by_role("button", name="Show the changes").click()
    expect(editor.locator("ul.changes > li")).to_have_text(
        [
            'description: (the default) → "Trips abroad"',
            'Step Finance, approvers: [] → ["group:finance","user:cfo"]',
            "Step Finance, required_approvals: 1 → 2",
            "Step Finance, deadline_seconds: (the default) → 86400",
            'Step Finance, on_deadline: (the default) → "reject"',
            'Step Finance, when: (the default) → {">":[{"var":"amount"},1000]}',
            "Step 3, Records: renamed from Archive. Steps carry over by name, so the service"
            " removes Archive and adds Records as a new step.",
            "Step 4, Legal: added",
            "Step Audit: removed",
            "Steps reordered: Manager, Finance → Finance, Manager",
        ]
    )
    editor.get_by_role("button", name="Publish version 2").click()
    expect(tab.status).to_contain_text("Travel: version 2 published.")
    published = api.get_workflow(workflow["id"])
    rules = ("name", "approvers", "required_approvals", "deadline_seconds", "on_deadline", "when")
    assert (published["version"], published["description"]) == (2, "Trips abroad")
    assert [tuple(step[rule] for rule in rules) for step in published["steps"]] == [
        (
            "Finance",
            ["group:finance", "user:cfo"],
            2,
            86400,
            "reject",
            {">": [{"var": "amount"}, 1000]},
        ),
        ("Manager", ["user:ann"], 1, None, None, None),
        ("Records", [], 1, None, None, None),
        ("Legal", ["user:lee"], 1, None, None, None),
    ]


def test_a_stale_editor_is_told_and_offered_the_newest_and_the_json_text_edits_the_same_draft(
    tab: PageUnderTest, api: Api
) -> None:
    workflow = created(api, "/workflows", {"name": "Travel", "steps": ["Manager"]})
    tab.act_as("ada")
    tab.visit("#/workflows")
    editor = open_editor(tab, "Travel", 2)
    editor.get_by_role("button", name="Edit as JSON text (advanced)").click()
    text = editor.get_by_label("Version 2: the whole definition, as JSON")
    definition = json.loads(text.input_value())
    assert definition["steps"] == [
        {"name": "Manager", "approvers": [], "required_approvals": 1, "notify": []}
    ]
    definition["steps"].append({"name": "Legal", "approvers": ["user:lee"]})
    text.fill(json.dumps(definition))
    editor.get_by_role("button", name="Edit with the form").click()
    expect(step_fieldset(editor, 2).get_by_label("Step name")).to_have_value("Legal")

    created(api, f"/workflows/{workflow['id']}/versions", {"steps": ["Manager", "CFO"]})
    tab.expect_failed_request(409)
    editor.get_by_role("button", name="Publish version 2").click()
    expect(editor.locator("ul.changes > li")).to_have_text(["Step 2, Legal: added"])
    expect(tab.status).to_have_text("Check the changes below, then publish version 2.")
    editor.get_by_role("button", name="Publish version 2").click()
    expect(tab.alert).to_contain_text(
        "Not published: Travel changed since this editor read version 1."
    )
    assert api.get_workflow(workflow["id"])["version"] == 2
    tab.page.get_by_role("button", name="Load the newest version").click()
    editor = tab.page.get_by_role("form", name="Edit Travel as version 3")
    expect(step_fieldset(editor, 2).get_by_label("Step name")).to_have_value("CFO")

    tab.page.get_by_role("button", name="Retire (no new runs)").click()
    expect(tab.status).to_contain_text("Travel is retired")
    assert api.get_workflow(workflow["id"])["retired"] is True
