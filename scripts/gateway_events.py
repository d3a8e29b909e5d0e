"""The Lambda proxy event API Gateway sends for one request: the REST API's,
or the HTTP API's payload format 1.0, which has the same shape.

One builder for whoever plays API Gateway in front of the packaged function:
the rehearsal's gateways (scripts/rehearsal/gateway.py), the tests' HTTP API
client (tests/support/http_api.py) and the benchmarks (bench/_common.py).

The two APIs fill the shape differently (AWS's payload 1.0 documentation,
and captured events):

- REST: `resource` and `requestContext.resourcePath` are the definition's
  route (`/runs/{run_id}`), `pathParameters` its parameters, `path` the path
  without the stage and `requestContext.path` with it; a body is base64 when
  its type is one of the API's binary media types.
- HTTP API: `version` "1.0", `resource` and `resourcePath` the route key
  (`$default`), `pathParameters` null, `path` as requested (a named stage's
  prefix included); a body is text when its type is, base64 otherwise.
"""

from __future__ import annotations

import base64
import secrets
import time
import urllib.parse
import uuid
from collections.abc import Mapping
from typing import Any, Optional

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")
DEFAULT_STAGE = "$default"
# What a request's identity holds (null) where API Gateway verified no caller.
NO_IDENTITY = (
    "accessKey",
    "accountId",
    "caller",
    "cognitoAmr",
    "cognitoAuthenticationProvider",
    "cognitoAuthenticationType",
    "cognitoIdentityId",
    "cognitoIdentityPoolId",
    "principalOrgId",
    "user",
    "userArn",
)


def forwarded(host: str, headers: Mapping[str, str], now: Optional[float] = None) -> dict[str, str]:
    """The headers API Gateway adds in front of the client's (which win)."""
    now = time.time() if now is None else now
    return {
        "Host": host,
        "X-Forwarded-For": "127.0.0.1",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
        "X-Amzn-Trace-Id": f"Root=1-{int(now):08x}-{secrets.token_hex(12)}",
        **headers,
    }


def proxy_event(
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: Optional[bytes] = None,
    *,
    http_api: bool,
    query: str = "",
    route: str = DEFAULT_STAGE,
    path_parameters: Optional[Mapping[str, str]] = None,
    stage: str = DEFAULT_STAGE,
    binary: Optional[bool] = None,
    api_id: str = "abcdef1234",
    account: str = "123456789012",
    request_id: Optional[str] = None,
    now: Optional[float] = None,
) -> dict[str, Any]:
    """The event of `method` `path` (the stage's path, without its query),
    as the REST API (`route`, `path_parameters`) or the HTTP API (route
    `$default`) sends it. `binary`: whether the body goes as base64 (None:
    as an HTTP API decides, by its type)."""
    now = time.time() if now is None else now
    request_id = request_id or str(uuid.uuid4())
    staged = path if stage == DEFAULT_STAGE else f"/{stage}{path}"
    multi_query: dict[str, list[str]] = {}
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        multi_query.setdefault(name, []).append(value)
    if binary is None:  # an HTTP API passes a body of a text type as text
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        binary = bool(body and content_type) and not content_type.lower().startswith(TEXT_TYPES)
    event = {
        "resource": route,
        "path": staged if http_api else path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        # The last value of a repeated parameter, as the single-value map holds.
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": dict(path_parameters or {}) or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": account,
            "apiId": api_id,
            "domainName": headers.get("Host", f"{api_id}.execute-api.us-east-1.amazonaws.com"),
            "domainPrefix": api_id,
            "extendedRequestId": secrets.token_urlsafe(12),
            "httpMethod": method,
            "identity": {
                **dict.fromkeys(NO_IDENTITY),
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("User-Agent", ""),
            },
            "path": staged,
            "protocol": "HTTP/1.1",
            "requestId": request_id,
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "resourceId": route if http_api else secrets.token_hex(3),
            "resourcePath": route,
            "stage": stage,
        },
        "body": None
        if not body
        else (base64.b64encode(body).decode("ascii") if binary else body.decode("utf-8")),
        "isBase64Encoded": bool(body) and binary,
    }
    return {"version": "1.0", **event} if http_api else event
