"""Screenshots of a notification for docs/notifications.md: an approver's
email (its HTML part, 1280 px) and the confirmation page its Approve link
opens (360 px: a phone), on sample data.

    python scripts/notification_screenshots.py docs/screenshots

The app is served in this process from a fresh SQLite file (WORKFLOW_AUTH=none),
its mail written as .eml files (WORKFLOW_MAIL=dir:), and photographed by
Debian's headless Chromium (scripts/browser.py), as scripts/screenshots.py does.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalice.config import Config

import app as app_module
from chalicelib.api import access_log
from chalicelib.delivery import dispatch, notifier
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from scripts import browser, local_server
from scripts.screenshots import call


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    access_log.set_stream(open(os.devnull, "w"))  # noqa: SIM115 - for the whole run
    os.environ.pop("WORKFLOW_AUTH", None)
    with tempfile.TemporaryDirectory() as data:
        storage = SQLiteStorage(os.path.join(data, "workflows.sqlite3"))
        app_module.use_storage(storage)
        os.environ["WORKFLOW_MAIL"] = f"dir:{data}/mail"
        os.environ["WORKFLOW_MAIL_FROM"] = "approvals@example.com"
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
            (eml,) = Path(data, "mail").glob("*.eml")
            mail = message_from_bytes(eml.read_bytes(), policy=policy.default)
            assert isinstance(mail, EmailMessage)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
