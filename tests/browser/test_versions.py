"""A workflow's versions on the page: a run page names the version its run
keeps and a newer one, reassigns the step it waits at and moves it to a newer
version; a retired workflow offers no "Start a run"."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import expect

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


def test_an_administrator_edits_a_workflow_as_a_new_version_with_its_changes_shown(
    tab: PageUnderTest, api: Api
) -> None:
    steps = [{"name": "Manager", "approvers": ["user:ann"]}, {"name": "Finance"}]
    workflow = created(api, "/workflows", {"name": "Travel", "steps": steps})
    tab.act_as("ada")
    tab.visit("#/workflows")
    tab.page.get_by_text("Edit as a new version, or retire").click()
    editor = tab.page.get_by_role("form", name="Edit Travel as version 2")
    field = editor.get_by_label("Version 2: the whole definition")
    definition = json.loads(field.input_value())
    manager = definition["steps"][0]
    definition["steps"] = [
        {"name": "Legal", "approvers": ["user:lee"], "required_approvals": 1},
        {**manager, "approvers": ["user:bob"]},
    ]
    field.fill(json.dumps(definition))
    editor.get_by_role("button", name="Show the changes").click()

    expect(editor.locator("ul.changes > li")).to_have_text(
        [
            "Step 1, Legal: added",
            "Step Manager: moved from 1 to 2",
            'Step Manager, approvers: ["user:ann"] → ["user:bob"]',
            "Step Finance: removed",
        ]
    )
    editor.get_by_role("button", name="Publish").click()
    expect(tab.status).to_contain_text("Travel: version 2 published.")
    published = api.get_workflow(workflow["id"])
    assert (published["version"], [s["name"] for s in published["steps"]]) == (
        2,
        ["Legal", "Manager"],
    )

    tab.page.get_by_text("Edit as a new version, or retire").click()
    tab.page.get_by_role("button", name="Retire (no new runs)").click()
    expect(tab.status).to_contain_text("Travel is retired")
    assert api.get_workflow(workflow["id"])["retired"] is True
