"""One-time action links: a bearer capability to take one decision. Pure.

A link's token has 256 random bits and is handed to its person only (in an
email); the stores keep its SHA-256 (`digest`), never the token. A link is
bound to its run, round, step, person and action; it works once; it expires
after WORKFLOW_LINK_TTL_SECONDS; it is dead once the step has moved on, the
run has ended, or another of that person's links for the step was used. The
decision it takes is the engine's own, as that person: the same rules as the
API's (chalicelib/action_links.py).
"""

from __future__ import annotations

import re
from typing import Optional

from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import Run
from chalicelib.domain.record import Record

TOKEN_BYTES = 32
# token_urlsafe(32): 43 characters of the URL-safe base64 alphabet, unpadded.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{43}")
DEFAULT_TTL_SECONDS = 259_200
CHANNEL = "email-link"


class ActionLink(Record):
    """What a link's token stands for (the token itself is never stored)."""

    digest: str
    run_id: int
    round: int
    step_id: int
    # The user it was sent to, and whom they decide for (a delegate's link).
    person: str
    action: str
    created_at: str
    expires_at: str
    on_behalf_of: Optional[str] = None
    # The digest of the link of this person for this step that was used (this
    # one's or a sibling's), and when: filled in where a store reads it.
    used_digest: Optional[str] = None
    used_at: Optional[str] = None


def new_token() -> str:
    import secrets

    return secrets.token_urlsafe(TOKEN_BYTES)


def digest(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode("ascii")).hexdigest()


def well_formed(token: str) -> bool:
    return TOKEN_PATTERN.fullmatch(token) is not None


def use_key(link: ActionLink) -> str:
    """What a person's links for one step share: one of them may be used."""
    from chalicelib.domain.names import canonical

    return f"{link.run_id}#{link.round}#{link.step_id}#{canonical(link.person)}"


def why_dead(link: ActionLink, run: Run, now: str) -> Optional[str]:
    """Why the link can no longer decide anything (None: it still may)."""
    if link.used_digest == link.digest:
        return "This link was used already."
    if link.used_digest is not None:
        return "Another of your links for this step was used already."
    if link.expires_at <= now:
        return "This link has expired."
    if run.status != RunStatus.IN_PROGRESS:
        return f"The run is {run.status} now."
    if run.current_step is None or run.current_step.id != link.step_id or run.round != link.round:
        return "The run has moved on from this step."
    return None
