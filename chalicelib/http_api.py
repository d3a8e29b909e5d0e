"""API Gateway's HTTP API in front of the same app: the function's entry point.

The packaged stack serves the API through an HTTP API by default (ApiType=http,
deploy/stack.yaml), with one `$default` route to the function and Lambda's
payload format 1.0. That event has the REST API's shape, with one difference
Chalice cannot route around: it names no route. `resource` and
`requestContext.resourcePath` are "$default" and `pathParameters` is null,
where Chalice looks a request's view up by its route (`/runs/{run_id}`) and
reads the route's parameters from `pathParameters`. `handler` finds the
route the path matches, as `make run` does (chalice's RouteMatcher: the
routes in text order, so literal segments before {parameters}), and hands the
app the event a REST API would have sent: the route, its parameters, and the
path without the stage.

What a REST API answers itself, from its definition, an HTTP API leaves to
the function, so the function answers it here, as the REST API does:

- a path no route matches: 404 `{"error": "No route matches this path"}`,
  with the allowed origin (the REST API's MISSING_AUTHENTICATION_TOKEN
  gateway response, and `make run`'s answer);
- a browser's CORS preflight (OPTIONS on a route that has none of its own):
  200 with the headers the REST API's mock integration answers, which chalice
  writes from the same CORS configuration (the route's methods, OPTIONS, the
  allowed headers and origin, the exposed headers, the max age).

Each gets its access line, as every request the app serves does. A REST
API's event (its resourcePath is a route) reaches the app unchanged: the
packaged function has this one entry point whichever API is in front of it.

What neither the app nor this module can answer in the service's shape is
what the HTTP API answers itself (throttling, a function that failed or
timed out, a body too large): `{"message": ...}`, without the allowed
origin (docs/deploy.md).
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any, Optional

from chalice.app import CORSConfig

from app import app
from chalicelib.api import access_log

NO_ROUTE = "No route matches this path"
DEFAULT_STAGE = "$default"


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The API function's entry point (the packaged template's Handler)."""
    routes = app.routes
    request_context = event.get("requestContext") or {}
    if request_context.get("resourcePath") in routes:
        return app(event, context)
    started = time.perf_counter()
    path = event.get("path") or "/"
    matched = match(sorted(routes), route_path(path, request_context.get("stage")))
    method = str(event.get("httpMethod") or request_context.get("httpMethod") or "")
    if matched is None:
        return _own_answer(404, _error_body(NO_ROUTE), event, method, None, started)
    route, parameters, relative = matched
    if method == "OPTIONS" and "OPTIONS" not in routes[route]:
        headers = preflight_headers(routes[route])
        if headers is not None:
            return _own_answer(200, "", event, method, route, started, headers)
    return app(as_rest_event(event, route, parameters, relative), context)


def route_path(path: str, stage: Optional[str]) -> str:
    """The path as the app's routes see it: without a named stage's prefix
    (an HTTP API's payload 1.0 names the path as requested, stage and all;
    the `$default` stage has none), and without a trailing slash but the root's."""
    if stage and stage != DEFAULT_STAGE:
        prefix = f"/{stage}"
        if path == prefix or path.startswith(prefix + "/"):
            path = path[len(prefix) :] or "/"
    if path != "/" and path.endswith("/"):
        path = path[:-1]
    return path


def match(routes: list[str], path: str) -> Optional[tuple[str, dict[str, str], str]]:
    """The first of `routes` (in the order given) that `path` matches: the
    route, its parameters (URL-decoded, as API Gateway passes them), and the
    path matched; None if none does."""
    parts = path.split("/")
    for route in routes:
        pattern = route.split("/")
        if len(pattern) != len(parts):
            continue
        captured: dict[str, str] = {}
        for given, expected in zip(parts, pattern, strict=True):
            if expected.startswith("{") and expected.endswith("}"):
                if not given:
                    break
                captured[expected[1:-1]] = urllib.parse.unquote(given)
            elif given != expected:
                break
        else:
            return route, captured, path
    return None


def as_rest_event(
    event: dict[str, Any], route: str, parameters: dict[str, str], path: str
) -> dict[str, Any]:
    """The REST API's proxy event for the same request: its route, its
    parameters, the path after the stage (the request context's path keeps
    the stage, as the REST API's does, for the app's base path)."""
    request_context = dict(event.get("requestContext") or {})
    request_context.setdefault("path", event.get("path") or path)
    request_context["resourcePath"] = route
    return {
        **event,
        "resource": route,
        "path": path,
        "pathParameters": parameters or None,
        "requestContext": request_context,
    }


def preflight_headers(methods: Mapping[str, Any]) -> Optional[dict[str, str]]:
    """What the REST API's mock integration answers a preflight of a route
    with these views (chalice's swagger: the CORS headers, the methods and
    OPTIONS); None if no view of the route allows CORS (the REST API then has
    no preflight, and the app answers OPTIONS 405)."""
    allowing = [name for name, view in methods.items() if view.cors]
    if not allowing:
        return None
    headers = {"Access-Control-Allow-Methods": ",".join([*allowing, "OPTIONS"])}
    headers.update(methods[allowing[0]].cors.get_access_control_headers())
    return headers


def _error_body(message: str) -> str:
    return json.dumps({"error": message}, separators=(",", ":"))


def _own_answer(
    status: int,
    body: str,
    event: Mapping[str, Any],
    method: str,
    route: Optional[str],
    started: float,
    headers: Optional[dict[str, str]] = None,
) -> dict[str, Any]:
    """An answer of this module's own, with the request id and the allowed
    origin every answer of the app has, and its access line."""
    request_id = (event.get("requestContext") or {}).get("requestId") or (
        access_log.new_request_id()
    )
    sent = {"Content-Type": "application/json", **(headers or {}), "X-Request-Id": request_id}
    cors = app.api.cors
    if isinstance(cors, CORSConfig):
        sent.setdefault("Access-Control-Allow-Origin", cors.allow_origin)
    access_log.write(
        {
            "request_id": request_id,
            "method": method or None,
            "route": route,
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        }
    )
    return {
        "statusCode": status,
        "headers": sent,
        "multiValueHeaders": {},
        "body": "" if method == "HEAD" else body,
        "isBase64Encoded": False,
    }
