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
