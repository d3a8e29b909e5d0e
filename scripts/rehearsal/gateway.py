"""API Gateway, played from the template (docs/rehearsal.md, step 5): its REST
API's definition, stage and responses (Gateway), or its HTTP API's routes,
integration and stage (HttpGateway). Each request goes to the function as
its proxy event (scripts/gateway_events.py) if a Permission of the template
lets API Gateway invoke it; what API Gateway answers itself is in its words.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
import secrets
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from scripts.gateway_events import forwarded, proxy_event
from scripts.rehearsal.cloud import ACCOUNT, REGION

ANY_METHOD = "x-amazon-apigateway-any-method"
Invoke = Callable[[dict[str, Any]], tuple[Any, Optional[dict[str, Any]]]]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _pattern(path: str) -> re.Pattern[str]:
    """A path of the definition (/runs/{run_id}) as a regex of what it routes."""
    regex = "".join(
        "/(?P<" + s[1:-1] + ">[^/]+)" if s.startswith("{") else "/" + re.escape(s)
        for s in path.split("/")
        if s
    )
    return re.compile("^" + (regex or "/") + "/?$")


def _literal_segments(path: str) -> int:
    return sum(1 for s in path.split("/") if s and not s.startswith("{"))


class _Api:
    """What API Gateway's two APIs do alike: an API of the template in front
    of one function, which it invokes where a Permission lets it."""

    def __init__(
        self,
        api_id: str,
        stage: str,
        invoke: Invoke,
        function_arn: str,
        permissions: Sequence[Mapping[str, Any]],
    ) -> None:
        self.stage = stage
        self.api_id = api_id
        self.host = f"{api_id}.execute-api.{REGION}.amazonaws.com"
        self._invoke = invoke
        self._function_arn = function_arn
        self._permissions = permissions
        self.invocations = 0

    def request(
        self, method: str, path: str, headers: Mapping[str, str], body: Optional[bytes] = None
    ) -> Answer:
        """`path` is the stage's, with its query: /runs?limit=1 means /<stage>/runs?limit=1.
        Every answer carries API Gateway's request id, in its API's header."""
        route_path, _, query = path.partition("?")
        answer = self._answer(method, route_path, query, headers, body)
        answer.headers.update(self._request_id())
        return answer

    def _answer(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: Optional[bytes]
    ) -> Answer:
        raise NotImplementedError

    def _request_id(self) -> dict[str, str]:
        raise NotImplementedError

    @property
    def base(self) -> str:
        """What precedes the app's routes in the URL: the stage (none for `$default`)."""
        return "" if self.stage == "$default" else f"/{self.stage}"

    def _allowed(self, method: str, resource: str) -> bool:
        """Whether one of the template's Permissions lets API Gateway invoke the
        function for `method` on `resource` (a route of the REST API, a path of
        the HTTP API)."""
        source = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{self.api_id}/{self.stage}/"
        return any(
            permission.get("Principal") == "apigateway.amazonaws.com"
            and permission.get("Action") == "lambda:InvokeFunction"
            and permission.get("FunctionName")
            in (self._function_arn, self._function_arn.split(":")[-1])
            and fnmatch.fnmatchcase(source + method + resource, permission.get("SourceArn", "*"))
            for permission in self._permissions
        )

    def _proxied(self, event: dict[str, Any]) -> Optional[Answer]:
        """The function's answer to `event` as the client gets it; None if it failed."""
        self.invocations += 1
        result, error = self._invoke(event)
        if error is not None or not isinstance(result, dict) or "statusCode" not in result:
            return None
        headers = {k.lower(): str(v) for k, v in (result.get("headers") or {}).items()}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers[name.lower()] = ",".join(str(v) for v in values)
        body = result.get("body") or ""
        raw = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode("utf-8")
        headers.setdefault("content-type", "application/json")
        return Answer(int(result["statusCode"]), headers, raw)


def _static_headers(response: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """The headers a mock or gateway response sets: `prefix` + name, a quoted value."""
    parameters = response.get("responseParameters", {})
    return {
        name.removeprefix(prefix).lower(): value.strip("'") for name, value in parameters.items()
    }


def _message(status: int, message: str) -> Answer:
    """An answer of API Gateway's own, in its words: `{"message": ...}`."""
    body = json.dumps({"message": message}).encode()
    return Answer(status, {"content-type": "application/json"}, body)


class Gateway(_Api):
    def __init__(
        self,
        definition: Mapping[str, Any],
        stage: str,
        api_id: str,
        invoke: Invoke,
        function_arn: str,
        permissions: Sequence[Mapping[str, Any]],
        endpoint_types: Sequence[str],
    ) -> None:
        super().__init__(api_id, stage, invoke, function_arn, permissions)
        self._edge = "EDGE" in endpoint_types
        self._responses: Mapping[str, Any] = definition.get(
            "x-amazon-apigateway-gateway-responses", {}
        )
        self._binary = list(definition.get("x-amazon-apigateway-binary-media-types", []))
        # Literal segments match before parameters, as API Gateway matches.
        paths = sorted(definition["paths"].items(), key=lambda item: -_literal_segments(item[0]))
        self._routes = [(path, _pattern(path), methods) for path, methods in paths]

    def _request_id(self) -> dict[str, str]:
        return {"x-amzn-requestid": str(uuid.uuid4())}

    def _answer(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: Optional[bytes]
    ) -> Answer:
        for route, pattern, methods in self._routes:
            match = pattern.match(path)
            if match is None:
                continue
            # A method of its own first, then the path's ANY, as API Gateway matches.
            operation = methods.get(method.lower()) or methods.get(ANY_METHOD)
            if operation is None:
                break
            integration = operation["x-amazon-apigateway-integration"]
            if integration["type"] == "mock":
                return self._mock(integration)
            if integration["type"] != "aws_proxy":
                raise NotImplementedError(f"{integration['type']} integrations are not played")
            event = self._event(method, route, path, match.groupdict(), query, headers, body)
            return self._proxy(event)
        return self._gateway_response(
            "MISSING_AUTHENTICATION_TOKEN", 403, "Missing Authentication Token"
        )

    def _event(
        self,
        method: str,
        route: str,
        path: str,
        parameters: dict[str, str],
        query: str,
        headers: Mapping[str, str],
        body: Optional[bytes],
    ) -> dict[str, Any]:
        edge = {"Via": "2.0 rehearsal.cloudfront.net (CloudFront)"} if self._edge else {}
        sent = forwarded(self.host, {**edge, **headers})
        content_type = next((v for k, v in sent.items() if k.lower() == "content-type"), "")
        return proxy_event(
            method,
            path,
            sent,
            body,
            http_api=False,
            query=query,
            route=route,
            path_parameters={k: urllib.parse.unquote(v) for k, v in parameters.items()},
            stage=self.stage,
            binary=body is not None and self._is_binary(content_type),
            api_id=self.api_id,
            account=ACCOUNT,
        )

    def _is_binary(self, content_type: str) -> bool:
        kind = content_type.split(";")[0].strip().lower()
        return any(fnmatch.fnmatch(kind, pattern) for pattern in self._binary)

    def _proxy(self, event: dict[str, Any]) -> Answer:
        if not self._allowed(event["httpMethod"], event["resource"]):
            # API Gateway cannot invoke the function: 500, "Internal server error".
            return self._gateway_response("DEFAULT_5XX", 500, "Internal server error")
        answer = self._proxied(event)
        if answer is None:
            return self._gateway_response("DEFAULT_5XX", 502, "Internal server error")
        return answer

    def _mock(self, integration: Mapping[str, Any]) -> Answer:
        response = integration["responses"]["default"]
        headers = _static_headers(response, "method.response.header.")
        headers.setdefault("content-type", "application/json")
        return Answer(int(response["statusCode"]), headers, b"")

    def _gateway_response(self, kind: str, status: int, message: str) -> Answer:
        family = f"DEFAULT_{str(status)[0]}XX"
        response = self._responses.get(kind) or self._responses.get(family)
        if response is None:
            return _message(status, message)
        headers = _static_headers(response, "gatewayresponse.header.")
        template = response.get("responseTemplates", {}).get("application/json", "")
        body = template.replace("$context.error.messageString", json.dumps(message))
        headers["content-type"] = "application/json"
        return Answer(int(response.get("statusCode", status)), headers, body.encode())


class HttpGateway(_Api):
    """API Gateway's HTTP API: its routes (a `$default` route takes what no
    other does), its Lambda integration's payload format 1.0 event, its stage,
    and what it answers itself: `{"message": ...}` in its own words, with its
    `apigw-requestid`, and without the allowed origin (the function answers
    preflights, as no CORS configuration is given)."""

    def __init__(
        self,
        api_id: str,
        stage: str,
        routes: Sequence[Mapping[str, Any]],
        integrations: Mapping[str, Mapping[str, Any]],
        invoke: Invoke,
        function_arn: str,
        permissions: Sequence[Mapping[str, Any]],
    ) -> None:
        super().__init__(api_id, stage, invoke, function_arn, permissions)
        self._routes = {route["RouteKey"]: route for route in routes}
        self._integrations = integrations

    def _request_id(self) -> dict[str, str]:
        return {"apigw-requestid": secrets.token_urlsafe(12)}

    def _answer(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: Optional[bytes]
    ) -> Answer:
        route = self._routes.get(f"{method} {path}") or self._routes.get("$default")
        if route is None:
            return _message(404, "Not Found")
        target = str(route.get("Target", ""))
        integration = self._integrations.get(target.removeprefix("integrations/"))
        if integration is None or integration.get("IntegrationType") != "AWS_PROXY":
            raise NotImplementedError(f"route {route['RouteKey']}: only Lambda proxies are played")
        if integration.get("PayloadFormatVersion") != "1.0":
            raise NotImplementedError("only payload format 1.0 is played (the app's)")
        event = proxy_event(
            method,
            path,
            forwarded(self.host, headers),
            body,
            http_api=True,
            query=query,
            route=route["RouteKey"],
            stage=self.stage,
            api_id=self.api_id,
            account=ACCOUNT,
            request_id=secrets.token_urlsafe(12),
        )
        if not self._allowed(method, path):
            return _message(500, "Internal Server Error")
        return self._proxied(event) or _message(500, "Internal Server Error")
