"""An OpenID Connect provider on loopback for sign-in in development and tests:
oidc-provider-mock (PyPI) behind a small WSGI wrapper that holds it to what
the service needs of a real provider.

    python scripts/oidc_provider.py [--port 9400] [--user NAME=GROUP,GROUP ...]
                                    [--serve-port 8000 [--host 127.0.0.1]]

The mock serves discovery, its authorization form (sign in as any name
typed), tokens, user info, a key set and end-session. Where it falls short
of the protocol the wrapper steps in, never the service:

- PKCE: an authorization request without `code_challenge_method=S256` and a
  `code_challenge` is refused, and the code it gives is only exchanged with
  the matching `code_verifier` (the mock itself ignores both).
- A public client: its token endpoint takes only client_secret_basic or
  client_secret_post, so a token request that authenticates no client gets
  Basic credentials for its own client_id, as a public client's exchange
  (PKCE proves it) would be taken by a provider that registers it.

With --serve-port it then serves the API (scripts/local_server.py, `make
run-oidc`) with sign-in through it: the users given with --user are one
click on the provider's form, with those groups; any other name typed signs
in without a group.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

CLIENT_ID = "approval-workflows-local"
Environ = dict[str, Any]
StartResponse = Callable[..., Any]


def s256(verifier: str) -> str:
    """The S256 code challenge of `verifier` (RFC 7636 section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class PkcePublicClient:
    """WSGI middleware around the mock: PKCE S256 enforced, public clients taken."""

    def __init__(self, provider: Callable[[Environ, StartResponse], Iterable[bytes]]) -> None:
        self.provider = provider
        self.challenges: dict[str, str] = {}  # code -> the challenge its request sent
        self.lock = threading.Lock()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/oauth2/authorize":
            return self._authorize(environ, start_response)
        if path == "/oauth2/token" and environ.get("REQUEST_METHOD") == "POST":
            return self._token(environ, start_response)
        return self.provider(environ, start_response)

    def _authorize(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        query = parse_qs(environ.get("QUERY_STRING", ""))
        challenge = query.get("code_challenge", [""])[0]
        if query.get("code_challenge_method") != ["S256"] or len(challenge) < 43:
            return _refuse(start_response, "invalid_request", "PKCE with S256 is required")

        def noting_the_code(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            for name, value in headers:
                code = parse_qs(urlsplit(value).query).get("code")
                if name.lower() == "location" and code:
                    with self.lock:
                        self.challenges[code[0]] = challenge
            return start_response(status, headers, *rest)

        return self.provider(environ, noting_the_code)

    def _token(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        form = parse_qs(body.decode("utf-8"))
        if form.get("grant_type") == ["authorization_code"]:
            with self.lock:
                challenge = self.challenges.pop(form.get("code", [""])[0], None)
            verifier = form.get("code_verifier", [""])[0]
            if challenge is None or not verifier or s256(verifier) != challenge:
                return _refuse(start_response, "invalid_grant", "code_verifier does not match")
        client = form.get("client_id", [""])[0]
        if "HTTP_AUTHORIZATION" not in environ and client and "client_secret" not in form:
            credentials = base64.b64encode(f"{client}:public".encode()).decode()
            environ["HTTP_AUTHORIZATION"] = f"Basic {credentials}"
        environ["wsgi.input"] = io.BytesIO(body)
        return self.provider(environ, start_response)


def _refuse(start_response: StartResponse, error: str, description: str) -> Iterable[bytes]:
    import json

    body = json.dumps({"error": error, "error_description": description}).encode()
    start_response("400 Bad Request", [("Content-Type", "application/json")])
    return [body]


def users(given: Sequence[str]) -> list[Any]:
    """The mock's users from NAME=GROUP,GROUP arguments."""
    from oidc_provider_mock import User

    found = []
    for each in given:
        name, _, groups = each.partition("=")
        found.append(User(sub=name, claims={"groups": [g for g in groups.split(",") if g]}))
    return found


@contextlib.contextmanager
def serving(port: int = 0, given_users: Sequence[str] = ()) -> Iterator[BaseWSGIServer]:
    """The wrapped provider on 127.0.0.1:`port` (0: a free one), on a thread."""
    import oidc_provider_mock
    from werkzeug.serving import make_server

    os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")  # plain HTTP, on loopback only
    provider = oidc_provider_mock.app(require_nonce=True, user_claims=users(given_users))
    server = make_server("127.0.0.1", port, PkcePublicClient(provider), threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--user", action="append", default=[], help="NAME=GROUP,GROUP")
    parser.add_argument("--serve-port", type=int, help="also serve the API on this port")
    parser.add_argument("--host", default="127.0.0.1", help="where the API listens")
    args = parser.parse_args(argv)
    with serving(args.port, args.user) as server:
        issuer = f"http://127.0.0.1:{server.server_port}"
        print(f"OpenID provider on {issuer} (client id {CLIENT_ID})", flush=True)
        if args.serve_port is None:
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
            return 0
        environment = {
            **os.environ,
            "WORKFLOW_AUTH": "jwt",
            "WORKFLOW_JWT_ISSUER": issuer,
            "WORKFLOW_JWKS_URL": f"{issuer}/jwks",
            "WORKFLOW_JWT_AUDIENCE": CLIENT_ID,
            "WORKFLOW_OIDC_ISSUER": issuer,
            "WORKFLOW_OIDC_CLIENT_ID": CLIENT_ID,
            # Seals the session cookies: a new one each start ends the sessions of the last.
            "WORKFLOW_CURSOR_SECRET": os.environ.get("WORKFLOW_CURSOR_SECRET")
            or os.urandom(32).hex(),
        }
        serve = [sys.executable, "scripts/local_server.py", "--host", args.host]
        serve += ["--port", str(args.serve_port)]
        with contextlib.suppress(KeyboardInterrupt):
            return subprocess.run(serve, env=environment, check=False).returncode
    return 130


if __name__ == "__main__":
    sys.exit(main())
