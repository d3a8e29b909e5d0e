"""HTTP around the routes: JSON in and out, domain errors as status codes, safe
retries with an Idempotency-Key, and the paths API Gateway puts before ours.

The one place that knows status codes: a view returns a record or raises a
domain error, and `JsonApi.answers` turns either into a response (the
record's shape: chalicelib/api/representations.py).
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from chalice.app import Chalice, CORSConfig, Request, Response

from chalicelib.api import access_log, identity, representations
from chalicelib.domain import errors
from chalicelib.domain.shapes import compact_ascii

if TYPE_CHECKING:
    from chalicelib.api.representations import Answer
    from chalicelib.api.signin import Outcome
    from chalicelib.domain.idempotency import KeyStore, StoredResponse

# A kind before the kind it refines: status_of answers the first that matches.
STATUS: dict[type[errors.WorkflowError], int] = {
    errors.PayloadTooLarge: 413,
    errors.Unprocessable: 422,
    errors.InvalidInput: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.Gone: 410,
    errors.IdempotencyMismatch: 422,
    errors.Unavailable: 503,
}

if TYPE_CHECKING:
    Headers = dict[str, Union[str, list[str]]]
JSON_HEADERS: Mapping[str, str] = {"Content-Type": "application/json"}
# The cookie of a signed-in session (chalicelib/api/sessions.py names it too).
SESSION_COOKIE = "__Host-approvals-session"
# Where a request's verified caller is kept for its view (see JsonApi.caller).
_CALLER = "approval-workflows.caller"
# Refused with 413 before any parsing: no request of this API comes near it.
MAX_BODY_BYTES = 1024 * 1024
_OPENAPI_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "openapi.json"
)


class StageCORS(CORSConfig):
    """CORS whose allowed origin each stage sets with WORKFLOW_CORS_ORIGIN."""

    @property
    def allow_origin(self) -> str:
        origin = os.environ.get("WORKFLOW_CORS_ORIGIN", "*").strip() or "*"
        if origin == "*" and os.environ.get("WORKFLOW_AUTH", "").strip().lower() == "jwt":
            # Never every origin beside authentication: browsers then refuse
            # other pages until WORKFLOW_CORS_ORIGIN names the one allowed.
            return "null"
        return origin

    @allow_origin.setter
    def allow_origin(self, value: str) -> None:
        """The origin comes from the environment when asked, not from here."""

    def get_access_control_headers(self) -> dict[str, str]:
        """Chalice's CORS headers, built once per allowed origin: Chalice asks on
        every request, and building them (sorting and joining the header lists)
        cost more than anything else CORS does."""
        origin = self.allow_origin
        headers = self._built.get(origin)
        if headers is None:
            headers = self._built[origin] = super().get_access_control_headers()
        return dict(headers)

    @functools.cached_property
    def _built(self) -> dict[str, dict[str, str]]:
        return {}


def cors() -> StageCORS:
    return StageCORS(
        allow_headers=["Idempotency-Key", "X-Request-Id", "Prefer"],
        expose_headers=["Location", "X-Request-Id", "Idempotent-Replayed", "Preference-Applied"],
        max_age=600,
    )


def status_of(exc: errors.WorkflowError) -> int:
    return next(code for kind, code in STATUS.items() if isinstance(exc, kind))


# What Chalice would write for a body it serialises: compact, ASCII-escaped.
_encode = compact_ascii


def json_response(body: Any, status: int, headers: Optional[Mapping[str, str]] = None) -> Response:
    """A JSON answer; its body is encoded here, as Chalice would encode it."""
    return json_text_response(_encode(body), status, headers)


def json_text_response(
    text: str, status: int, headers: Optional[Mapping[str, str]] = None
) -> Response:
    """A JSON answer whose body is already encoded (`text`)."""
    all_headers: Headers = {**JSON_HEADERS, **(headers or {})}
    return Response(body=text, status_code=status, headers=all_headers)


def prefers_minimal(prefer: Optional[str]) -> bool:
    """Whether a Prefer header (RFC 7240) asks for `return=minimal`: its first
    `return` preference does (a repeated preference counts once, the first)."""
    for preference in (prefer or "").split(","):
        name, _, value = preference.split(";", 1)[0].partition("=")
        if name.strip().lower() == "return":
            return value.strip().strip('"').lower() == "minimal"
    return False


MINIMAL_APPLIED = {"Preference-Applied": "return=minimal"}


def error_response(status: int, message: str, **details: Any) -> Response:
    return json_response({"error": message, **details}, status)


def domain_error_response(exc: errors.WorkflowError) -> Response:
    """The answer to a domain error: its status, its message, its details, and
    for a caller that did not prove who it is the Bearer challenge (RFC 6750)."""
    response = error_response(status_of(exc), exc.message, **exc.details)
    if isinstance(exc, errors.Unauthorized):
        challenge = 'Bearer realm="approval-workflows"'
        if exc.token_given:
            challenge += ', error="invalid_token"'
        response.headers["WWW-Authenticate"] = challenge
    return response


class JsonApi:
    """The JSON side of `app`'s routes. Keyed POSTs claim their key in the store
    that `key_store` gives, at the time `clock` tells (seconds since the epoch)."""

    def __init__(
        self,
        app: Chalice,
        key_store: Callable[[], KeyStore],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app = app
        self.key_store = key_store
        self.clock = clock
        self._openapi: Optional[dict[str, Any]] = None

    @property
    def request(self) -> Request:
        request = self.app.current_request
        assert request is not None, "only a view that Chalice is running has a request"
        return request

    def body(self) -> Any:
        """The request body as JSON; InvalidInput if it is not JSON."""
        # Here, not at the top: a read (a cold start's GET) has no body to parse.
        from chalicelib.api import validation

        return validation.json_body(_raw_body(self.request))

    def form(self) -> dict[str, list[str]]:
        """The request body as an HTML form (application/x-www-form-urlencoded)."""
        from urllib.parse import parse_qs

        raw = _raw_body(self.request)
        check_body_size(raw)
        try:
            return parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError as exc:
            raise errors.InvalidInput("The form is not UTF-8") from exc

    def query(self) -> Mapping[str, Any]:
        return self.request.query_params or {}

    def answers(
        self,
        status: int,
        location: Optional[Callable[[Any], str]] = None,
        minimal: Optional[Callable[[Any], str]] = None,
    ) -> Callable[[Callable[..., Answer]], Callable[..., Response]]:
        """Serialise what the view returns with `status` (and a Location header
        from `location`); domain errors become 4xx/5xx. A POST or DELETE with an
        Idempotency-Key runs once per key (chalicelib/domain/idempotency.py). A request
        that prefers return=minimal gets `minimal` of what the view returns
        instead, where the route has one, and is told so."""

        def decorate(view: Callable[..., Answer]) -> Callable[..., Response]:
            @functools.wraps(view)
            def wrapper(*args: Any, **kwargs: Any) -> Response:
                def respond(keyed: bool = False) -> Response:
                    try:
                        result = view(*args, **kwargs)
                    except errors.WorkflowError as exc:
                        if keyed and exc.passing:
                            raise  # the key is released, not kept (_answer_once)
                        return domain_error_response(exc)
                    access_log.note_ids(self.request, representations.about(result))
                    headers = (
                        {"Location": self.base_path() + location(result)} if location else None
                    )
                    if minimal is not None and self.prefers_minimal():
                        return json_text_response(minimal(result), status, MINIMAL_APPLIED)
                    return json_text_response(representations.text(result), status, headers)

                request = self.request
                try:
                    caller = self._authenticated(request)
                    # Before anything reads it, the Idempotency-Key's fingerprint included.
                    check_body_size(_raw_body(request))
                except errors.WorkflowError as exc:
                    return domain_error_response(exc)
                request.context[_CALLER] = caller
                key = request.headers.get("Idempotency-Key")
                if key is None or request.method not in ("POST", "DELETE"):
                    return respond()
                return self._answer_once(key, caller, respond)

            return wrapper

        return decorate

    @staticmethod
    def _authenticated(request: Request) -> Optional[identity.Caller]:
        """The verified caller: by the Authorization header's bearer token, or
        without one by the session cookie of a sign-in (chalicelib/api/sessions.py)."""
        authorization = request.headers.get("Authorization")
        if authorization is None and SESSION_COOKIE in (request.headers.get("Cookie") or ""):
            # Imported here: only a request with a session cookie needs them.
            from chalicelib.api import signin

            if identity.settings().mode == identity.JWT:
                caller = signin.session_caller(request.headers, request.method)
                if caller is not None:
                    return caller
        return identity.authenticate(authorization)

    def signed(self, produce: Callable[[], Outcome]) -> Response:
        """A sign-in route's answer (chalicelib/api/signin.py): its redirect or
        JSON, and its cookies; a domain error as its status. Never cached."""
        try:
            outcome = produce()
        except errors.WorkflowError as exc:
            response = domain_error_response(exc)
            response.headers["Cache-Control"] = "no-store"
            return response
        headers: Headers = {"Cache-Control": "no-store"}
        if outcome.location is not None:
            headers["Location"] = outcome.location
        if outcome.cookies:
            headers["Set-Cookie"] = list(outcome.cookies)
        if outcome.body is None:
            return Response(body="", status_code=outcome.status, headers=headers)
        headers.update(JSON_HEADERS)
        return Response(body=_encode(outcome.body), status_code=outcome.status, headers=headers)

    def origin(self) -> str:
        """Where the page was loaded from, as a browser names it: scheme and host."""
        headers = self.request.headers
        scheme = headers.get("X-Forwarded-Proto") or "http"
        return f"{scheme}://{headers.get('Host') or 'localhost'}"

    def prefers_minimal(self) -> bool:
        """Whether the request asks for the answer without the run's history."""
        return prefers_minimal(self.request.headers.get("Prefer"))

    def caller(self) -> Optional[identity.Caller]:
        """The verified caller of the request (None in `none` mode)."""
        caller: Optional[identity.Caller] = self.request.context.get(_CALLER)
        return caller

    def _answer_once(
        self, key: str, caller: Optional[identity.Caller], respond: Callable[..., Response]
    ) -> Response:
        """respond()'s response to the first request with `key` (of this caller,
        where callers are verified), replayed to its retries."""
        # Imported here: a request without a key (a cold start's GET) needs none of it.
        from chalicelib.domain import idempotency

        request = self.request
        try:
            claim = idempotency.new_claim(
                idempotency.scoped(idempotency.checked_key(key), caller and caller.actor),
                idempotency.fingerprint(request.method, self._target(), _raw_body(request)),
                self.clock(),
            )
            # A passing error (errors.WorkflowError.passing) raised by respond
            # releases the key, and is answered below.
            stored, replayed = idempotency.respond_once(
                self.key_store(), claim, lambda: _kept(respond(keyed=True))
            )
        except errors.WorkflowError as exc:
            return domain_error_response(exc)
        headers: dict[str, str] = {}
        if stored.location is not None:
            headers["Location"] = stored.location
        if replayed:
            headers[idempotency.REPLAYED_HEADER] = "true"
            access_log.note_replayed(request)
        return json_response(json.loads(stored.body), stored.status, headers)

    def request_path(self) -> str:
        """The path requested, without API Gateway's stage: the route with its ids."""
        request = self.request
        path: str = request.path
        for name, value in (request.uri_params or {}).items():
            path = path.replace(f"{{{name}}}", value)
        return path

    def _target(self) -> str:
        """The path with its query, sorted: what a retry must send again (a
        DELETE names its actor in the query where callers are not verified)."""
        query: Mapping[str, str] = self.request.query_params or {}
        if not query:
            return self.request_path()
        from urllib.parse import urlencode

        return self.request_path() + "?" + urlencode(sorted(query.items()))

    def base_path(self) -> str:
        """What precedes our routes in the URL: API Gateway's stage or base path
        ("/api" for https://.../api/runs/7, and for the root, https://.../api or
        https://.../api/; "" locally)."""
        full: str = (self.request.context.get("path") or self.request.path).rstrip("/")
        route_path = self.request_path().rstrip("/")
        return full[: len(full) - len(route_path)] if full.endswith(route_path) else ""

    def openapi_document(self) -> Response:
        """chalicelib/openapi.json (read on first use: no other request needs it),
        its servers pointing at the stage that served it."""
        if self._openapi is None:
            with open(_OPENAPI_PATH, encoding="utf-8") as document:
                self._openapi = json.load(document)
        return json_response({**self._openapi, "servers": [{"url": self.base_path() or "/"}]}, 200)


def check_body_size(raw: bytes) -> None:
    """PayloadTooLarge if the body is larger than the service reads."""
    if len(raw) > MAX_BODY_BYTES:
        raise errors.PayloadTooLarge(
            f"The request body is larger than {MAX_BODY_BYTES:,} bytes; nothing was read"
        )


def _raw_body(request: Request) -> bytes:
    raw = request.raw_body
    return raw if isinstance(raw, bytes) else str(raw).encode("utf-8")


def _kept(response: Response) -> StoredResponse:
    """The parts of our response that a replay repeats: status, body, Location."""
    from chalicelib.domain.idempotency import StoredResponse

    # Not ASCII-escaped: CJK text takes 3 bytes, not 6. A replay parses it and
    # encodes it again as json_response does, so the replayed bytes are the first ones.
    body = json.dumps(json.loads(response.body), separators=(",", ":"), ensure_ascii=False)
    location = response.headers.get("Location")
    return StoredResponse(
        response.status_code, body, location if isinstance(location, str) else None
    )
