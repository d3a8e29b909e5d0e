"""Real JSON Web Tokens for the tests: keys made here, signed with PyJWT, and a
JSON Web Key Set served from 127.0.0.1 as an OIDC issuer serves it."""

from __future__ import annotations

import functools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

ISSUER = "https://issuer.example.test"
AUDIENCE = "approval-workflows"
SECRET = "a development secret of at least 32 bytes, for tests"
ADMIN = "workflow-admins"


def claims(actor: str = "maria", groups: Any = (), **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {
        "iss": ISSUER,
        "sub": actor,
        "groups": list(groups),
        "iat": now,
        "exp": now + 600,
        **extra,
    }


def hs256(payload: dict[str, Any], secret: str = SECRET) -> str:
    import jwt

    return jwt.encode(payload, secret, algorithm="HS256")


@functools.cache
def _private_key(kid: str) -> Any:
    """The RSA key of `kid`, made once per test process (2048-bit keys take
    20 to 100 ms each, and every key set holds three)."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class KeySet:
    """RSA keys and the JSON Web Key Set that publishes some of them, on loopback."""

    def __init__(self) -> None:
        self.keys = {kid: _private_key(kid) for kid in ("key-1", "key-2", "unpublished")}
        self.published = ["key-1"]
        self.fetches = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches += 1
                body = json.dumps(owner.jwks()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/.well-known/jwks.json"
        # shutdown() waits for the loop to look again: every 0.05 s, not every 0.5 s.
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def jwks(self) -> dict[str, Any]:
        from jwt.algorithms import RSAAlgorithm

        keys = []
        for kid in self.published:
            jwk = json.loads(RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def sign(self, payload: dict[str, Any], kid: str = "key-1", key: Optional[str] = None) -> str:
        import jwt

        return jwt.encode(payload, self.keys[key or kid], algorithm="RS256", headers={"kid": kid})

    def public_pem(self, kid: str = "key-1") -> bytes:
        from cryptography.hazmat.primitives import serialization

        return (
            self.keys[kid]
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


def admin_token(actor: str = "ada") -> str:
    return hs256(claims(actor, groups=[ADMIN]))


def bearer(token: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}


def as_(api: Any, token: str, method: str, path: str, body: Any = None) -> Any:
    """`api`'s request (tests.support.api.Api) with `token` as its bearer."""
    raw = b"" if body is None else json.dumps(body).encode()
    return api.request(method, path, raw=raw, headers=bearer(token))
