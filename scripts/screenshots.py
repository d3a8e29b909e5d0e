"""Screenshots of the approvers' page for the README and docs/approvers-page.md: the
inbox, a run page, the delegations, a workflow edited as its next version in
the form (that workflow's card only) and its figures, 360 px (a phone) and
1280 px wide.

    python scripts/screenshots.py docs/screenshots

Also sign-in (1280 px, through scripts/oidc_provider.py) and, for
docs/notifications.md, an email and the page its link opens. Each part served in
this process from a fresh SQLite file, on sample data made through the API (past
decisions through the engine's clock), photographed by scripts/browser.py.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalice.config import Config

import app as app_module
from chalicelib import metric_lines
from chalicelib.api import access_log
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from scripts import browser, local_server, oidc_provider

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
    steps = [step("Legal", []), step("Finance", ["group:finance"])]
    contract = call(base_url, "POST", "/workflows", {"name": "Supplier contract", "steps": steps})

    def start(workflow: Any, title: str, requester: str, data: Any) -> Any:
        run = {"workflow_id": workflow["id"], "title": title, "requested_by": requester}
        return call(base_url, "POST", "/runs", {**run, "input": data})

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


def sample_history(storage: SQLiteStorage, workflow_id: int) -> None:
    """Three weeks of purchase orders, decided at known times (the engine's
    clock), for the workflow's figures: waits that vary, a few long ones."""
    from chalicelib import engine

    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=21)

    def at(hours: float) -> engine.Clock:
        stamp = (start + timedelta(hours=hours)).isoformat(timespec="milliseconds")
        return lambda: stamp.replace("+00:00", "Z")

    managers, finance = frozenset({"managers"}), frozenset({"finance"})
    # (start, hours at Manager, at Finance for each approval, at the CFO; None: still waiting)
    waits = [(0, 2, (5, 9), 20), (20, 1, (3, 4), 6), (50, 6, (30, 50), None), (75, 0.5, (2, 3), 3)]
    waits += [(110, 3, (8, 26), 30), (150, 26, (12, 20), 4), (200, 1.5, (4, 6), 8)]
    waits += [(260, 4, (70, 96), 12), (300, 2, (6, 7), None), (380, 8, (10, 40), 2)]
    for number, (begin, manager, (first, second), cfo) in enumerate(waits):
        data = {"amount": 14000 if cfo is not None else 4000, "supplier": "Ergo Office"}
        title, clock = f"PO-{900 + number}", at(begin)
        run = engine.start_run(storage, workflow_id, title, "sam", clock=clock, data=data)
        engine.approve(storage, run.id, "maria", clock=at(begin + manager), groups=managers)
        at_finance = begin + manager
        engine.approve(storage, run.id, "fiona", clock=at(at_finance + first), groups=finance)
        engine.approve(storage, run.id, "finn", clock=at(at_finance + second), groups=finance)
        if cfo is not None:
            engine.approve(storage, run.id, "cfo", clock=at(at_finance + second + cfo))


def notification_views(out: Path) -> None:
    """docs/notifications.md's: an approver's email (its HTML part, 1280 px) and the
    page its Approve link opens (360 px), from a fresh SQLite file, mail as .eml files."""
    from playwright.sync_api import sync_playwright

    from chalicelib.delivery import dispatch, notifier

    with tempfile.TemporaryDirectory() as data, mock.patch.dict(os.environ):
        os.environ.pop("WORKFLOW_AUTH", None)
        os.environ.update(WORKFLOW_MAIL=f"dir:{data}", WORKFLOW_MAIL_FROM="approvals@example.com")
        storage = SQLiteStorage(os.path.join(data, "workflows.sqlite3"))
        app_module.use_storage(storage)
        with local_server.serving(app_module.app, Config.create()) as base_url:
            os.environ["WORKFLOW_PUBLIC_URL"] = base_url
            steps = [{"name": "Manager", "approvers": ["user:maria", "group:finance"]}, "CFO"]
            flow = call(base_url, "POST", "/workflows", {"name": "Purchase order", "steps": steps})
            call(base_url, "PUT", "/contacts/user:maria", {"email": "maria@example.com"})
            run = {"workflow_id": flow["id"], "title": "PO-1042: 12 laptops"}
            run["requested_by"] = "rita"
            run["input"] = {"amount": 14400, "supplier": "Acme Computers", "cost centre": "IT-07"}
            call(base_url, "POST", "/runs", run)
            telling = notifier.local(lambda: storage)
            handed = telling.after(lambda event, now: True)
            dispatch.deliver_due(storage, handed, time.time, lambda attempt: 1.0)
            telling.send_due(time.time())
            (eml,) = Path(data).glob("*.eml")
            mail = message_from_bytes(eml.read_bytes(), policy=policy.default)
            html_part = mail.get_body(("html",))
            assert html_part is not None
            html = str(html_part.get_content())
            approve = re.search(r'href="([^"]*/act/[^"]+)"', html)
            assert approve is not None
            with sync_playwright() as playwright:
                chromium = browser.launch(playwright)
                page = chromium.new_page(viewport={"width": 1280, "height": 600})
                page.set_content(html)
                page.screenshot(path=str(out / "email-1280.png"), full_page=True)
                phone = chromium.new_page(viewport={"width": 360, "height": 640})
                phone.goto(approve.group(1).replace("&amp;", "&"))
                phone.screenshot(path=str(out / "act-360.png"), full_page=True)
                chromium.close()
    print(f"wrote {out / 'email-1280.png'} and {out / 'act-360.png'}")


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
    """A workflow's next version edited in the form, its changes shown (docs/versions.md)."""
    page.get_by_text("Edit as a new version, or retire").first.click()
    editor = page.get_by_role("form", name="Edit Purchase order as version 2")

    def step(number: int) -> Any:
        return editor.get_by_role("group", name=f"Step {number}", exact=True)

    step(1).get_by_label("Step name").fill("Team lead")
    step(2).get_by_label("Approvals needed").fill("1")
    step(2).get_by_label("Deadline, in hours", exact=False).fill("48")
    editor.get_by_role("button", name="Add a step").click()
    step(4).get_by_label("Step name").fill("Legal")
    step(4).get_by_label("Who may decide", exact=True).fill("group:legal")
    editor.get_by_role("button", name="Move step 4 up").click()
    editor.get_by_role("button", name="Show the changes").click()
    editor.locator("ul.changes > li").first.wait_for()


def photograph_edited_card(page: Any, path: Path, width: int) -> None:
    """The workflow edited, not the page of every workflow: its card, the window's width."""
    card = page.locator("li.card").first.bounding_box()
    top = card["y"] + page.evaluate("window.scrollY")
    clip = {"x": 0, "y": top, "width": width, "height": card["height"]}
    page.screenshot(path=str(path), full_page=True, clip=clip)


def sign_in_views(chromium: Any, base_url: str, out: Path) -> None:
    """The page with sign-in on (WORKFLOW_OIDC_ISSUER): before, and signed in as the viewer."""
    from playwright.sync_api import expect

    with (
        oidc_provider.serving(given_users=["=".join(VIEWER)]) as issuer,
        mock.patch.dict(os.environ, oidc_provider.signing_in(issuer)),
    ):
        viewport = {"width": 1280, "height": 600}
        context = chromium.new_context(
            viewport=viewport, base_url=base_url, locale="en-GB", timezone_id="Europe/Lisbon"
        )
        context.route("https://cdn.jsdelivr.net/**", lambda route: route.fulfill(body=""))
        page = context.new_page()
        page.goto("/#/me")
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        page.screenshot(path=str(out / "signin-1280.png"), full_page=True)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name=VIEWER[0], exact=True).click()  # the provider's form
        expect(page.get_by_role("link", name=f"Signed in as {VIEWER[0]}")).to_be_visible()
        page.goto("/#/me")
        expect(page.get_by_role("heading", level=1)).to_have_text("Signed in")
        page.screenshot(path=str(out / "signed-in-1280.png"), full_page=True)
        print(f"wrote {out / 'signin-1280.png'} and {out / 'signed-in-1280.png'}")
        context.close()


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import expect, sync_playwright

    devnull = open(os.devnull, "w")  # noqa: SIM115 - for the whole run
    access_log.set_stream(devnull)
    metric_lines.set_stream(devnull)
    os.environ.pop("WORKFLOW_AUTH", None)
    with tempfile.TemporaryDirectory() as data:
        storage = SQLiteStorage(os.path.join(data, "workflows.sqlite3"))
        app_module.use_storage(storage)
        with local_server.serving(app_module.app, Config.create()) as base_url:
            run = sample_data(base_url)
            sample_delegations(base_url)
            sample_history(storage, run["workflow_id"])
            views = [
                ("inbox", "#/inbox", None),
                ("run", f"#/runs/{run['id']}", run["title"]),
                ("delegations", "#/delegations", "Delegations"),
                ("stats", f"#/workflows/{run['workflow_id']}", "How long Purchase order takes"),
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
                        path = out / f"{name}-{width}.png"
                        if name == "versions":
                            edit_as_a_new_version(page)
                            photograph_edited_card(page, path, width)
                        else:
                            page.screenshot(path=str(path), full_page=True)
                        print(f"wrote {path}")
                    context.close()
                sign_in_views(chromium, base_url, out)
                chromium.close()
    notification_views(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
