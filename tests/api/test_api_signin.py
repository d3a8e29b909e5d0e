"""Sign-in through an OpenID provider (chalicelib/api/signin.py), the service as
the page's backend: the test provider on loopback (scripts/oidc_provider.py),
every step as the browser would take it, on every backend."""

from __future__ import annotations

import io
import time
from typing import Any
from urllib.parse import urlencode

import pytest

from chalicelib.api import access_log, http, sessions
from tests.support.api import Api
from tests.support.signin import (
    CLIENT_ID,
    FROM_PAGE,
    SESSION_COOKIE,
    OidcTestProvider,
    as_session,
    begin,
    callback,
    query_of,
    set_cookies,
    signed_in,
)
from tests.support.tokens import KeySet, claims


def workflow_and_run(api: Api, admin: str) -> dict[str, Any]:
    workflow = {"name": "PO", "steps": [{"name": "Finance", "approvers": ["group:finance"]}]}
    made = as_session(api, admin, "POST", "/workflows", workflow, **FROM_PAGE)
    assert made.status_code == 201, made.body
    run = {"workflow_id": made.json_body["id"], "title": "Laptops"}
    started = as_session(api, admin, "POST", "/runs", run, **FROM_PAGE)
    assert started.status_code == 201, started.body
    return dict(started.json_body)


# -- the flow -------------------------------------------------------------------------


def test_sign_in_goes_to_the_provider_with_pkce_state_and_nonce(
    api: Api, provider: OidcTestProvider
) -> None:
    location, signin = begin(api, "#/runs/7")

    sent = query_of(location)
    assert location.startswith(f"{provider.issuer}/oauth2/authorize?")
    assert sent["client_id"] == CLIENT_ID
    assert sent["response_type"] == "code"
    assert sent["code_challenge_method"] == "S256"
    assert len(sent["state"]) >= 43 and len(sent["nonce"]) >= 43
    assert sent["redirect_uri"] == "http://localhost/auth/callback"
    assert sent["state"] not in signin and sent["nonce"] not in signin  # sealed, not readable


def test_a_signed_in_person_acts_as_the_id_tokens_actor_with_its_groups(
    api: Api, provider: OidcTestProvider
) -> None:
    run = workflow_and_run(api, signed_in(api, provider, "ada"))
    maria = signed_in(api, provider, "maria", "#/runs/1")

    who = as_session(api, maria, "GET", "/auth/session")
    inbox = as_session(api, maria, "GET", "/inbox")
    approved = as_session(api, maria, "POST", f"/runs/{run['id']}/approve", {}, **FROM_PAGE)

    assert who.status_code == 200
    assert who.json_body["actor"] == "maria" and who.json_body["groups"] == ["finance"]
    assert who.json_body["renewable"] is True and who.json_body["admin"] is False
    assert [item["id"] for item in inbox.json_body["items"]] == [run["id"]]
    assert approved.status_code == 200, approved.body
    assert approved.json_body["actions"][0]["actor"] == "maria"


def test_bearer_tokens_keep_working_beside_sessions(api: Api, provider: OidcTestProvider) -> None:
    response = api.request("GET", "/workflows", headers={"Authorization": "Bearer not-a-token"})

    assert response.status_code == 401  # the bearer token is judged, not the absent cookie
    assert response.headers["WWW-Authenticate"].endswith('error="invalid_token"')


def test_a_session_renews_and_signs_out(api: Api, provider: OidcTestProvider) -> None:
    maria = signed_in(api, provider, "maria")

    renewed = as_session(api, maria, "POST", "/auth/renew", **FROM_PAGE)
    out = as_session(api, maria, "POST", "/auth/signout", **FROM_PAGE)

    assert renewed.status_code == 200, renewed.body
    assert renewed.json_body["actor"] == "maria"
    assert SESSION_COOKIE in set_cookies(renewed.headers)
    assert out.status_code == 200
    assert set_cookies(out.headers)[SESSION_COOKIE] == ""
    end = out.json_body["end_session_url"]
    assert end.startswith(f"{provider.issuer}/oauth2/end_session?")
    assert query_of(end) == {
        "client_id": CLIENT_ID,
        "post_logout_redirect_uri": "http://localhost/",
    }


# -- what is refused --------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"X-Requested-With": "approvals-page", "Origin": "https://evil.example"},
        {"X-Requested-With": "approvals-page", "Origin": "null"},
        {"X-Requested-With": "approvals-page"},
        {"X-Requested-With": "approvals-page", "Origin": "https://localhost"},
        {"Origin": "http://localhost"},
    ],
    ids=[
        "other-origin",
        "other-origin-with-header",
        "opaque-origin",
        "no-origin",
        "other-scheme",
        "no-header",
    ],
)
def test_a_session_from_another_origin_changes_nothing(
    api: Api, provider: OidcTestProvider, headers: dict[str, str]
) -> None:
    run = workflow_and_run(api, signed_in(api, provider, "ada"))
    maria = signed_in(api, provider, "maria")

    response = as_session(api, maria, "POST", f"/runs/{run['id']}/approve", {}, **headers)

    assert response.status_code == 403, response.body
    assert as_session(api, maria, "GET", f"/runs/{run['id']}").json_body["actions"] == []
    assert as_session(api, maria, "POST", "/auth/signout", **headers).status_code == 403


def test_a_referer_of_the_page_stands_for_a_missing_origin(
    api: Api, provider: OidcTestProvider
) -> None:
    maria = signed_in(api, provider, "maria")
    page = {"X-Requested-With": "approvals-page", "Referer": "http://localhost/#/runs/1"}

    assert as_session(api, maria, "POST", "/auth/renew", **page).status_code == 200


def test_a_state_that_does_not_match_is_refused(api: Api, provider: OidcTestProvider) -> None:
    location, signin = begin(api)
    answer = query_of(provider.authorize(location, "maria"))

    forged = callback(api, {**answer, "state": "x" * 43}, signin)
    without_cookie = callback(api, answer, None)

    assert forged.status_code == 400 and "state" in forged.json_body["error"]
    assert without_cookie.status_code == 400
    assert SESSION_COOKIE not in set_cookies(forged.headers)


def test_a_code_of_another_sign_in_is_refused(api: Api, provider: OidcTestProvider) -> None:
    # A code given to another sign-in (an attacker's), brought back with this
    # browser's cookie and the state it expects: PKCE binds it to its verifier.
    other_location, _ = begin(api)
    location, signin = begin(api)
    code = query_of(provider.authorize(other_location, "maria"))["code"]

    response = callback(api, {"code": code, "state": query_of(location)["state"]}, signin)

    assert response.status_code == 401 and "provider refused" in response.json_body["error"]
    assert SESSION_COOKIE not in set_cookies(response.headers)


def test_an_id_token_of_another_nonce_is_refused_even_when_the_code_is_taken(
    api: Api, provider: OidcTestProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, signin = begin(api)
    waiting = sessions.opened(signin, sessions.SIGNIN_LABEL)
    assert waiting is not None
    replaced = sessions.seal({**waiting, "nonce": "another-sign-in"}, sessions.SIGNIN_LABEL)

    response = callback(api, query_of(provider.authorize(location, "maria")), replaced)

    assert response.status_code == 401 and "nonce" in response.json_body["error"]


@pytest.mark.parametrize(
    "changed, words",
    [({"iss": "https://other.example"}, "issuer"), ({"aud": "someone-else"}, "audience")],
    ids=["issuer", "audience"],
)
def test_an_id_token_of_another_issuer_or_audience_is_refused(
    api: Api,
    provider: OidcTestProvider,
    monkeypatch: pytest.MonkeyPatch,
    changed: dict[str, str],
    words: str,
) -> None:
    # The provider's answer, replaced at the service's one call to its token
    # endpoint: an ID token signed by a key the service trusts, for this
    # sign-in's nonce, but of another issuer or for another audience.
    from chalicelib.api import signin

    _, signin_cookie = begin(api)
    waiting = sessions.opened(signin_cookie, sessions.SIGNIN_LABEL)
    assert waiting is not None
    forged = {**claims("maria", aud=CLIENT_ID, nonce=waiting["nonce"]), "iss": provider.issuer}
    keys = KeySet()
    monkeypatch.setattr(signin, "_endpoint", lambda config, name: keys.url)
    monkeypatch.setattr(
        signin, "_token_request", lambda config, form: {"id_token": keys.sign(forged | changed)}
    )
    try:
        response = callback(api, {"code": "c", "state": waiting["state"]}, signin_cookie)
    finally:
        keys.close()

    assert response.status_code == 401
    assert words in response.json_body["error"]
    assert SESSION_COOKIE not in set_cookies(response.headers)


@pytest.mark.parametrize("back", ["https://evil.example/", "//evil.example", "#/x y", "/#/inbox"])
def test_sign_in_goes_back_only_to_the_pages_routes(
    api: Api, provider: OidcTestProvider, back: str
) -> None:
    response = api.request("GET", "/auth/signin?" + urlencode({"next": back}), headers={})

    assert response.status_code == 400
    assert "Location" not in response.headers


def test_an_altered_or_ended_session_is_refused(
    api: Api, provider: OidcTestProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    maria = signed_in(api, provider, "maria")
    altered = maria[:-4] + ("AAAA" if not maria.endswith("AAAA") else "BBBB")

    assert as_session(api, altered, "GET", "/inbox").status_code == 401
    monkeypatch.setattr(time, "time", lambda: 4_000_000_000.0)
    ended = as_session(api, maria, "GET", "/auth/session")
    assert ended.status_code == 401 and "ended" in ended.json_body["error"]


def test_a_new_secret_ends_every_session(
    api: Api, provider: OidcTestProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    maria = signed_in(api, provider, "maria")
    monkeypatch.setenv("WORKFLOW_CURSOR_SECRET", "another secret, of at least 32 bytes")

    assert as_session(api, maria, "GET", "/inbox").status_code == 401


def test_without_sign_in_configured_the_routes_are_not_found(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.request("GET", "/auth/signin", headers={}).status_code == 404
    assert api.request("GET", "/auth/session", headers={}).status_code == 404


def test_no_code_state_or_cookie_reaches_the_access_log(
    api: Api, provider: OidcTestProvider
) -> None:
    lines = io.StringIO()
    access_log.set_stream(lines)
    try:
        location, signin = begin(api)
        answer = query_of(provider.authorize(location, "maria"))
        session = set_cookies(callback(api, answer, signin).headers)[SESSION_COOKIE]
        as_session(api, session, "GET", "/inbox")
    finally:
        access_log.set_stream(None)

    written = lines.getvalue()
    assert written.count("\n") == 3
    for secret in (answer["code"], answer["state"], signin, session):
        assert secret not in written


def test_the_edge_names_the_cookie_the_sessions_set() -> None:
    assert http.SESSION_COOKIE == sessions.COOKIE == SESSION_COOKIE
