"""Notifications as people meet them: make run's server (scripts/local_server.py)
in a process of its own, a real SMTP server on loopback, real HTTP, on each
backend. The arrival's email and the deadline's reminder arrive; the link's
page changes nothing, its form decides once, then 410; the token is in no
line the server wrote. Without WORKFLOW_MAIL, make run writes .eml files
and names each in its log."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.local.test_events_over_http import Server, backend_env, eventually
from tests.support.http import request
from tests.support.smtp_server import SmtpServer

__all__ = ["backend_env"]  # the fixture, shared
PUBLIC_URL = "https://approvals.example.com"
LINK = re.compile(re.escape(PUBLIC_URL) + r"/act/([A-Za-z0-9_-]{43})")


def text(message: Any) -> str:
    return str(message.get_body(("plain",)).get_content())


def test_mail_and_links_over_real_http(backend_env: dict[str, str], tmp_path: Path) -> None:
    with SmtpServer() as smtp:
        env = {
            **backend_env,
            "WORKFLOW_MAIL": smtp.url,
            "WORKFLOW_PUBLIC_URL": PUBLIC_URL,
            "WORKFLOW_SWEEP_SECONDS": "1",
        }
        server = Server(env, tmp_path)
        try:
            server.start()
            steps = [{"name": "Manager", "approvers": ["user:maria"], "deadline_seconds": 1}]
            flow = server.call("POST", "/workflows", {"name": "PO", "steps": steps}, 201)
            server.call("PUT", "/contacts/user:maria", {"email": "maria@example.com"})
            run = {"workflow_id": flow["id"], "title": "PO-1", "requested_by": "rita"}
            run_id = server.call("POST", "/runs", run, 201)["id"]
            eventually(lambda: len(smtp.received) >= 2, 20, "the arrival and the reminder")
            subjects = sorted(str(m["Subject"]) for m in smtp.received)
            assert subjects == [
                "[PO] PO-1 waits for you at Manager",
                "[PO] Reminder: PO-1 waits for you at Manager",
            ]
            token = LINK.findall(text(smtp.received[0]))[0]

            page = request(server.port, "GET", f"/act/{token}")
            assert page.status == 200 and page.headers["Referrer-Policy"] == "no-referrer"
            assert server.call("GET", f"/runs/{run_id}")["actions"] == []
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            raw = urlencode({"comment": "ok"})
            decided = _post(server.port, f"/act/{token}", raw, form)
            assert decided.status == 200, decided.body
            assert server.call("GET", f"/runs/{run_id}")["status"] == "completed"
            assert _post(server.port, f"/act/{token}", raw, form).status == 410
            assert request(server.port, "GET", f"/act/{'A' * 43}").status == 404
            time.sleep(0.5)  # the server's last lines
        finally:
            server.close()
        written = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("std*"))
        assert token not in written and "/act/{token}" in written


def _post(port: int, path: str, raw: str, headers: dict[str, str]) -> Any:
    import http.client

    from tests.support.http import Answer

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body=raw.encode(), headers=headers)
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def test_make_run_writes_each_email_as_an_eml_file_named_in_its_log(tmp_path: Path) -> None:
    from tests.support.processes import command_env

    server = Server(command_env(tmp_path, WORKFLOW_PUBLIC_URL=PUBLIC_URL), tmp_path)
    try:
        server.start()
        steps = [{"name": "Manager", "approvers": ["user:maria"]}]
        flow = server.call("POST", "/workflows", {"name": "PO", "steps": steps}, 201)
        server.call("PUT", "/contacts/user:maria", {"email": "maria@example.com"})
        server.call("POST", "/runs", {"workflow_id": flow["id"], "title": "PO-1"}, 201)
        found = eventually(lambda: list((tmp_path / "mail").glob("*.eml")), 10, "an .eml file")
    finally:
        server.close()
    logged = (tmp_path / "server-1" / "stderr").read_text()
    assert f"sent arrived of run 1 to user:maria: {found[0]}" in logged
