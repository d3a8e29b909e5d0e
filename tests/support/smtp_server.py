"""A small SMTP server on 127.0.0.1 for the notification tests: the protocol's
few commands a client sends one message with (RFC 5321), each message kept
as received; `failing` answers 451 to MAIL, as a server that cannot take
mail now does. Written here: aiosmtpd is not among the project's tools, and
the standard library's smtpd is deprecated (and gone in 3.12)."""

from __future__ import annotations

import email
import email.policy
import socketserver
import threading
from email.message import EmailMessage
from typing import Any


class _Session(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        self._reply("220 localhost test SMTP")
        while line := self.rfile.readline():
            verb = line.decode("ascii", "replace").strip().split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self._reply("250 localhost")
            elif verb == "MAIL":
                self._reply("451 try again later" if self.server.owner.failing else "250 OK")
            elif verb in ("RCPT", "RSET", "NOOP"):
                self._reply("250 OK")
            elif verb == "DATA":
                self._reply("354 end with <CRLF>.<CRLF>")
                self._message()
            elif verb == "QUIT":
                self._reply("221 bye")
                return
            else:
                self._reply("502 not implemented")

    def _message(self) -> None:
        lines = []
        while (line := self.rfile.readline()) not in (b".\r\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)
        parsed = email.message_from_bytes(b"".join(lines), policy=email.policy.default)
        self.server.owner.received.append(parsed)
        self._reply("250 queued")

    def _reply(self, text: str) -> None:
        self.wfile.write(text.encode("ascii") + b"\r\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: SmtpServer


class SmtpServer:
    """Start with `with SmtpServer() as smtp:`; `smtp.url` is WORKFLOW_MAIL's value."""

    def __init__(self) -> None:
        self.received: list[EmailMessage] = []
        self.failing = False
        self._server = _Server(("127.0.0.1", 0), _Session)
        self._server.owner = self

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> SmtpServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
