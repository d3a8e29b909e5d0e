"""The run page offers only what GET /runs/{id}/permissions allows the caller,
and says in words why the rest is not offered: to the run's requester, to
someone who is no approver of the step, to an approver who already approved
it; in jwt mode the forms that define workflows and append steps are shown to
the admin group only. Names are one person's whatever their case or width, as
the API compares them."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import tokens
from tests.support.api import Api
from tests.support.browser import PageUnderTest

REQUESTER_WHY = (
    "Approve, Reject and Send back for changes: You requested this run, and its workflow"
    " doesn't let requesters approve or reject it, or send it back."
)


def started(api: Api, steps: list[Any], requested_by: str | None = None, **policy: bool) -> Any:
    """A run of a new workflow with `steps` and `policy`, requested by `requested_by`."""
    created = api.post("/workflows", {"name": "Purchase order", "steps": steps, **policy})
    assert created.status_code == 201, created.body
    run: dict[str, Any] = {"workflow_id": created.json_body["id"], "title": "PO-7: a desk"}
    if requested_by:
        run["requested_by"] = requested_by
    response = api.post("/runs", run)
    assert response.status_code == 201, response.body
    return response.json_body


def test_the_requester_is_offered_no_decision_is_told_why_and_may_cancel(
    tab: PageUnderTest, api: Api
) -> None:
    run = started(api, ["Manager"], requested_by="rita")
    tab.act_as("Rita")  # rita, as the API compares names
    tab.open_run(run)
    expect(tab.page.get_by_role("heading", name="Withdraw your request")).to_be_visible()
    assert tab.offered() == ["cancel"]
    assert tab.not_offered() == [REQUESTER_WHY]
    assert tab.page.get_by_label("Comment").count() == 0
    assert len(tab.permissions_asked) == 1
    assert "actor=Rita" in tab.permissions_asked[0]
    tab.assert_accessible()

    tab.page.get_by_role("button", name="Cancel this run").click()
    expect(tab.status).to_have_text("You cancelled this run.")
    expect(tab.page.locator("p.lead")).to_have_text("Status: Cancelled")
    assert tab.offered() == [] and tab.not_offered() == []
    assert len(tab.permissions_asked) == 2


def test_someone_who_is_no_approver_of_the_step_is_told_who_is(
    tab: PageUnderTest, api: Api
) -> None:
    run = started(api, [{"name": "Finance", "approvers": ["group:finance", "user:cfo"]}], "sam")
    tab.act_as("maria", "managers")
    tab.open_run(run)
    expect(tab.page.locator("ul.why-not > li")).to_have_count(2)
    assert tab.offered() == []
    assert tab.not_offered() == [
        "Approve, Reject and Send back for changes: Only the finance group or cfo can decide"
        " this step.",
        "Cancel: Only sam, who requested this run, can cancel it.",
    ]
    assert tab.page.get_by_role("heading", name="Decide step 1 of 1: Finance").count() == 0
    expect(tab.page.locator("ol.timeline .step-rules")).to_have_text(
        "Who may decide: the finance group or cfo. Needs 1 approval."
    )

    tab.act_as("fiona", "Finance")  # the finance group, as the API compares names
    tab.open_run(run)
    expect(tab.page.get_by_role("heading", name="Decide step 1 of 1: Finance")).to_be_visible()
    assert tab.offered() == ["approve", "reject"]
    assert tab.not_offered() == ["Cancel: Only sam, who requested this run, can cancel it."]


def test_an_approver_who_approved_may_still_reject_but_not_approve_again(
    tab: PageUnderTest, api: Api
) -> None:
    run = started(api, [{"name": "Finance", "required_approvals": 2}])
    tab.act_as("fiona")
    tab.open_run(run)
    assert tab.offered() == ["approve", "reject", "cancel"]  # nobody named requested it
    assert tab.not_offered() == []
    tab.decide("Approve")
    expect(tab.status).to_have_text("You approved step 1, Finance. Approvals so far: 1 of 2.")
    expect(tab.page.locator("ul.why-not > li")).to_have_text(
        "Approve: You already approved this step; it waits for other approvers"
        " (1 of 2 approvals so far)."
    )
    assert tab.offered() == ["reject", "cancel"]
    assert len(tab.permissions_asked) == 2  # on opening the run, and after the decision
    tab.assert_accessible()

    tab.act_as("ＦＩＯＮＡ")  # fullwidth capitals: fiona still
    tab.open_run(run)
    assert tab.offered() == ["reject", "cancel"]
    tab.decide("Reject", "Over budget after all")
    expect(tab.status).to_have_text("You rejected step 1, Finance. The run is rejected.")
    assert [action["action"] for action in api.get_run(run["id"])["actions"]] == [
        "approve",
        "reject",
    ]


def test_with_distinct_approvers_who_approved_a_step_may_not_approve_the_next(
    tab: PageUnderTest, api: Api
) -> None:
    run = started(api, ["Manager", "Finance"], distinct_approvers=True)
    tab.act_as("maria")
    tab.open_run(run)
    tab.decide("Approve")
    expect(tab.status).to_contain_text("The run waits at step 2 of 2: Finance now.")
    assert tab.offered() == ["reject", "cancel"]
    assert tab.not_offered() == [
        "Approve: You approved another step of this run, and its workflow wants a different"
        " person for each step."
    ]


# -- jwt mode ----------------------------------------------------------------------------


def bearer(actor: str, groups: tuple[str, ...] = ()) -> dict[str, str]:
    token = tokens.hs256(tokens.claims(actor, list(groups)))
    return {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}


def use_token(tab: PageUnderTest, actor: str, groups: tuple[str, ...] = ()) -> None:
    tab.visit(f"#token={tokens.hs256(tokens.claims(actor, list(groups)))}")
    expect(tab.status).to_contain_text(f"Using the token of {actor}")


@pytest.mark.usefixtures("secret_mode")
def test_in_jwt_mode_only_the_admin_group_is_shown_the_forms_that_define_workflows(
    tab: PageUnderTest, api: Api
) -> None:
    workflow = {"name": "Deploys", "steps": ["Review"]}
    created = api.request("POST", "/workflows", workflow, headers=bearer("root", (tokens.ADMIN,)))
    assert created.status_code == 201, created.body

    use_token(tab, "maria", ("finance",))
    tab.visit("#/workflows")
    card = tab.page.locator("li.card").filter(has_text="Deploys")
    expect(card.get_by_text("Start a run")).to_be_visible()
    expect(
        tab.page.get_by_text(
            "Defining workflows and appending steps is for members of the workflow-admins"
            " group, which your token does not list."
        )
    ).to_be_visible()
    assert tab.page.get_by_role("form", name="Define a workflow").count() == 0
    assert card.get_by_text("Append a step").count() == 0
    tab.assert_accessible()

    use_token(tab, "ada", ("Workflow-Admins",))  # the admin group, as the API compares names
    tab.visit("#/workflows")
    expect(tab.page.get_by_role("form", name="Define a workflow")).to_be_visible()
    card.get_by_text("Append a step").click()
    card.get_by_label("Step name").fill("Release")
    card.get_by_role("button", name="Append step").click()
    expect(tab.status).to_have_text("Step 2, Release, appended to Deploys.")


@pytest.mark.usefixtures("secret_mode")
def test_in_jwt_mode_the_token_says_who_requested_and_an_admin_may_cancel(
    tab: PageUnderTest, api: Api
) -> None:
    admin = bearer("root", (tokens.ADMIN,))
    created = api.request(
        "POST", "/workflows", {"name": "Deploys", "steps": ["Review"]}, headers=admin
    )
    run = {"workflow_id": created.json_body["id"], "title": "Ship 3.0"}
    started_run = api.request("POST", "/runs", run, headers=bearer("Rita")).json_body

    use_token(tab, "rita")  # Rita, as the API compares names
    tab.open_run(started_run)
    assert tab.offered() == ["cancel"]
    assert tab.not_offered() == [REQUESTER_WHY]
    assert tab.permissions_asked == [f"/runs/{started_run['id']}/permissions"]

    use_token(tab, "maria")
    tab.open_run(started_run)
    assert tab.offered() == ["approve", "reject"]
    assert tab.not_offered() == [
        "Cancel: Only Rita, who requested this run, or a member of the workflow-admins"
        " group, can cancel it."
    ]

    use_token(tab, "ada", (tokens.ADMIN,))
    tab.open_run(started_run)
    assert tab.offered() == ["approve", "reject", "cancel"]
    expect(tab.page.get_by_role("heading", name="Cancel the run")).to_be_visible()
    expect(
        tab.page.get_by_text(
            "Rita requested this run; as a member of the workflow-admins group, you may cancel"
            " it too."
        )
    ).to_be_visible()
