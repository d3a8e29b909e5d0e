"""Sign-in with OpenID Connect: the service as the page's backend (a "backend
for the front end", as the IETF's OAuth 2.0 for Browser-Based Applications
recommends), so no token ever reaches the page's script.

With WORKFLOW_OIDC_ISSUER and WORKFLOW_OIDC_CLIENT_ID set (and WORKFLOW_AUTH=jwt):

- GET /auth/signin[?next=#/runs/7]: a redirect to the provider's
  authorization endpoint (from its discovery document), Authorization Code
  flow with PKCE (S256), a fresh `state` and `nonce`; those and the PKCE
  verifier wait in a sealed cookie of their own for 10 minutes.
- GET /auth/callback?code=...&state=...: the state must be the cookie's; the
  code is exchanged, with the verifier (and the client secret, where
  WORKFLOW_OIDC_CLIENT_SECRET_PARAMETER names one), for the provider's tokens;
  the ID token must verify (its issuer, our client id as audience, the
  cookie's nonce, a signature by the provider's key set, its expiry); its
  actor and groups must pass the rules of a bearer token's. Then the session
  cookie (chalicelib/api/sessions.py) and a redirect to the page, where the
  person was going: no token in any URL.
- GET /auth/session: who is signed in, their groups, until when; 401 if nobody.
- POST /auth/renew: the provider's refresh token for a longer session.
- POST /auth/signout: the cookie cleared; the provider's end-session URL, if
  it has one, for the page to go on to.

The provider is reached with urllib (no new dependency): its discovery
document once an hour per process, its key set as a bearer token's
(identity.verified_claims). Failures to reach it are 503s.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import urlencode

from chalicelib import secret_store
from chalicelib.api import identity, sessions
from chalicelib.domain import errors
from chalicelib.domain.record import Record

SCOPES = "openid profile email"
DISCOVERY_SECONDS = 3600.0
TIMEOUT_SECONDS = 5
# Where the page goes back to: one of its hash routes, and nothing else.
MAX_RETURN = 200
CLIENT_SECRET_VARIABLE = "WORKFLOW_OIDC_CLIENT_SECRET"
# A session renewed from a refresh token that brings no new ID token lasts
# as long as the new access token, at most this.
MAX_SESSION_SECONDS = 12 * 3600
LOGGER = logging.getLogger("approval-workflows")

_discovered: dict[str, tuple[float, dict[str, Any]]] = {}
_lock = threading.Lock()


class Provider(Record):
    issuer: str
    client_id: str


class Outcome(Record):
    """What a sign-in route answers: a redirect (`location`) or a JSON body, and its cookies."""

    status: int
    body: Optional[Mapping[str, Any]] = None
    location: Optional[str] = None
    cookies: tuple[str, ...] = ()


def provider(environ: Optional[Mapping[str, str]] = None) -> Optional[Provider]:
    """The provider sign-in goes through; None where sign-in is not configured."""
    # os.environ as it is now: a test client may have put another in its place.
    environ = os.environ if environ is None else environ
    issuer = environ.get("WORKFLOW_OIDC_ISSUER", "").strip()
    if not issuer:
        return None
    client_id = environ.get("WORKFLOW_OIDC_CLIENT_ID", "").strip()
    if not client_id:
        raise identity.misconfigured("WORKFLOW_OIDC_ISSUER needs WORKFLOW_OIDC_CLIENT_ID")
    if identity.settings(environ).mode != identity.JWT:
        raise identity.misconfigured("sign-in (WORKFLOW_OIDC_ISSUER) needs WORKFLOW_AUTH=jwt")
    return Provider(issuer, client_id)


def configured() -> Provider:
    found = provider()
    if found is None:
        raise errors.NotFound("Sign-in is not configured here (WORKFLOW_OIDC_ISSUER)")
    return found


def session_caller(headers: Mapping[str, str], method: str) -> Optional[identity.Caller]:
    """The caller a request's session cookie names, where sign-in is on; None otherwise."""
    if provider() is None:
        return None
    return sessions.caller(headers, method)


# -- the routes ---------------------------------------------------------------------------


def sign_in(query: Mapping[str, str], origin: str, base: str) -> Outcome:
    """The redirect to the provider, and the sign-in cookie that waits for its answer."""
    config = configured()
    back = _return_path(query.get("next"))
    state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
    params = {
        "response_type": "code",
        "client_id": config.client_id,
        "redirect_uri": f"{origin}{base}/auth/callback",
        "scope": SCOPES,
        "state": state,
        "nonce": nonce,
        "code_challenge": _s256(verifier),
        "code_challenge_method": "S256",
    }
    endpoint = _endpoint(config, "authorization_endpoint")
    until = int(time.time()) + sessions.SIGNIN_SECONDS
    waiting = {"state": state, "nonce": nonce, "verifier": verifier, "back": back, "until": until}
    cookie = sessions.seal(waiting, sessions.SIGNIN_LABEL)
    separator = "&" if "?" in endpoint else "?"
    return Outcome(
        302,
        location=f"{endpoint}{separator}{urlencode(params)}",
        cookies=(sessions.set_cookie(sessions.SIGNIN_COOKIE, cookie, sessions.SIGNIN_SECONDS),),
    )


def callback(
    query: Mapping[str, str], headers: Mapping[str, str], origin: str, base: str
) -> Outcome:
    """The provider's answer: checked, exchanged, verified; the session set."""
    config = configured()
    waiting = _waiting(headers)
    if query.get("error"):
        raise errors.Unauthorized(f"The provider did not sign you in ({query['error'][:60]})")
    state, code = query.get("state") or "", query.get("code") or ""
    if not code or not secrets.compare_digest(state.encode(), waiting["state"].encode()):
        raise errors.InvalidInput("The sign-in's state does not match: start again from the page")
    tokens = _token_request(
        config,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": f"{origin}{base}/auth/callback",
            "code_verifier": waiting["verifier"],
        },
    )
    claims = _id_token_claims(config, tokens)
    if not secrets.compare_digest(str(claims.get("nonce", "")).encode(), waiting["nonce"].encode()):
        raise errors.Unauthorized("The ID token's nonce is not this sign-in's: start again")
    session = _session(claims, tokens.get("refresh_token"))
    return Outcome(
        303,
        location=f"{base}/{waiting['back']}",
        cookies=(_session_cookie(session), sessions.cleared(sessions.SIGNIN_COOKIE)),
    )


def session_answer(headers: Mapping[str, str]) -> Outcome:
    """Who is signed in, and until when; 401 if nobody."""
    configured()
    return Outcome(200, _described(_signed_in(headers, "GET")))


def renew(headers: Mapping[str, str]) -> Outcome:
    """A longer session from the provider's refresh token."""
    config = configured()
    session = _signed_in(headers, "POST")
    if session.refresh_token is None:
        raise errors.Conflict("The provider gave no refresh token: sign in again before it ends")
    tokens = _token_request(
        config, {"grant_type": "refresh_token", "refresh_token": session.refresh_token}
    )
    refresh = tokens.get("refresh_token") or session.refresh_token
    if tokens.get("id_token"):
        renewed = _session(_id_token_claims(config, tokens), refresh)
    else:
        lifetime = tokens.get("expires_in")
        seconds = lifetime if isinstance(lifetime, int) and lifetime > 0 else 3600
        expires = int(time.time()) + min(seconds, MAX_SESSION_SECONDS)
        renewed = sessions.Session(session.claims, expires, refresh)
    return Outcome(200, _described(renewed), cookies=(_session_cookie(renewed),))


def sign_out(headers: Mapping[str, str], origin: str, base: str) -> Outcome:
    """The session cleared; where the provider ends its own, if it can."""
    config = configured()
    sessions.require_page(headers)
    end = _discovery(config).get("end_session_endpoint")
    url = None
    if isinstance(end, str) and end:
        # No id_token_hint: that would put a token in a URL. client_id names us.
        params = {"client_id": config.client_id, "post_logout_redirect_uri": f"{origin}{base}/"}
        url = f"{end}{'&' if '?' in end else '?'}{urlencode(params)}"
    return Outcome(200, {"end_session_url": url}, cookies=(sessions.cleared(sessions.COOKIE),))


# -- the parts ------------------------------------------------------------------------------


def _return_path(given: Optional[str]) -> str:
    """Where to go back after sign-in: one of the page's hash routes (#/...)."""
    if given is None or given == "":
        return "#/inbox"
    if (
        not given.startswith("#/")
        or len(given) > MAX_RETURN
        or not given.isprintable()
        or any(c in given for c in " \\")
    ):
        raise errors.InvalidInput(
            f"'next' must be one of the page's routes, '#/...' of at most {MAX_RETURN} "
            "characters: sign-in goes back to this page and nowhere else"
        )
    return given


def _waiting(headers: Mapping[str, str]) -> dict[str, str]:
    value = sessions.cookie(headers, sessions.SIGNIN_COOKIE)
    waiting = sessions.opened(value, sessions.SIGNIN_LABEL) if value else None
    keys = ("state", "nonce", "verifier", "back")
    if waiting is None or not all(isinstance(waiting.get(key), str) for key in keys):
        raise errors.InvalidInput(
            "This browser has no sign-in under way (or it was altered): start again from the page"
        )
    until = waiting.get("until")
    if not isinstance(until, int) or until < time.time():
        raise errors.InvalidInput("The sign-in took more than 10 minutes: start again")
    return waiting


def _signed_in(headers: Mapping[str, str], method: str) -> sessions.Session:
    session = sessions.current(headers, method)
    if session is None:
        raise errors.Unauthorized("Nobody is signed in here: sign in first")
    return session


def _session(claims: Mapping[str, Any], refresh_token: Any) -> sessions.Session:
    """The session of verified ID-token claims: their actor and groups (refused
    here, by the rules of a bearer token, rather than on every request)."""
    config = identity.settings()
    kept = {
        name: claims[name] for name in (config.actor_claim, config.groups_claim) if name in claims
    }
    identity.caller_of(kept, config)
    refresh = refresh_token if isinstance(refresh_token, str) and refresh_token else None
    return sessions.Session(kept, int(claims["exp"]), refresh)


def _session_cookie(session: sessions.Session) -> str:
    cookie = sessions.set_cookie(sessions.COOKIE, sessions.sealed_session(session))
    if len(cookie) > sessions.MAX_COOKIE_BYTES:
        raise errors.Unprocessable(
            "The provider names too many groups to hold in a browser's cookie: "
            "send only the groups that approve (docs/auth.md)"
        )
    return cookie


def _described(session: sessions.Session) -> dict[str, Any]:
    caller = identity.caller_of(session.claims, identity.settings())
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(session.expires))
    return {
        "actor": caller.actor,
        "groups": sorted(caller.groups),
        "admin": caller.admin,
        "expires_at": expires,
        "renewable": session.refresh_token is not None,
    }


def _id_token_claims(config: Provider, tokens: Mapping[str, Any]) -> dict[str, Any]:
    token = tokens.get("id_token")
    if not isinstance(token, str):
        raise errors.Unauthorized("The provider sent no ID token: is the scope 'openid' allowed?")
    jwks = _endpoint(config, "jwks_uri")
    return identity.verified_claims(token, config.issuer, config.client_id, jwks)


def _token_request(config: Provider, form: dict[str, str]) -> dict[str, Any]:
    """The provider's token endpoint's answer; Unauthorized if it refuses."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    secret = secret_store.value(CLIENT_SECRET_VARIABLE)
    if secret:
        pair = f"{config.client_id}:{secret}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    else:
        form = {**form, "client_id": config.client_id}  # a public client: PKCE proves it
    request = urllib.request.Request(
        _endpoint(config, "token_endpoint"), urlencode(form).encode(), headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            tokens = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        reason = _oauth_error(exc)
        LOGGER.warning("The provider's token endpoint refused: %s %s", exc.code, reason)
        raise errors.Unauthorized(f"The provider refused ({reason}): sign in again") from exc
    except (OSError, ValueError) as exc:
        LOGGER.warning("The provider's token endpoint could not be reached: %s", exc)
        raise errors.Unavailable(
            "The sign-in provider could not be reached; retry shortly"
        ) from exc
    if not isinstance(tokens, dict):
        raise errors.Unavailable("The sign-in provider answered something else than tokens")
    return tokens


def _oauth_error(exc: Any) -> str:
    try:
        error = json.loads(exc.read()).get("error")
    except (OSError, ValueError, AttributeError):
        error = None
    return str(error)[:60] if error else f"HTTP {exc.code}"


def _endpoint(config: Provider, name: str) -> str:
    url = _discovery(config).get(name)
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        LOGGER.error("The provider's discovery document has no %s", name)
        raise errors.Unavailable("The sign-in provider is misconfigured; its operators know why")
    return url


def _discovery(config: Provider) -> dict[str, Any]:
    """The provider's discovery document, fetched once an hour per process; its
    issuer must be the one configured (OpenID Connect Discovery 1.0, 4.3)."""
    with _lock:
        kept = _discovered.get(config.issuer)
    if kept is not None and time.monotonic() - kept[0] < DISCOVERY_SECONDS:
        return kept[1]
    import urllib.request

    url = f"{config.issuer.rstrip('/')}/.well-known/openid-configuration"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:
            document = json.loads(answer.read())
    except (OSError, ValueError) as exc:
        LOGGER.warning("The provider's discovery document could not be read: %s", exc)
        raise errors.Unavailable(
            "The sign-in provider could not be reached; retry shortly"
        ) from exc
    if not isinstance(document, dict) or document.get("issuer") != config.issuer:
        LOGGER.error("The discovery document at %s names another issuer", url)
        raise errors.Unavailable("The sign-in provider is misconfigured; its operators know why")
    with _lock:
        _discovered[config.issuer] = (time.monotonic(), document)
    return document


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
