"""A webhook receiver on 127.0.0.1 for the delivery tests: it records every
request, checks its Standard Webhooks signature, and answers what the test says
(a redirect names MOVED, which answers 204 to any method)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple

MOVED = "/moved"

SECRET = "whsec_" + base64.b64encode(b"a test key of thirty-two bytes!!").decode()


def verify(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """The Standard Webhooks check, written from the specification, not from the
    service's code (the rehearsal's receivers check with it too)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(part.partition(",")[2], expected)
        for part in headers.get("webhook-signature", "").split()
        if part.startswith("v1,")
    )


class Received(NamedTuple):
    headers: dict[str, str]
    body: bytes
    status: int
    method: str = "POST"
    path: str = "/hooks"

    @property
    def event(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


class Receiver:
    """Answers 204 (500 while `failing`, `answer` where set), records what it got."""

    def __init__(self, secret: str = SECRET) -> None:
        self.secret = secret
        self.received: list[Received] = []
        self.failing = False
        self.answer: int | None = None
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {name.lower(): value for name, value in self.headers.items()}
                with receiver.lock:
                    status = receiver.status(headers, body, self.path)
                    got = Received(headers, body, status, self.command, self.path)
                    receiver.received.append(got)
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", MOVED)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        # shutdown() waits for the loop to look again: every 0.05 s, not every 0.5 s.
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def status(self, headers: dict[str, str], body: bytes, path: str) -> int:
        """What a request is answered (under the lock)."""
        if path == MOVED:
            return 204
        return 500 if self.failing else self.answer or 204

    def deduped(self) -> list[dict[str, Any]]:
        """The events received, each id once (the first time), in arrival order;
        every one signed."""
        seen: dict[str, dict[str, Any]] = {}
        with self.lock:
            received = list(self.received)
        for got in received:
            assert got.headers["content-type"] == "application/cloudevents+json"
            assert verify(self.secret, got.headers, got.body), got.headers
            assert got.headers["webhook-id"] == got.event["id"]
            seen.setdefault(got.event["id"], got.event)
        return list(seen.values())

    def assert_in_order(self) -> None:
        """No event of a subject arrived before every earlier one was accepted
        (answered 2xx), and none was accepted twice... unless sent again after
        a crash, which only the same id may be."""
        accepted: dict[str, int] = {}
        with self.lock:
            received = list(self.received)
        for got in received:
            event = got.event
            sequence = int(event["sequence"])
            done = accepted.get(event["subject"], 0)
            assert sequence <= done + 1, (event["subject"], sequence, done)
            if got.status < 300:
                accepted[event["subject"]] = max(done, sequence)
