"""Signed-in sessions: the encrypted cookie that holds one, who it names, and
the proof a cookie-borne request that changes something must carry.

A session is `__Host-approvals-session`, set by GET /auth/callback
(chalicelib/api/signin.py): HttpOnly (no script reads it), Secure, SameSite=Lax,
Path=/, and no Domain (the `__Host-` prefix makes browsers hold us to all
three). Its value is sealed with AES-GCM (`cryptography`, already bundled for
tokens), under a key derived with HKDF-SHA256 from the cursor secret
(WORKFLOW_CURSOR_SECRET, or its SSM parameter: chalicelib/secret_store.py) with
a label of its own, so a cursor's key never opens a cookie nor the other way
round. Sealed: nobody can read the refresh token in it, nor change or forge a
session, without that secret. Nothing is stored server-side: a new secret
ends every session at once.

The session holds what the provider's ID token proved at sign-in (its actor
and groups claims, held to the same rules as a bearer token's by
identity.caller_of on every request), until when, and the refresh token if
the provider gave one.

A request with the cookie and no Authorization header is the session's. If
it would change something (any method but GET, HEAD, OPTIONS), it must prove
it came from the page: the page's header `X-Requested-With` (which another
origin cannot send without a CORS preflight this API never grants) and an
`Origin` (or, without one, a `Referer`) of this very host. Otherwise 403, and
nothing is done.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import time
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import urlsplit

from chalicelib import secret_store
from chalicelib.api import identity
from chalicelib.domain import errors
from chalicelib.domain.record import Record

COOKIE = "__Host-approvals-session"
# What sign-in holds between GET /auth/signin and its callback: state, nonce,
# the PKCE verifier and where to go back to; 10 minutes at most.
SIGNIN_COOKIE = "__Host-approvals-signin"
SIGNIN_SECONDS = 600
FROM_PAGE_HEADER = "X-Requested-With"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The key of the cursors, by reference or value (chalicelib/cursors.py names it too).
SECRET_VARIABLE = "WORKFLOW_CURSOR_SECRET"
SESSION_LABEL = b"approval-workflows session cookie v1"
SIGNIN_LABEL = b"approval-workflows sign-in cookie v1"
# Browsers keep cookies up to 4096 bytes, name and attributes included.
MAX_COOKIE_BYTES = 3800
NONCE_BYTES = 12

_keys: dict[tuple[str, bytes], bytes] = {}


class Session(Record):
    """A signed-in session: the claims that name the caller, until when (seconds
    since the epoch), and the provider's refresh token, if any."""

    claims: dict[str, Any]
    expires: int
    refresh_token: Optional[str] = None

    def expired(self, now: Optional[float] = None) -> bool:
        return (time.time() if now is None else now) >= self.expires


def seal(payload: Mapping[str, Any], label: bytes) -> str:
    """`payload` encrypted and authenticated under the key of `label`."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(NONCE_BYTES)
    plain = json.dumps(payload, separators=(",", ":")).encode()
    sealed = nonce + AESGCM(_key(label)).encrypt(nonce, plain, label)
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")


def opened(value: str, label: bytes) -> Optional[dict[str, Any]]:
    """What `seal` sealed under `label`; None for anything else (altered, another
    key or label, not ours at all)."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        plain = AESGCM(_key(label)).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], label)
        payload = json.loads(plain)
    except (InvalidTag, ValueError, binascii.Error):
        return None
    return payload if isinstance(payload, dict) else None


def _key(label: bytes) -> bytes:
    secret = secret_store.value(SECRET_VARIABLE)
    if not secret:
        raise identity.misconfigured(
            "sign-in needs WORKFLOW_CURSOR_SECRET (or WORKFLOW_CURSOR_SECRET_PARAMETER): "
            "the session cookie is sealed under a key derived from it"
        )
    key = _keys.get((secret, label))
    if key is None:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        derive = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label)
        key = _keys[(secret, label)] = derive.derive(secret.encode("utf-8"))
    return key


def sealed_session(session: Session) -> str:
    return seal(
        {"claims": session.claims, "exp": session.expires, "refresh": session.refresh_token},
        SESSION_LABEL,
    )


def session_of(value: str) -> Session:
    """The session a cookie's value holds; Unauthorized if it holds none of ours."""
    payload = opened(value, SESSION_LABEL)
    if payload is None or not isinstance(payload.get("claims"), dict):
        raise errors.Unauthorized("The session is not one this service issued: sign in again")
    expires = payload.get("exp")
    refresh = payload.get("refresh")
    return Session(
        payload["claims"],
        expires if isinstance(expires, int) else 0,
        refresh if isinstance(refresh, str) else None,
    )


def cookie(headers: Mapping[str, str], name: str) -> Optional[str]:
    """The value of cookie `name` in a request's Cookie header, if it is there."""
    for pair in (headers.get("Cookie") or "").split(";"):
        key, _, value = pair.strip().partition("=")
        if key == name and value:
            return value
    return None


def set_cookie(name: str, value: str, max_age: Optional[int] = None) -> str:
    """A Set-Cookie value: HttpOnly, Secure, SameSite=Lax, Path=/ (what `__Host-` needs)."""
    attributes = f"{name}={value}; Path=/; Secure; HttpOnly; SameSite=Lax"
    return attributes if max_age is None else f"{attributes}; Max-Age={max_age}"


def cleared(name: str) -> str:
    return set_cookie(name, "", max_age=0)


def current(headers: Mapping[str, str], method: str) -> Optional[Session]:
    """The live session of a request that carries one (None: it carries none);
    Unauthorized if it is not ours or has ended; Forbidden if the request would
    change something and does not show it came from the page."""
    value = cookie(headers, COOKIE)
    if value is None:
        return None
    if method.upper() not in SAFE_METHODS:
        require_page(headers)
    session = session_of(value)
    if session.expired():
        raise errors.Unauthorized("Your session has ended: sign in again")
    return session


def require_page(headers: Mapping[str, str]) -> None:
    """Forbidden unless the request shows it came from the page of this host."""
    if not (headers.get(FROM_PAGE_HEADER) or "").strip():
        raise errors.Forbidden(
            f"A request that signs in with the session cookie and changes something must "
            f"come from the page: it sends {FROM_PAGE_HEADER}"
        )
    origin = headers.get("Origin") or headers.get("Referer") or ""
    sent = urlsplit(origin) if origin != "null" else urlsplit("")
    host = (headers.get("Host") or "").lower()
    # Behind API Gateway the scheme the browser used is X-Forwarded-Proto's; locally http.
    scheme = (headers.get("X-Forwarded-Proto") or "http").lower()
    if not host or sent.netloc.lower() != host or sent.scheme.lower() != scheme:
        raise errors.Forbidden(
            "A request that signs in with the session cookie and changes something must "
            "come from the page's own origin; this one came from another, or named none"
        )


def caller(headers: Mapping[str, str], method: str) -> Optional[identity.Caller]:
    """The caller a request's session names, by the rules of a bearer token's
    claims; None without a session."""
    session = current(headers, method)
    if session is None:
        return None
    return identity.caller_of(session.claims, identity.settings())
