"""Who a recorded event tells, and of what: the notifier's rule. Pure.

    event                                   who is told                      kind
    a run arrives at a step (ARRIVALS)      each principal the step awaits   arrived
                                            its `notify` principals that     watching
                                            are not among its approvers
    step.reminded                           each principal the step awaits   reminded
    step.escalated                          the escalation targets           escalated
    run.completed, run.rejected,            the requester (user:)            completed, rejected,
    run.returned, run.cancelled                                              returned, cancelled

A step awaits its approvers; a step open to anyone (no approvers) awaits
nobody by name, and awaits, for telling, the principals its `notify` names
(anyone may decide it, so they are asked to: with links and buttons). On a
step with approvers, `notify` names people told of each arrival besides
them, who may not decide it by name: they are told `watching` (the run's
page only, no reminders, no delegates). An active delegate of a user asked
to decide is told too, on the user's behalf (`with_delegates`).

Each notification has a once-key, (run, round, step, principal, kind): the
sender puts a "sent" marker under it with a conditional write before it
sends, so a notification goes at most once, however often its event is
delivered and however many senders there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from chalicelib.domain import events
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import USER_PREFIX, Delegation
from chalicelib.domain.names import canonical_principal
from chalicelib.domain.record import Record

ARRIVED, REMINDED, ESCALATED = "arrived", "reminded", "escalated"
# A run arrived at a step whose `notify` names the principal, who is not
# among its approvers: told, not asked to decide (the run's page only).
WATCHING = "watching"
# The kinds that ask someone to decide (their email carries the action links).
ASKING = (ARRIVED, REMINDED, ESCALATED)
# The kinds that tell of the step a run waits at (a late one tells nobody).
OF_A_STEP = (*ASKING, WATCHING)
# What an asked user may do from a message: its links and buttons.
DECISIONS = (ActionKind.APPROVE.value, ActionKind.REJECT.value)
# The events by which a run arrives at a step: a start, an advance, a
# resubmit and a move each record step.activated; a reassign records
# run.reassigned, its step awaiting the new approvers (those it awaited
# already were told of this step, and its once-key keeps them from a second).
ARRIVALS = frozenset({events.STEP_ACTIVATED, events.RUN_REASSIGNED})
# The run's outcomes its requester is told of, by event type.
OUTCOMES = {
    events.RUN_COMPLETED: RunStatus.COMPLETED.value,
    events.RUN_REJECTED: RunStatus.REJECTED.value,
    events.RUN_RETURNED: RunStatus.RETURNED.value,
    events.RUN_CANCELLED: RunStatus.CANCELLED.value,
}


class Notice(Record):
    """One notification an event implies: `principal` is told of `kind`."""

    kind: str
    principal: str
    run_id: int
    workflow_id: int
    round: int
    # The step it is about (0 where the run has none: it ended).
    step_id: int
    # A delegate told for this delegator (None: for themselves).
    on_behalf_of: Optional[str] = None

    @property
    def once_key(self) -> str:
        """(run, round, step, principal, kind): sent at most once."""
        principal = canonical_principal(self.principal)
        return f"{self.run_id}#{self.round}#{self.step_id}#{principal}#{self.kind}"

    @property
    def asks(self) -> bool:
        """Whether it asks its principal to decide the step."""
        return self.kind in ASKING

    @property
    def of_a_step(self) -> bool:
        """Whether it tells of the step the run waits at (asking or not)."""
        return self.kind in OF_A_STEP


class SlackPost(Record):
    """A Slack message the notifier posted about a run's step: updated, its
    buttons taken away, once the step is decided (by any channel)."""

    run_id: int
    round: int
    step_id: int
    channel: str
    ts: str
    principal: str


def implied(cloud_event: Mapping[str, Any]) -> tuple[Notice, ...]:
    """The notifications a recorded CloudEvent implies (before delegates)."""
    kind = _kind(cloud_event["type"])
    data = cloud_event.get("data") or {}
    if kind is None or data.get("run_id") is None:
        return ()
    step = data.get("step") or {}
    round_ = int(data.get("round") or 1)
    step_id = int(step.get("id") or 0)
    unique: dict[str, tuple[str, str]] = {}
    for principal, told_of in _told(kind, data, step):
        # One notice per person, however their name is written: the first
        # (asked to decide, where they are both asked and watching).
        unique.setdefault(canonical_principal(principal), (principal, told_of))
    return tuple(
        Notice(told_of, principal, data["run_id"], data["workflow_id"], round_, step_id)
        for principal, told_of in unique.values()
    )


def _told(kind: str, data: Mapping[str, Any], step: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(principal, kind) of each one an event of `kind` tells: the rule above.
    Events recorded before steps had `notify` carry none: nobody else."""
    if kind in OUTCOMES.values():
        requester = data.get("requested_by")
        return [(USER_PREFIX + requester, kind)] if requester else []
    if kind == ESCALATED:
        return [(principal, kind) for principal in data.get("escalated_to") or []]
    approvers: Sequence[str] = step.get("approvers") or []
    notify: Sequence[str] = step.get("notify") or []
    if not approvers:  # open to anyone: those it names to tell are asked
        return [(principal, kind) for principal in notify]
    asked = [(principal, kind) for principal in approvers]
    return asked + [(principal, WATCHING) for principal in notify] if kind == ARRIVED else asked


def _kind(event_type: str) -> Optional[str]:
    if event_type in ARRIVALS:
        return ARRIVED
    if event_type == events.STEP_REMINDED:
        return REMINDED
    if event_type == events.STEP_ESCALATED:
        return ESCALATED
    return OUTCOMES.get(event_type)


def delegators(notices: Iterable[Notice]) -> list[str]:
    """The users whose active delegates are told too: those asked to decide."""
    return [
        notice.principal[len(USER_PREFIX) :]
        for notice in notices
        if notice.asks and notice.principal.startswith(USER_PREFIX)
    ]


def with_delegates(
    notices: Sequence[Notice], lent: Iterable[Delegation], at: str
) -> tuple[Notice, ...]:
    """`notices`, and for each user asked to decide, one for each delegate of
    theirs whose delegation is active at `at` and covers the run's workflow."""
    added: list[Notice] = []
    for notice in notices:
        if not (notice.asks and notice.principal.startswith(USER_PREFIX)):
            continue
        user = canonical_principal(notice.principal)
        for delegation in lent:
            if (
                canonical_principal(USER_PREFIX + delegation.delegator) == user
                and delegation.active_at(at)
                and delegation.covers(notice.workflow_id)
            ):
                added.append(
                    notice._replace(
                        principal=delegation.delegate, on_behalf_of=delegation.delegator
                    )
                )
    told = {canonical_principal(notice.principal) for notice in notices}
    return (*notices, *(n for n in added if canonical_principal(n.principal) not in told))
