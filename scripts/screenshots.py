"""Screenshots of the approvers' page for the README: the inbox, a run page and
the delegations, each 360 px wide (a phone) and 1280 px wide, on sample data.

    python scripts/screenshots.py docs/screenshots

`make screenshots` runs it. The app is served in this process from a fresh
SQLite file (WORKFLOW_AUTH=none), filled through the API as people would, and
photographed by Debian's headless Chromium (scripts/browser.py). Steps have
approvers and a quorum, runs an input (what is being approved, under the
workflow's input schema), the CFO's step a condition, and the viewer has
delegations lent and lent to them.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalice.config import Config

import app as app_module
from chalicelib.api import access_log
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from scripts import browser, local_server

WIDTHS = (360, 1280)
VIEWER = ("finn", "finance")


def call(base_url: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        base_url + path,
        data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def sample_data(base_url: str) -> dict[str, Any]:
    """Two workflows and a few runs at different steps; the run to show."""

    def step(name: str, approvers: list[str], quorum: int = 1, when: Any = None) -> Any:
        rule = {"name": name, "approvers": approvers, "required_approvals": quorum}
        return {**rule, "when": when} if when else rule

    schema = {
        "type": "object",
        "required": ["amount", "supplier"],
        "properties": {
            "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
            "supplier": {"type": "string", "minLength": 1, "title": "Supplier"},
            "quote": {"type": "string", "format": "uri", "title": "Quote"},
        },
    }

    purchase = call(
        base_url,
        "POST",
        "/workflows",
        {
            "name": "Purchase order",
            "description": "Anything over 500 EUR",
            "steps": [
                step("Manager", ["group:managers"]),
                step("Finance", ["group:finance"], 2),
                step("CFO", ["user:cfo"], when={">": [{"var": "amount"}, 10000]}),
            ],
            "input_schema": schema,
        },
    )
    contract = call(
        base_url,
        "POST",
        "/workflows",
        {
            "name": "Supplier contract",
            "steps": [step("Legal", []), step("Finance", ["group:finance"])],
        },
    )

    def start(
        workflow: dict[str, Any], title: str, requester: str, data: dict[str, Any]
    ) -> dict[str, Any]:
        run = {"workflow_id": workflow["id"], "title": title, "requested_by": requester}
        started: dict[str, Any] = call(base_url, "POST", "/runs", {**run, "input": data})
        return started

    def approve(run: dict[str, Any], actor: str, comment: str, groups: list[str]) -> None:
        decision = {"actor": actor, "comment": comment, "groups": groups}
        call(base_url, "POST", f"/runs/{run['id']}/approve", decision)

    laptops = start(
        purchase,
        "PO-1042: 12 laptops for the Lisbon office",
        "sam",
        {"amount": 14400, "supplier": "Lisboa Tech, Lda.", "quote": "https://erp.example/q/1042"},
    )
    approve(laptops, "maria", "Within this quarter's budget.", ["managers"])
    # One of the two approvals Finance needs.
    approve(laptops, "fiona", "The quote matches the order.", ["finance"])
    desks = start(
        purchase, "PO-1043: standing desks", "ana", {"amount": 2600, "supplier": "Ergo Office"}
    )
    approve(desks, "maria", "", ["managers"])
    hosting = start(
        contract, "Renewal: cloud hosting, 3 years", "lee", {"vendor": "Nimbus", "years": 3}
    )
    approve(hosting, "legal-team", "Terms checked against the template.", [])
    start(
        purchase,
        "PO-1044: conference room screen",
        "sam",
        {"amount": 1900, "supplier": "Visual AV", "quote": "https://erp.example/q/1044"},
    )
    return laptops


def sample_delegations(base_url: str) -> None:
    """Rights the viewer lent and was lent."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)

    def lend(delegator: str, delegate: str, starts: int, days: int, reason: str) -> None:
        start = now + timedelta(days=starts)
        window = {
            "starts_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ends_at": (start + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        lent = {"delegator": delegator, "delegate": delegate, "reason": reason, **window}
        call(base_url, "POST", "/delegations", lent)

    lend(VIEWER[0], "fiona", 14, 10, "Holiday in the Algarve")
    lend("cfo", VIEWER[0], 0, 3, "At the board meeting in Porto")


def edit_as_a_new_version(page: Any) -> None:
    """The first workflow's editor open, a step renamed and its rule changed,
    and the changes shown (docs/versions.md)."""
    from playwright.sync_api import expect

    page.get_by_text("Edit as a new version, or retire").first.click()
    field = page.locator("textarea[name=definition]").first
    definition = json.loads(field.input_value())
    definition["steps"][0]["name"] = "Team lead"
    definition["steps"].append({"name": "Legal", "approvers": ["group:legal"]})
    field.fill(json.dumps(definition, indent=2))
    page.get_by_role("button", name="Show the changes").first.click()
    expect(page.locator("ul.changes > li").first).to_be_visible()


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import expect, sync_playwright

    access_log.set_stream(open(os.devnull, "w"))  # noqa: SIM115 - for the whole run
    os.environ.pop("WORKFLOW_AUTH", None)
    with tempfile.TemporaryDirectory() as data:
        app_module.use_storage(SQLiteStorage(os.path.join(data, "workflows.sqlite3")))
        with local_server.serving(app_module.app, Config.create()) as base_url:
            run = sample_data(base_url)
            sample_delegations(base_url)
            views = [
                ("inbox", "#/inbox", None),
                ("run", f"#/runs/{run['id']}", run["title"]),
                ("delegations", "#/delegations", "Delegations"),
                ("versions", "#/workflows", "Workflows"),
            ]
            with sync_playwright() as playwright:
                chromium = browser.launch(playwright)
                for width in WIDTHS:
                    context = chromium.new_context(
                        viewport={"width": width, "height": 800},
                        base_url=base_url,
                        locale="en-GB",
                        timezone_id="Europe/Lisbon",
                    )
                    page = context.new_page()
                    page.goto("/#/me")
                    page.get_by_label("Your name").fill(VIEWER[0])
                    page.get_by_label("Your groups").fill(VIEWER[1])
                    page.get_by_role("button", name="Continue").click()
                    expect(page.get_by_role("status")).not_to_be_empty()
                    for name, route, heading in views:
                        page.goto(f"/{route}")
                        page.reload()  # without the last view's message
                        title = page.get_by_role("heading", level=1)
                        if heading:
                            expect(title).to_have_text(heading)
                        else:
                            expect(page.locator("ul.cards > li").first).to_be_visible()
                        if name == "versions":
                            edit_as_a_new_version(page)
                        path = out / f"{name}-{width}.png"
                        page.screenshot(path=str(path), full_page=True)
                        print(f"wrote {path}")
                    context.close()
                chromium.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
