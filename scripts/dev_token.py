"""Print a development token for WORKFLOW_AUTH=jwt with WORKFLOW_JWT_SECRET.

    python scripts/dev_token.py maria finance,workflow-admins   (issuer, secret from env)

`make token USER=maria GROUPS=finance,workflow-admins` runs it (docs/auth.md):
signed HS256 with the shared secret, with the claims the service reads.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib.api import identity
from chalicelib.domain import errors

VALID_SECONDS = 12 * 60 * 60


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or not args[0].strip():
        print(
            "usage: make token USER=<actor> [GROUPS=<group>,<group>]: name the token's actor "
            "on make's command line (not your login's USER, which make also sees)",
            file=sys.stderr,
        )
        return 2
    environ = {**os.environ, "WORKFLOW_AUTH": "jwt"}
    try:
        config = identity.settings(environ)
    except errors.Unavailable:
        return 2  # settings() has logged what to set
    if config.secret is None:
        print(
            "make token signs with WORKFLOW_JWT_SECRET; set it (and not WORKFLOW_JWKS_URL)",
            file=sys.stderr,
        )
        return 2
    import jwt

    now = int(time.time())
    groups = [group.strip() for group in (args[1] if len(args) > 1 else "").split(",")]
    claims = {
        "iss": config.issuer,
        config.actor_claim: args[0].strip(),
        "iat": now,
        "exp": now + VALID_SECONDS,
        config.groups_claim: [g for g in groups if g],
    }
    if config.audience:
        claims["aud"] = config.audience
    print(jwt.encode(claims, config.secret, algorithm="HS256"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
