"""Who is calling: asserted in the body, or proven by a token the service verifies.

WORKFLOW_AUTH selects the mode, read on every request:

- `none` (the default): the caller is whoever the body says (`actor`,
  `requested_by`). The service trusts it: for local use only.
- `jwt`: every route but GET /openapi.json needs `Authorization: Bearer
  <token>`, a JSON Web Token verified here on every request, locally and on
  Lambda alike: signature, `iss`, `aud` (when WORKFLOW_JWT_AUDIENCE is set),
  `exp` and `nbf` with 60 s of leeway. Keys come from an OIDC issuer's JSON Web
  Key Set (WORKFLOW_JWKS_URL; RS256 or ES256) or a shared secret of at least
  32 bytes (WORKFLOW_JWT_SECRET; HS256, for development and tests). The caller
  is the WORKFLOW_JWT_ACTOR_CLAIM claim (default `sub`), its groups the
  WORKFLOW_JWT_GROUPS_CLAIM claim (default `groups`; a list, or a string of
  names separated by commas or spaces; missing or null: none; any other shape
  is refused, not read as none).

PyJWT (and the cryptography it loads, hundreds of milliseconds) is imported
only in `jwt` mode, so `none` mode's cold start does not pay for it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.record import Record

if TYPE_CHECKING:
    from jwt import PyJWKClient

NONE = "none"
JWT = "jwt"
MODES = (NONE, JWT)
LEEWAY_SECONDS = 60
MIN_SECRET_BYTES = 32
ASYMMETRIC = ["RS256", "ES256"]
SYMMETRIC = ["HS256"]
DEFAULT_ADMIN_GROUP = "workflow-admins"
# An unknown kid fetches the key set again at most this often (key rotation
# without a deploy, and no fetch storm from forged kids).
JWKS_REFETCH_SECONDS = 30.0
LOGGER = logging.getLogger("approval-workflows")

_jwks_clients: dict[str, PyJWKClient] = {}
_jwks_lock = threading.Lock()


class Caller(Record):
    """A verified caller: the actor the token names and the groups it lists."""

    actor: str
    groups: frozenset[str]
    admin: bool


class Settings(Record):
    mode: str
    issuer: str
    audience: Optional[str]
    jwks_url: Optional[str]
    secret: Optional[bytes]
    actor_claim: str
    groups_claim: str
    admin_group: str


def settings(environ: Mapping[str, str] = os.environ) -> Settings:
    """The configuration in force; Unavailable (and a log line saying what to
    set) if it cannot work, so a misconfigured service refuses every request."""
    mode = environ.get("WORKFLOW_AUTH", NONE).strip().lower() or NONE
    if mode not in MODES:
        raise misconfigured(f"WORKFLOW_AUTH is {mode!r}; use one of {', '.join(MODES)}")
    issuer = environ.get("WORKFLOW_JWT_ISSUER", "").strip()
    jwks_url = environ.get("WORKFLOW_JWKS_URL", "").strip() or None
    secret = environ.get("WORKFLOW_JWT_SECRET", "").encode("utf-8") or None
    if mode == JWT:
        if not issuer:
            raise misconfigured("WORKFLOW_AUTH=jwt needs WORKFLOW_JWT_ISSUER, the tokens' iss")
        if bool(jwks_url) == bool(secret):
            raise misconfigured(
                "WORKFLOW_AUTH=jwt needs exactly one of WORKFLOW_JWKS_URL (an OIDC issuer's "
                "key set) or WORKFLOW_JWT_SECRET (a shared HS256 secret)"
            )
        if secret is not None and len(secret) < MIN_SECRET_BYTES:
            raise misconfigured(
                f"WORKFLOW_JWT_SECRET is {len(secret)} bytes; it must be at least "
                f"{MIN_SECRET_BYTES} (for example: openssl rand -hex 32)"
            )
    return Settings(
        mode,
        issuer,
        environ.get("WORKFLOW_JWT_AUDIENCE", "").strip() or None,
        jwks_url,
        secret,
        environ.get("WORKFLOW_JWT_ACTOR_CLAIM", "").strip() or "sub",
        environ.get("WORKFLOW_JWT_GROUPS_CLAIM", "").strip() or "groups",
        environ.get("WORKFLOW_ADMIN_GROUP", "").strip() or DEFAULT_ADMIN_GROUP,
    )


def misconfigured(what: str) -> errors.Unavailable:
    LOGGER.error("Authentication is misconfigured: %s", what)
    return errors.Unavailable("The service is misconfigured; its operators have been told why")


def authenticate(authorization: Optional[str]) -> Optional[Caller]:
    """The verified caller of a request with this Authorization header; None in
    `none` mode, where the body says who calls; Unauthorized if not proven."""
    if (os.environ.get("WORKFLOW_AUTH", "").strip().lower() or NONE) == NONE:
        return None  # the common local case, without reading the rest of the settings
    config = settings()
    if authorization is None or not authorization.strip():
        raise errors.Unauthorized("This route needs Authorization: Bearer <token>")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise errors.Unauthorized(
            "The Authorization header must be 'Bearer <token>'", token_given=True
        )
    claims = verified_claims(token, config.issuer, config.audience, config.jwks_url, config.secret)
    return caller_of(claims, config)


def verified_claims(
    token: str,
    issuer: str,
    audience: Optional[str],
    jwks_url: Optional[str],
    secret: Optional[bytes] = None,
) -> dict[str, Any]:
    """The claims of `token` once its signature (by `secret`, or by a key of the
    set at `jwks_url`), issuer, audience (where given), expiry and not-before
    are verified; Unauthorized, with the reason, otherwise. A bearer token and
    the ID token of a sign-in (chalicelib/api/signin.py) both pass here."""
    import jwt

    try:
        if secret is not None:
            key: Any = secret
            algorithms = SYMMETRIC
        else:
            assert jwks_url is not None
            key = _signing_key(_jwks_client(jwks_url), token)
            algorithms = ASYMMETRIC
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=algorithms,
            issuer=issuer,
            audience=audience,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss"], "verify_aud": audience is not None},
        )
    except jwt.PyJWTError as exc:
        raise errors.Unauthorized(_reason(exc), token_given=True) from exc
    return claims


def _signing_key(client: PyJWKClient, token: str) -> Any:
    """The key of the set that signed `token`: the one its `kid` names, or,
    for a token that names none, the set's only signing key (a set of one
    leaves no doubt which key signed; with more, guessing is refused)."""
    import jwt

    if "kid" in jwt.get_unverified_header(token):
        return client.get_signing_key_from_jwt(token)
    keys = [key for key in client.get_jwk_set().keys if key.public_key_use in ("sig", None)]
    if len(keys) != 1:
        raise errors.Unauthorized(
            f"The token names no key (kid) and the issuer's key set holds {len(keys)}",
            token_given=True,
        )
    return keys[0]


def _reason(exc: Exception) -> str:
    """What is wrong with a token, in words, never the token itself."""
    import jwt

    reasons: list[tuple[type[Exception], str]] = [
        (jwt.ExpiredSignatureError, "The token has expired"),
        (jwt.ImmatureSignatureError, "The token is not valid yet (nbf or iat in the future)"),
        (jwt.InvalidAudienceError, "The token is for another audience"),
        (jwt.InvalidIssuerError, "The token was issued by another issuer"),
        (jwt.InvalidAlgorithmError, "The token's algorithm is not allowed for its key"),
        (jwt.InvalidSignatureError, "The token's signature does not verify"),
        (jwt.MissingRequiredClaimError, "The token lacks a required claim"),
        (jwt.PyJWKClientError, "The token's key is not in the issuer's key set"),
        (jwt.InvalidKeyError, "The token's algorithm is not allowed for its key"),
        (jwt.DecodeError, "The token is malformed"),
    ]
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"The token has no {exc.claim!r} claim"
    return next((words for kind, words in reasons if isinstance(exc, kind)), "The token is invalid")


def _jwks_client(url: str) -> PyJWKClient:
    """One key-set client per URL for the process: it caches the keys for 5
    minutes and fetches them again, at most every 30 s, for an unknown kid."""
    with _jwks_lock:
        client = _jwks_clients.get(url)
        if client is None:
            from jwt import PyJWKClient

            client = PyJWKClient(
                url,
                cache_jwk_set=True,
                lifespan=300,
                timeout=5,
                cooldown_duration=JWKS_REFETCH_SECONDS,
            )
            _jwks_clients[url] = client
        return client


def caller_of(claims: Mapping[str, Any], config: Settings) -> Caller:
    """The caller a verified token names: its actor and groups, each held to the
    rules of a name in a body (names.principal_problem), or Unauthorized."""
    from chalicelib.domain.models import GROUP_PREFIX, USER_PREFIX
    from chalicelib.domain.names import canonical, principal_problem

    actor = claims.get(config.actor_claim)
    if not isinstance(actor, str) or not actor.strip():
        raise errors.Unauthorized(
            f"The token names no actor (claim {config.actor_claim!r})", token_given=True
        )
    # "user:" is the kind, not the name: user:rita is rita, as in a body.
    actor = _nfc(actor.strip().removeprefix(USER_PREFIX).strip(" "))
    if actor.startswith(GROUP_PREFIX):
        raise errors.Unauthorized(
            f"The token's actor (claim {config.actor_claim!r}) names a group, not a user",
            token_given=True,
        )
    problem = principal_problem(actor)
    if problem:
        raise errors.Unauthorized(
            f"The token's actor (claim {config.actor_claim!r}) {problem}", token_given=True
        )
    groups = _groups(claims.get(config.groups_claim), config.groups_claim)
    admin = canonical(config.admin_group) in {canonical(group) for group in groups}
    return Caller(actor, groups, admin)


def _groups(value: Any, claim: str) -> frozenset[str]:
    """The groups a verified token lists: none where the claim is missing or
    null; a list of group names, or one string of them separated by commas or
    spaces; each a group's name (bare or "group:<name>") by the rules of a name
    in a body. Anything else is Unauthorized, with the reason: a claim the
    service cannot read is not the same as no group."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list) or not all(isinstance(group, str) for group in value):
        raise errors.Unauthorized(
            f"The token's groups (claim {claim!r}) must be a list of group names, or one "
            "string of them separated by commas or spaces",
            token_given=True,
        )
    return frozenset(_group(group, claim) for group in value)


def _group(written: str, claim: str) -> str:
    from chalicelib.domain.models import GROUP_PREFIX, USER_PREFIX
    from chalicelib.domain.names import principal_problem

    def refused(why: str) -> errors.Unauthorized:
        return errors.Unauthorized(
            f"A group of the token (claim {claim!r}) {why}", token_given=True
        )

    if written.startswith(USER_PREFIX):
        raise refused(f"names a user ({written[:40]!r}), not a group")
    # NFC, as the groups that steps name are stored; "group:" is the kind, not the name.
    name = _nfc(written.removeprefix(GROUP_PREFIX).strip(" "))
    problem = principal_problem(name)
    if problem:
        raise refused(problem)
    return name


def _nfc(name: str) -> str:
    if name.isascii():
        return name
    import unicodedata  # only where a token is verified: not on the import path of app.py

    return unicodedata.normalize("NFC", name)


# -- the rules that use the caller -------------------------------------------------------


def actor_of(caller: Optional[Caller], asserted: Optional[str]) -> str:
    """Who decides: the verified caller, or in `none` mode the body's actor."""
    actor = _verified_or_asserted(caller, asserted, "actor")
    if actor is None:
        raise errors.InvalidInput("Missing required field 'actor'")
    return actor


def requester_of(caller: Optional[Caller], asserted: Optional[str]) -> Optional[str]:
    """Who starts a run: the verified caller, or in `none` mode the body's
    requested_by (None: nobody is named)."""
    return _verified_or_asserted(caller, asserted, "requested_by")


def reader_of(caller: Optional[Caller]) -> tuple[Optional[str], frozenset[str], bool]:
    """Who reads, as the rules of reading want them: the verified caller's
    name, groups and whether they administer; no one where callers are not
    verified (`none` mode: anyone reads)."""
    if caller is None:
        return None, frozenset(), False
    return caller.actor, caller.groups, caller.admin


def delegator_of(caller: Optional[Caller], asserted: Optional[str]) -> str:
    """Whose rights a new delegation lends: the verified caller's, or where the
    caller is an administrator anyone's they name; in `none` mode the body's."""
    if caller is not None and caller.admin and asserted is not None:
        return asserted
    delegator = _verified_or_asserted(caller, asserted, "delegator")
    if delegator is None:
        raise errors.InvalidInput("Missing required field 'delegator'")
    return delegator


def _verified_or_asserted(
    caller: Optional[Caller], asserted: Optional[str], field: str
) -> Optional[str]:
    if caller is None:
        return asserted
    from chalicelib.domain.names import same

    if asserted is not None and not same(asserted, caller.actor):
        raise errors.Forbidden(
            f"{field!r} must be you ({caller.actor!r}) or left out: the token says who calls"
        )
    return caller.actor


def groups_of(caller: Optional[Caller], asserted: Optional[frozenset[str]]) -> frozenset[str]:
    """The groups of whoever decides: the token's, or in `none` mode those the
    request names (none named: no group)."""
    if caller is None:
        return asserted or frozenset()
    if asserted is not None:
        raise errors.InvalidInput("Leave out 'groups': the token says which groups you are in")
    return caller.groups


def is_admin(caller: Optional[Caller]) -> bool:
    """Whether a verified caller is in the admin group (`none` mode has none)."""
    return caller is not None and caller.admin


def may_administer(caller: Optional[Caller]) -> bool:
    """Whether the caller may define workflows, publish, retire, reassign and
    move runs: in `none` mode anyone, else the admin group's members."""
    return caller is None or caller.admin


def require_admin(caller: Optional[Caller]) -> None:
    """Forbidden unless the verified caller is in the admin group (`none` mode: anyone)."""
    if caller is not None and not caller.admin:
        raise errors.Forbidden(
            f"Only members of {settings().admin_group!r} may define workflows and steps"
        )
