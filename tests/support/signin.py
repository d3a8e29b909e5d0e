"""Sign-in for the tests: the test provider (scripts/oidc_provider.py) on
loopback, the service configured for it, and a sign-in as a browser goes
through it, by HTTP."""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from scripts import oidc_provider
from tests.support.api import Api

if TYPE_CHECKING:
    from chalice.test import HTTPResponse

CLIENT_ID = oidc_provider.CLIENT_ID
SESSION_COOKIE = "__Host-approvals-session"
SIGNIN_COOKIE = "__Host-approvals-signin"
FROM_PAGE = {"X-Requested-With": "approvals-page", "Origin": "http://localhost"}
# What a browser always sends, and the test client does not.
HOST = {"Host": "localhost"}


class OidcTestProvider:
    """The provider at `issuer`, its users set by PUT /users/<sub>."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def user(self, sub: str, groups: Sequence[str] = (), **claims: Any) -> None:
        body = json.dumps({"groups": list(groups), **claims}).encode()
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(f"{self.issuer}/users/{sub}", body, headers, method="PUT")
        with urllib.request.urlopen(request) as answer:
            assert answer.status == 204

    def authorize(self, location: str, sub: str) -> str:
        """The provider's redirect back after `sub` signs in on its form at `location`."""
        request = urllib.request.Request(location, urlencode({"sub": sub}).encode(), method="POST")
        try:
            _NO_REDIRECTS.open(request)
        except urllib.error.HTTPError as redirect:
            assert redirect.code == 302, redirect.read()
            return str(redirect.headers["Location"])
        raise AssertionError("the provider did not send the browser back")


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None  # a redirect is the answer, not something to follow


_NO_REDIRECTS = urllib.request.build_opener(_Stay)


@pytest.fixture(scope="session")
def provider_server() -> Iterator[str]:
    """The test provider on loopback, once per test process: its issuer."""
    with oidc_provider.serving() as server:
        yield f"http://127.0.0.1:{server.server_port}"


@pytest.fixture
def provider(provider_server: str, monkeypatch: pytest.MonkeyPatch) -> OidcTestProvider:
    """The service (WORKFLOW_AUTH=jwt) signing in through the test provider, whose
    users ada (an administrator) and maria (in finance) are; bearer tokens of the
    same provider are taken too."""
    for name, value in {
        "WORKFLOW_AUTH": "jwt",
        "WORKFLOW_JWT_ISSUER": provider_server,
        "WORKFLOW_JWKS_URL": f"{provider_server}/jwks",
        "WORKFLOW_JWT_AUDIENCE": CLIENT_ID,
        "WORKFLOW_OIDC_ISSUER": provider_server,
        "WORKFLOW_OIDC_CLIENT_ID": CLIENT_ID,
        "WORKFLOW_CURSOR_SECRET": secrets.token_hex(32),
    }.items():
        monkeypatch.setenv(name, value)
    test_provider = OidcTestProvider(provider_server)
    test_provider.user("ada", ["workflow-admins"])
    test_provider.user("maria", ["finance"])
    return test_provider


def set_cookies(headers: dict[str, Any]) -> dict[str, str]:
    """The cookies a response sets (name -> value; "" where it clears one)."""
    found = headers.get("Set-Cookie") or headers.get("set-cookie") or []
    values = [found] if isinstance(found, str) else list(found)
    cookies = {}
    for value in values:
        name, _, rest = value.partition("=")
        cookies[name] = rest.split(";", 1)[0]
    return cookies


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def cookie_header(**cookies: Optional[str]) -> str:
    names = {"session": SESSION_COOKIE, "signin": SIGNIN_COOKIE}
    return "; ".join(f"{names[key]}={value}" for key, value in cookies.items() if value)


# -- sign-in as a browser takes it, through the service's routes -----------------------


def begin(api: Api, back: str = "#/inbox") -> tuple[str, str]:
    """GET /auth/signin: the provider's URL, and the sign-in cookie."""
    response = api.request("GET", "/auth/signin?" + urlencode({"next": back}), headers={})
    assert response.status_code == 302, response.body
    return response.headers["Location"], set_cookies(response.headers)[SIGNIN_COOKIE]


def callback(api: Api, query: dict[str, str], signin: Optional[str]) -> HTTPResponse:
    headers = {"Cookie": cookie_header(signin=signin)} if signin else {}
    return api.request("GET", "/auth/callback?" + urlencode(query), headers=headers)


def signed_in(api: Api, provider: OidcTestProvider, sub: str, back: str = "#/inbox") -> str:
    """The session cookie of `sub`, after signing in as the page does."""
    location, signin = begin(api, back)
    response = callback(api, query_of(provider.authorize(location, sub)), signin)
    assert response.status_code == 303, response.body
    assert response.headers["Location"] == f"/{back}"
    cookies = set_cookies(response.headers)
    assert cookies[SIGNIN_COOKIE] == ""  # cleared
    return cookies[SESSION_COOKIE]


def as_session(
    api: Api, session: str, method: str, path: str, body: Any = None, **headers: str
) -> HTTPResponse:
    raw = b"" if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", "Cookie": cookie_header(session=session), **HOST}
    return api.request(method, path, raw=raw, headers={**sent, **headers})
