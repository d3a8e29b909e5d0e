"""Requests as API Gateway's HTTP API sends them: payload format 1.0 events
for its one `$default` route, handed to the packaged entry point
(chalicelib/http_api.py), and answers as the HTTP API returns them.

The event is the one AWS documents for payload 1.0 and a captured one shows
for a `$default` route (scripts/gateway_events.py, which the rehearsal's
HTTP API builds it with too).

`HttpApiClient` has chalice.test.Client's `http.request`, so that a session
written for the REST API's test client can be played through the HTTP API.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Mapping
from typing import Any, Optional

from chalice.test import HTTPResponse

from scripts.gateway_events import proxy_event

_requests = itertools.count(1)
API_ID = "abcdef1234"


def event(
    method: str,
    path: str,
    headers: Optional[Mapping[str, str]] = None,
    body: Optional[bytes] = None,
    stage: str = "$default",
) -> dict[str, Any]:
    """The payload 1.0 event of one request; `path` may carry a query, and
    is prefixed with a named stage as the HTTP API names it."""
    route_path, _, query = path.partition("?")
    sent = {
        "Host": f"{API_ID}.execute-api.us-east-1.amazonaws.com",
        "X-Forwarded-For": "127.0.0.1",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
        **(headers or {}),
    }
    return proxy_event(
        method,
        route_path,
        sent,
        body,
        http_api=True,
        query=query,
        stage=stage,
        api_id=API_ID,
        request_id=f"http-api-{next(_requests)}",
    )


def answer(result: Mapping[str, Any]) -> HTTPResponse:
    """The function's payload 1.0 answer as the HTTP API returns it: the
    multi-value headers joined into the single ones."""
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode("utf-8")
    headers = {name: str(value) for name, value in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(str(value) for value in values)
    return HTTPResponse(body=body, headers=headers, status_code=int(result["statusCode"]))


class _Http:
    def __init__(self, stage: str) -> None:
        self.stage = stage

    def request(
        self,
        method: str,
        path: str,
        headers: Optional[dict[str, str]] = None,
        body: bytes = b"",
    ) -> HTTPResponse:
        from chalicelib import http_api

        sent = event(method.upper(), path, headers, body, self.stage)
        return answer(http_api.handler(sent, None))

    def get(self, path: str, **kwargs: Any) -> HTTPResponse:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> HTTPResponse:
        return self.request("POST", path, **kwargs)


class HttpApiClient:
    """chalice.test.Client's `http`, through the HTTP API's entry point."""

    def __init__(self, stage: str = "$default") -> None:
        self.http = _Http(stage)
