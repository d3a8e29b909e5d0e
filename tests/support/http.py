"""Plain HTTP to a server on loopback, for tests/local/."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any, Optional

TIMEOUT = 10


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: Optional[Any] = None,
    headers: Optional[dict[str, str]] = None,
) -> Answer:
    """One request on `connection` (kept open for the next one)."""
    raw = None if body is None else json.dumps(body).encode("utf-8")
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    connection.request(method, path, body=raw, headers=all_headers)
    response = connection.getresponse()
    return Answer(response.status, response.headers, response.read())


def request(
    port: int,
    method: str,
    path: str,
    body: Optional[Any] = None,
    headers: Optional[dict[str, str]] = None,
    host: str = "127.0.0.1",
) -> Answer:
    """One request on a connection of its own."""
    connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
    try:
        return send(connection, method, path, body, headers)
    finally:
        connection.close()


@dataclass
class RawAnswer:
    """An answer read off a raw socket: its status, header fields (names in
    lower case), body and how long it took from the first byte sent; `closed`:
    whether the server closed the connection right after it (None: not looked at)."""

    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float
    closed: Optional[bool]

    def json(self) -> Any:
        return json.loads(self.body)


def raw_exchange(
    port: int,
    data: bytes,
    *,
    close_sending: bool = False,
    check_closed: bool = False,
    timeout: float = 30,
    host: str = "127.0.0.1",
) -> RawAnswer:
    """Send `data` as it is on a connection of its own (then close the sending
    side, with `close_sending`), and read one answer (and, with `check_closed`,
    whether the server closes the connection within a second after it)."""
    import socket
    import time

    with socket.create_connection((host, port), timeout=timeout) as connection:
        started = time.monotonic()
        connection.sendall(data)
        if close_sending:
            connection.shutdown(socket.SHUT_WR)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            assert chunk, f"the connection closed before an answer: {received!r}"
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        status_line, *fields = head.decode("latin-1").split("\r\n")
        headers = {}
        for field in fields:
            name, _, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = connection.recv(65536)
            assert chunk, "the connection closed inside the answer's body"
            body += chunk
        seconds = time.monotonic() - started
        closed = None
        if check_closed:
            connection.settimeout(1.0)
            try:
                closed = connection.recv(1) == b""
            except TimeoutError:
                closed = False
        return RawAnswer(int(status_line.split()[1]), headers, body[:length], seconds, closed)
