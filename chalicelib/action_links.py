"""The use cases of one-time action links (chalicelib/domain/links.py): what a
link offers (GET /act/{token}: nothing changes), and its decision (POST),
taken by the engine's own decision function as the link's person, through
exactly the API's rules."""

from __future__ import annotations

from typing import Optional

from chalicelib import engine
from chalicelib.domain import errors, links
from chalicelib.domain.lifecycle import ActionKind
from chalicelib.domain.models import Run, Workflow
from chalicelib.domain.record import Record
from chalicelib.storage import Backend

LINKS_VARIABLE = "WORKFLOW_LINKS"


class Offer(Record):
    """What a live link offers: its decision on its run's step."""

    link: links.ActionLink
    run: Run
    workflow: Workflow


def check_enabled(verified_callers: bool, setting: Optional[str]) -> None:
    """NotFound where links are off: with verified callers (jwt) unless
    WORKFLOW_LINKS=on, or wherever WORKFLOW_LINKS=off."""
    switch = (setting or "").strip().lower()
    if switch == "off" or (verified_callers and switch != "on"):
        raise errors.NotFound("No such link")


def offer(storage: Backend, token: str, clock: engine.Clock = engine.utc_now) -> Offer:
    """The live link's offer; NotFound for a token that names none, Gone
    (with why) for one that can decide nothing any more."""
    link = _link(storage, token)
    run = storage.get_run(link.run_id, history=False)
    dead = links.why_dead(link, run, clock())
    if dead is not None:
        raise errors.Gone(dead)
    return Offer(link, run, storage.get_workflow(run.workflow_id))


def act(storage: Backend, token: str, comment: str, clock: engine.Clock = engine.utc_now) -> Offer:
    """Take the link's decision, once: its use is claimed first (one of the
    person's links for the step), then the engine decides as the person; a
    decision the rules refuse gives the use back, so the link may be used
    again (with a comment, say) while it lives. The offer, with the run as
    the decision left it."""
    offered = offer(storage, token, clock)
    link = offered.link
    if not storage.use_link(link, clock()):
        raise errors.Gone("Another of your links for this step was used already.")
    seen = engine.Seen(link.step_id, link.round, link.on_behalf_of, links.CHANNEL)
    decide = engine.approve if link.action == ActionKind.APPROVE else engine.reject
    try:
        run = decide(storage, link.run_id, link.person, comment, seen=seen, history=False)
    except errors.WorkflowError:
        storage.unuse_link(link)
        raise
    return offered._replace(run=run)


def _link(storage: Backend, token: str) -> links.ActionLink:
    found = storage.get_link(links.digest(token)) if links.well_formed(token) else None
    if found is None:
        raise errors.NotFound("No such link")
    return found
