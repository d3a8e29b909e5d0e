"""Who the page acts as: a name (and groups) the person gives in `none` mode, a
bearer token in `jwt` mode, kept for the tab; a refused token sends the person
back to give another, with the reason."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import tokens
from tests.support.api import Api
from tests.support.browser import PageUnderTest


def test_a_shared_link_asks_who_you_are_then_opens_and_reloads_where_it_points(
    tab: PageUnderTest, api: Api
) -> None:
    _, run = api.started_run(title="PO-7: a shared link")
    tab.visit(f"#/runs/{run['id']}")
    expect(tab.heading).to_have_text("Who are you?")
    tab.page.get_by_label("Your name").fill("maria")
    tab.page.get_by_label("Your groups").fill("finance, managers")
    tab.page.get_by_role("button", name="Continue").click()
    expect(tab.heading).to_have_text("PO-7: a shared link")
    expect(tab.status).to_have_text("Acting as maria (finance, managers).")
    expect(tab.page.get_by_role("link", name="Acting as maria")).to_be_visible()

    tab.page.reload()  # the same run, the same person: kept for the tab
    expect(tab.heading).to_have_text("PO-7: a shared link")
    expect(tab.page.get_by_role("link", name="Acting as maria")).to_be_visible()

    tab.page.get_by_role("link", name="Acting as maria").click()
    expect(tab.page.get_by_label("Your name")).to_have_value("maria")
    expect(tab.page.get_by_label("Your groups")).to_have_value("finance, managers")
    tab.page.get_by_role("button", name="Forget me").click()
    expect(tab.status).to_have_text("Forgotten: this tab acts as nobody now.")
    expect(tab.page.get_by_label("Your name")).to_have_value("")
    tab.visit("#/inbox")
    expect(tab.heading).to_have_text("Who are you?")


def test_a_blank_name_is_refused_on_the_page(tab: PageUnderTest) -> None:
    tab.visit()
    tab.page.get_by_label("Your name").fill("   ")
    tab.page.get_by_role("button", name="Continue").click()
    expect(tab.alert).to_have_text("Say who you are: your name is recorded with each decision.")
    expect(tab.page.get_by_label("Your name")).to_be_focused()


# -- jwt mode --------------------------------------------------------------------------


def admin_started_run(api: Api, title: str) -> dict[str, Any]:
    """A run of a new one-step workflow, both made with an admin's token."""
    token = tokens.hs256(tokens.claims("admin", ["workflow-admins"]))
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    workflow = {"name": "Deploys", "steps": ["Review"]}
    created = api.request("POST", "/workflows", workflow, headers=headers).json_body
    run = {"workflow_id": created["id"], "title": title}
    response = api.request("POST", "/runs", run, headers=headers)
    assert response.status_code == 201, response.body
    started: dict[str, Any] = response.json_body
    return started


@pytest.mark.usefixtures("secret_mode")
def test_a_token_in_the_link_is_kept_for_the_tab_and_leaves_the_address_bar(
    tab: PageUnderTest, api: Api
) -> None:
    run = admin_started_run(api, "Ship 2.0")
    token = tokens.hs256(tokens.claims("maria", ["finance"]))
    tab.visit(f"#token={token}")
    expect(tab.status).to_have_text("Using the token of maria (finance).")
    assert tab.page.url == f"{tab.base_url}/#/inbox"
    assert token not in tab.page.evaluate("() => document.location.href + document.body.innerText")
    expect(tab.page.get_by_role("link", name="Acting as maria")).to_be_visible()

    tab.page.get_by_role("link", name="Ship 2.0").click()
    tab.decide("Approve", "Ready")
    expect(tab.status).to_have_text("You approved step 1, Review. The run is completed.")
    assert "maria approved at Review" in tab.history()[0]
    (sent,) = tab.decisions_sent()
    assert sent["headers"]["authorization"] == f"Bearer {token}"
    assert "actor" not in sent["body"]
    assert api.request(
        "GET", f"/runs/{run['id']}", headers={"Authorization": f"Bearer {token}"}
    ).json_body["actions"][0]["actor"] == ("maria")

    tab.page.get_by_role("link", name="Acting as maria").click()
    expect(tab.fact("Belongs to")).to_have_text("maria")
    expect(tab.fact("Groups")).to_have_text("finance")


@pytest.mark.usefixtures("secret_mode")
def test_a_refused_token_sends_you_back_with_the_reason_then_on_to_where_you_were(
    tab: PageUnderTest, api: Api
) -> None:
    run = admin_started_run(api, "Ship 2.1")
    now = int(time.time())
    expired = tokens.hs256(tokens.claims("maria", iat=now - 7200, exp=now - 3600))
    tab.expect_failed_request(401)

    tab.visit(f"#/runs/{run['id']}")
    expect(tab.heading).to_have_text("Who are you?")
    tab.page.get_by_label("Bearer token").fill("not a token")
    tab.page.get_by_role("button", name="Use this token").click()
    expect(tab.alert).to_have_text(
        "This is not a JSON Web Token: it should be three parts separated by dots."
    )
    tab.page.get_by_label("Bearer token").fill(expired)
    tab.page.get_by_role("button", name="Use this token").click()
    expect(tab.alert).to_have_text(
        "Your token was refused: The token has expired. Paste a valid one to go on."
    )
    expect(tab.alert).to_be_focused()
    expect(tab.heading).to_have_text("Who are you?")

    tab.page.get_by_label("Bearer token").fill(tokens.hs256(tokens.claims("maria")))
    tab.page.get_by_role("button", name="Use this token").click()
    expect(tab.heading).to_have_text("Ship 2.1")
    expect(tab.status).to_have_text("Using the token of maria.")
