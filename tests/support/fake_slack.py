"""A fake Slack Web API on 127.0.0.1 for the Slack tests: chat.postMessage and
chat.update (JSON bodies, a Bearer token checked), and the response_url of
an interaction; every call recorded."""

from __future__ import annotations

import http.server
import itertools
import json
import threading
from typing import Any, NamedTuple

TOKEN = "xoxb-test-token"


class Call(NamedTuple):
    path: str
    authorization: str
    body: dict[str, Any]


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._ts = itertools.count(1)
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                call = Call(self.path, self.headers.get("Authorization", ""), json.loads(raw))
                owner.calls.append(call)
                answer: dict[str, Any] = {"ok": True}
                if self.path.startswith("/api/") and call.authorization != f"Bearer {TOKEN}":
                    answer = {"ok": False, "error": "invalid_auth"}
                elif self.path == "/api/chat.postMessage":
                    answer.update(
                        channel=call.body["channel"], ts=f"1700000000.{next(owner._ts):06d}"
                    )
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def made(self, method: str) -> list[dict[str, Any]]:
        return [call.body for call in self.calls if call.path == f"/api/{method}"]

    def __enter__(self) -> FakeSlack:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
