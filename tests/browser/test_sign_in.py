"""Sign-in on the page, through the test OpenID provider on loopback
(scripts/oidc_provider.py): the provider's own form, the service's callback,
the session in an HttpOnly cookie the page never reads."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.support.api import Api
from tests.support.browser import PageUnderTest
from tests.support.signin import FROM_PAGE, OidcTestProvider, as_session, signed_in


def started(api: Api, provider: OidcTestProvider) -> dict[str, Any]:
    """A run waiting for the finance group, defined and started by ada (an admin)."""
    ada = signed_in(api, provider, "ada")
    finance = {"name": "Finance", "approvers": ["group:finance"]}
    workflow = {"name": "Purchase order", "steps": [finance]}
    made = as_session(api, ada, "POST", "/workflows", workflow, **FROM_PAGE)
    assert made.status_code == 201, made.body
    run = {"workflow_id": made.json_body["id"], "title": "PO-9: two screens"}
    response = as_session(api, ada, "POST", "/runs", run, **FROM_PAGE)
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def sign_in(tab: PageUnderTest, who: str) -> None:
    """From the page's "Sign in", through the provider's form, back to the page."""
    # The provider's form loads a style sheet from a CDN; offline, it has none.
    tab.context.route(re.compile(r"^https://cdn\."), lambda route: route.fulfill(body=""))
    expect(tab.heading).to_have_text("Sign in")
    tab.page.get_by_role("button", name="Sign in").click()
    expect(tab.page.get_by_role("heading", name="Authorize Client")).to_be_visible()
    tab.page.get_by_placeholder("sub").fill(who)
    tab.page.get_by_role("button", name="Authorize").click()


def test_a_finance_approver_signs_in_decides_reloads_and_signs_out(
    tab: PageUnderTest, api: Api, provider: OidcTestProvider
) -> None:
    run = started(api, provider)
    tab.expect_failed_request(401)  # GET /auth/session, before anyone signed in
    tab.visit("#/inbox")
    sign_in(tab, "maria")

    expect(tab.heading).to_have_text("Waiting for you")
    expect(tab.page.get_by_role("link", name="Signed in as maria")).to_be_visible()
    assert "code=" not in tab.page.url and "state=" not in tab.page.url
    assert tab.page.evaluate("() => document.cookie") == ""  # HttpOnly: not the script's
    tab.page.get_by_role("link", name=run["title"]).click()
    tab.decide("Approve", "Within budget")
    expect(tab.status).to_contain_text("You approved step 1, Finance")
    assert "maria approved at Finance Within budget" in tab.history()[0]

    tab.page.reload()  # still signed in: the cookie, not the tab, holds the session
    expect(tab.heading).to_have_text(run["title"])
    expect(tab.page.get_by_role("link", name="Signed in as maria")).to_be_visible()

    tab.page.get_by_role("link", name="Signed in as maria").click()
    expect(tab.page.locator("dl.facts")).to_contain_text("finance")
    tab.assert_accessible()
    tab.page.get_by_role("button", name="Sign out").click()
    expect(tab.page.get_by_role("heading", name="End Session")).to_be_visible()
    tab.page.get_by_role("button", name="End session").click()
    expect(tab.heading).to_have_text("Sign in")
    tab.assert_accessible()

    refused = tab.page.evaluate(
        "async () => (await fetch('/inbox', {headers: {'X-Requested-With': 'x'}})).status"
    )
    assert refused == 401
    tab.visit(f"#/runs/{run['id']}")
    expect(tab.heading).to_have_text("Sign in")


def test_someone_the_step_does_not_await_is_shown_why_not(
    tab: PageUnderTest, api: Api, provider: OidcTestProvider
) -> None:
    run = started(api, provider)
    provider.user("lena", ["marketing"])
    tab.expect_failed_request(401)
    tab.visit(f"#/runs/{run['id']}")
    sign_in(tab, "lena")

    expect(tab.heading).to_have_text(run["title"])
    assert tab.offered() == []
    expect(tab.page.locator("ul.why-not")).to_contain_text("finance")


def test_a_session_that_ends_while_typing_signs_in_again_and_keeps_the_comment(
    tab: PageUnderTest, api: Api, provider: OidcTestProvider
) -> None:
    run = started(api, provider)
    tab.expect_failed_request(401)
    tab.visit(f"#/runs/{run['id']}")
    sign_in(tab, "maria")
    expect(tab.heading).to_have_text(run["title"])
    tab.page.get_by_label("Comment").fill("Checked the quote twice")

    tab.context.clear_cookies()  # the session ends (as when it expires, or is revoked)
    tab.page.get_by_role("button", name="Approve", exact=True).click()
    expect(tab.alert).to_contain_text("You are signed out")
    sign_in(tab, "maria")

    expect(tab.heading).to_have_text(run["title"])
    expect(tab.page.get_by_label("Comment")).to_have_value("Checked the quote twice")
    tab.page.get_by_role("button", name="Approve", exact=True).click()
    expect(tab.status).to_contain_text("You approved step 1, Finance")
    assert "maria approved at Finance Checked the quote twice" in tab.history()[0]
