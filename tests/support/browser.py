"""The approvers' page in headless Chromium, for tests/browser/.

One browser per test process (tests/browser/conftest.py), a fresh context per
test: its own sessionStorage, so each test starts as a new tab would. The
console is watched: any error the page logs fails the test, except the
browser's own "Failed to load resource" line for an answer the test provoked
on purpose (a 409 from a stale page), declared with `expect_failed_request`.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page, Request

WIDTHS = (360, 1280)
FAILED_LOAD = re.compile(r"Failed to load resource: the server responded with a status of (\d+)")


class PageUnderTest:
    """A tab on the app at `base_url`, `width` px wide."""

    def __init__(
        self, browser: Browser, base_url: str, width: int, timezone_id: Optional[str] = None
    ) -> None:
        self.base_url = base_url
        self.width = width
        self.context = browser.new_context(
            viewport={"width": width, "height": 900}, base_url=base_url, timezone_id=timezone_id
        )
        self.page: Page = self.context.new_page()
        self.console_errors: list[str] = []
        self.expected_statuses: set[int] = set()
        self.sent: list[dict[str, Any]] = []
        self.permissions_asked: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.console_errors.append(f"uncaught {error}"))
        self.page.on("request", self._on_request)

    def tab_until(self, target: Locator, most: int = 40) -> None:
        """Press Tab until `target` has the focus, at most `most` times."""
        for _ in range(most):
            self.page.keyboard.press("Tab")
            if target.evaluate("node => node === document.activeElement"):
                return
        raise AssertionError(f"{most} presses of Tab never reached {target}")

    def close(self) -> None:
        self.context.close()

    def expect_failed_request(self, status: int) -> None:
        """An answer with `status` is what the test provokes: its console line is expected."""
        self.expected_statuses.add(status)

    def _on_console(self, message: Any) -> None:
        if message.type != "error":
            return
        failed = FAILED_LOAD.match(message.text)
        if failed and int(failed.group(1)) in self.expected_statuses:
            return
        self.console_errors.append(message.text)

    def _on_request(self, request: Request) -> None:
        if not request.url.startswith(self.base_url + "/"):
            return  # another origin's (a sign-in provider's form)
        path = request.url.removeprefix(self.base_url)
        if request.method == "GET" and "/permissions" in path:
            self.permissions_asked.append(path)
        if request.method == "POST":
            body = request.post_data
            self.sent.append(
                {
                    "path": request.url.removeprefix(self.base_url),
                    "headers": request.headers,
                    "body": json.loads(body) if body else None,
                }
            )

    # -- going places ------------------------------------------------------------

    def visit(self, route: str = "") -> None:
        """The page at `route` ("#/runs/3"), loaded afresh."""
        self.page.goto(f"/{route}")

    def act_as(self, actor: str, groups: str = "") -> None:
        """Say who this tab is (none mode), then land on the inbox."""
        from playwright.sync_api import expect

        self.visit("#/me")
        expect(self.heading).to_have_text("Who are you?")
        self.page.get_by_label("Your name").fill(actor)
        self.page.get_by_label("Your groups").fill(groups)
        self.page.get_by_role("button", name="Continue").click()
        expect(self.status).to_contain_text(f"Acting as {actor}")

    def open_run(self, run: dict[str, Any]) -> None:
        from playwright.sync_api import expect

        self.visit(f"#/runs/{run['id']}")
        expect(self.heading).to_have_text(run["title"])

    def decide(self, decision: str, comment: str = "") -> None:
        """Approve or Reject the run on the page, with `comment`."""
        self.page.get_by_label("Comment").fill(comment)
        self.page.get_by_role("button", name=decision, exact=True).click()

    # -- what it shows -----------------------------------------------------------

    @property
    def heading(self) -> Locator:
        return self.page.get_by_role("heading", level=1)

    @property
    def alert(self) -> Locator:
        return self.page.get_by_role("alert")

    @property
    def status(self) -> Locator:
        return self.page.get_by_role("status")

    def fact(self, term: str) -> Locator:
        """The value the view gives for `term` in its facts (Workflow, Approvals, ...)."""
        return (
            self.page.locator("#view dl.facts > div")
            .filter(has=self.page.locator("dt", has_text=re.compile(f"^{re.escape(term)}$")))
            .locator("dd")
        )

    def steps(self) -> list[str]:
        """Each step of the run's timeline as its heading line: "Manager Done"."""
        return [
            " ".join(text.split())
            for text in self.page.locator("ol.timeline > li > .step-head").all_inner_texts()
        ]

    def history(self) -> list[str]:
        return [
            " ".join(text.split())
            for text in self.page.locator("ol.history > li").all_inner_texts()
        ]

    def input_fields(self) -> list[tuple[str, str]]:
        """The run's input as its page lists it, top level: (label, value) pairs."""
        rows = self.page.locator("#view section > dl.input-fields > div")
        found = rows.evaluate_all(
            "rows => rows.map((row) => [row.children[0].innerText, row.children[1].innerText])"
        )
        return [(" ".join(label.split()), " ".join(value.split())) for label, value in found]

    def offered(self) -> list[str]:
        """The actions the run page offers: its Approve, Reject and Cancel buttons."""
        names = {"Approve": "approve", "Reject": "reject", "Cancel this run": "cancel"}
        return [
            action
            for name, action in names.items()
            if self.page.get_by_role("button", name=name, exact=True).count()
        ]

    def not_offered(self) -> list[str]:
        """What the run page says is not offered, and why: "Approve: You already ..."."""
        return [
            " ".join(text.split())
            for text in self.page.locator("ul.why-not > li").all_inner_texts()
        ]

    def focused(self) -> dict[str, Optional[str]]:
        """The focused element: its id, tag and text."""
        found: dict[str, Optional[str]] = self.page.evaluate(
            "() => ({id: document.activeElement.id || null,"
            " tag: document.activeElement.tagName.toLowerCase(),"
            " text: document.activeElement.textContent})"
        )
        return found

    def decisions_sent(self) -> list[dict[str, Any]]:
        """The approve and reject requests the page sent, in order."""
        return [
            request for request in self.sent if request["path"].endswith(("/approve", "/reject"))
        ]

    # -- checks ------------------------------------------------------------------

    def assert_accessible(self) -> None:
        """axe-core finds no violation in the page as it is now."""
        from axe_playwright_python.sync_playwright import Axe

        results = Axe().run(self.page)
        assert results.violations_count == 0, results.generate_report()

    def assert_fits(self) -> None:
        """Nothing sticks out sideways: no horizontal scrolling at this width."""
        widths = self.page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1], f"{widths[0]} px wide content in a {widths[1]} px window"

    def assert_one_h1_and_the_landmarks(self) -> None:
        assert self.page.locator("h1").count() == 1
        for role in ("banner", "navigation", "main"):
            assert self.page.get_by_role(role).count() == 1, role
