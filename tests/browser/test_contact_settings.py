"""One's own contact, on #/me: set, shown again, removed; the email field's
limit read from the document; what the API refuses is said on the page."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.api import Api
from tests.support.browser import PageUnderTest


def test_a_person_sets_shows_and_removes_their_contact(tab: PageUnderTest, api: Api) -> None:
    tab.act_as("maria")
    tab.visit("#/me")
    email = tab.page.get_by_label("Email")
    expect(email).to_have_attribute("maxlength", "254")
    email.fill("maria@example.com")
    tab.page.get_by_role("button", name="Save contact").click()
    expect(tab.status).to_have_text("Saved: you are told there from now on.")
    assert api.get("/contacts/user:maria").json_body["email"] == "maria@example.com"

    tab.page.reload()
    expect(tab.page.get_by_label("Email")).to_have_value("maria@example.com")
    tab.page.get_by_label("Slack member id").fill("C0CHANNEL")
    tab.expect_failed_request(422)
    tab.page.get_by_role("button", name="Save contact").click()
    expect(tab.alert).to_have_text("'slack' of 'user:maria' must be a user id (U... or W...)")

    tab.page.get_by_role("button", name="Remove contact").click()
    expect(tab.status).to_have_text("Removed: you are told nothing any more.")
    assert api.get("/contacts/user:maria").json_body["email"] is None
