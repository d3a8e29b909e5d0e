"""Requests as API Gateway's HTTP API sends them: payload format 1.0 events
for its one `$default` route, handed to the packaged entry point
(chalicelib/http_api.py), and answers as the HTTP API returns them.

The event is the one AWS documents for payload 1.0 and a captured one shows
for a `$default` route on the `$default` stage: `version` "1.0", `resource`
and `requestContext.resourcePath` "$default", `pathParameters` null, the
path as requested (a named stage's prefix included), single- and multi-value
headers and query parameters, a text body as sent and any other base64.

`HttpApiClient` has chalice.test.Client's `http.request`, so that a session
written for the REST API's test client can be played through the HTTP API.
"""

from __future__ import annotations

import base64
import itertools
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any, Optional

from chalice.test import HTTPResponse

_requests = itertools.count(1)
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


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
    full_path = route_path if stage == "$default" else f"/{stage}{route_path}"
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    multi_query: dict[str, list[str]] = {}
    for name, value in pairs:
        multi_query.setdefault(name, []).append(value)
    sent = {
        "Host": "abcdef1234.execute-api.us-east-1.amazonaws.com",
        "X-Forwarded-For": "127.0.0.1",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
        **(headers or {}),
    }
    content_type = next((v for k, v in sent.items() if k.lower() == "content-type"), "")
    text = content_type.startswith(TEXT_TYPES) or not content_type
    request_id = f"http-api-{next(_requests)}"
    return {
        "version": "1.0",
        "resource": "$default",
        "path": full_path,
        "httpMethod": method,
        "headers": dict(sent),
        "multiValueHeaders": {name: [value] for name, value in sent.items()},
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abcdef1234",
            "domainName": sent["Host"],
            "domainPrefix": "abcdef1234",
            "extendedRequestId": request_id,
            "httpMethod": method,
            "identity": {"sourceIp": "127.0.0.1", "userAgent": sent.get("User-Agent", "")},
            "path": full_path,
            "protocol": "HTTP/1.1",
            "requestId": request_id,
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "requestTimeEpoch": int(time.time() * 1000),
            "resourceId": "$default",
            "resourcePath": "$default",
            "stage": stage,
        },
        "pathParameters": None,
        "stageVariables": None,
        "body": None
        if not body
        else (body.decode("utf-8") if text else base64.b64encode(body).decode("ascii")),
        "isBase64Encoded": bool(body) and not text,
    }


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
