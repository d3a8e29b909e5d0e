"""The notifier's rule on its own: who each kind of event tells, of what,
under which once-key; delegates told on their delegator's behalf."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain import events, notifications
from chalicelib.domain.models import Delegation
from chalicelib.domain.notifications import Notice

STEP = {"id": 7, "name": "Manager", "approvers": ["user:maria", "group:finance", "user:Maria"]}


def event(kind: str, **data: Any) -> dict[str, Any]:
    base = {"run_id": 3, "workflow_id": 1, "round": 2, "requested_by": "rita", "step": STEP}
    return {"type": kind, "data": {**base, **data}}


@pytest.mark.parametrize(
    "kind, told",
    [
        (events.STEP_ACTIVATED, "arrived"),
        # A reassign's step awaits its new approvers: they are asked as on arrival.
        (events.RUN_REASSIGNED, "arrived"),
        (events.STEP_REMINDED, "reminded"),
    ],
)
def test_an_arrival_and_a_reminder_tell_each_awaited_principal_once(kind: str, told: str) -> None:
    found = notifications.implied(event(kind))
    assert [(n.kind, n.principal) for n in found] == [
        (told, "user:maria"),
        (told, "group:finance"),
    ]
    assert found[0].once_key == f"3#2#7#user:maria#{told}"
    assert all(n.asks for n in found)


def test_an_escalation_tells_its_targets() -> None:
    found = notifications.implied(event(events.STEP_ESCALATED, escalated_to=["group:leads"]))
    assert [(n.kind, n.principal) for n in found] == [("escalated", "group:leads")]


@pytest.mark.parametrize(
    "kind, told",
    [
        (events.RUN_COMPLETED, "completed"),
        (events.RUN_REJECTED, "rejected"),
        (events.RUN_RETURNED, "returned"),
        (events.RUN_CANCELLED, "cancelled"),
    ],
)
def test_the_requester_is_told_of_each_outcome(kind: str, told: str) -> None:
    (notice,) = notifications.implied(event(kind, step=None))
    assert (notice.kind, notice.principal, notice.step_id, notice.asks) == (
        told,
        "user:rita",
        0,
        False,
    )


@pytest.mark.parametrize(
    "cloud_event",
    [
        event(events.STEP_APPROVED),
        event(events.WORKFLOW_CREATED, run_id=None),
        event(events.RUN_COMPLETED, requested_by=None),
        event(events.STEP_ACTIVATED, step={"id": 7, "name": "Anyone", "approvers": []}),
    ],
)
def test_what_asks_nothing_of_anyone_tells_nobody(cloud_event: dict[str, Any]) -> None:
    assert notifications.implied(cloud_event) == ()


WATCHED = {**STEP, "notify": ["user:Cy", "group:finance", "user:MARIA", "group:audit"]}


def test_an_arrival_tells_the_steps_notify_list_besides_its_approvers_without_asking() -> None:
    found = notifications.implied(event(events.STEP_ACTIVATED, step=WATCHED))
    # An approver the list names too is told once, as asked to decide.
    assert [(n.kind, n.principal, n.asks) for n in found] == [
        ("arrived", "user:maria", True),
        ("arrived", "group:finance", True),
        ("watching", "user:Cy", False),
        ("watching", "group:audit", False),
    ]
    assert found[2].once_key == "3#2#7#user:cy#watching" and found[2].of_a_step
    assert notifications.delegators(found) == ["maria"]  # no delegate watches for Cy


def test_a_reminder_asks_the_approvers_again_and_not_those_only_watching() -> None:
    found = notifications.implied(event(events.STEP_REMINDED, step=WATCHED))
    assert [(n.kind, n.principal) for n in found] == [
        ("reminded", "user:maria"),
        ("reminded", "group:finance"),
    ]


@pytest.mark.parametrize("kind, told", [(events.STEP_ACTIVATED, "arrived"),
                                        (events.RUN_REASSIGNED, "arrived"),
                                        (events.STEP_REMINDED, "reminded")])  # fmt: skip
def test_a_step_open_to_anyone_asks_those_its_notify_list_names(kind: str, told: str) -> None:
    step = {"id": 7, "name": "Anyone", "approvers": [], "notify": ["user:cy", "group:ops"]}
    found = notifications.implied(event(kind, step=step))
    assert [(n.kind, n.principal, n.asks) for n in found] == [
        (told, "user:cy", True),
        (told, "group:ops", True),
    ]


def test_an_active_delegate_covering_the_workflow_is_told_on_the_delegators_behalf() -> None:
    asked = (
        Notice("arrived", "user:maria", 3, 1, 1, 7),
        Notice("arrived", "group:finance", 3, 1, 1, 7),
    )
    now = "2026-12-01T10:00:00.000Z"

    def lent(
        delegate: str, workflow: Any = None, ends: str = "2026-12-09T00:00:00.000Z"
    ) -> Delegation:
        return Delegation(
            1, "Maria", delegate, workflow, "2026-11-30T00:00:00.000Z", ends, "", now, "maria"
        )

    told = notifications.with_delegates(
        asked,
        [lent("user:dave"), lent("user:eve", workflow=2), lent("user:old", ends=now)],
        now,
    )
    assert [(n.principal, n.on_behalf_of) for n in told] == [
        ("user:maria", None),
        ("group:finance", None),
        ("user:dave", "Maria"),
    ]
    assert notifications.delegators(asked) == ["maria"]
