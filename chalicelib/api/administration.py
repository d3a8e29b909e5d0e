"""The bodies of an administrator's changes of a run (POST /runs/{id}/reassign
and /move) as plain values, checked as chalicelib/api/validation.py checks
every body: a module of its own, loaded by those routes alone."""

from __future__ import annotations

from typing import Any, Optional

from chalicelib.api import validation
from chalicelib.domain import errors
from chalicelib.domain.record import Record


class Reassignment(Record):
    actor: Optional[str]
    approvers: tuple[str, ...]
    comment: str


class Move(Record):
    actor: Optional[str]
    to_version: int
    step: str
    comment: str


def reassignment(body: Any, actor_required: bool = True) -> Reassignment:
    """POST /runs/{id}/reassign: {"actor" (where the caller is not verified),
    "approvers": [principal, ...] (empty: anyone), "comment": why}."""
    names = ("approvers", "comment")
    fields = validation._fields(
        body,
        required=("actor", *names) if actor_required else names,
        optional=() if actor_required else ("actor",),
    )
    approvers = validation._principals(fields["approvers"], "approvers", validation.MAX_APPROVERS)
    comment = validation._text(fields, "comment", validation.MAX_TEXT, required=False)
    if not comment.strip():
        raise errors.InvalidInput("'comment' must say why the step is reassigned")
    return Reassignment(validation._actor(fields), approvers, comment)


def move(body: Any, actor_required: bool = True) -> Move:
    """POST /runs/{id}/move: {"actor" (where the caller is not verified),
    "to_version": n, "step": the name of the version's step, "comment"?}."""
    names = ("to_version", "step")
    fields = validation._fields(
        body,
        required=("actor", *names) if actor_required else names,
        optional=("comment",) if actor_required else ("actor", "comment"),
    )
    return Move(
        validation._actor(fields),
        validation._id(fields, "to_version"),
        validation._text(fields, "step", validation.MAX_NAME),
        validation._text(fields, "comment", validation.MAX_TEXT, required=False),
    )
