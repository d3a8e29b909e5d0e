"""The state machine on its own: what approve and reject do to a run."""

from __future__ import annotations

import pytest

from chalicelib import decision, errors
from chalicelib.models import (
    APPROVE,
    COMPLETED,
    IN_PROGRESS,
    REJECT,
    REJECTED,
    Decision,
    Run,
    Step,
)

AT = "2030-01-02T03:04:05.000Z"
MANAGER = Step(1, 7, "Manager", 1)
FINANCE = Step(2, 7, "Finance", 2)


def run_at(step: Step | None, status: str = IN_PROGRESS) -> Run:
    return Run(3, 7, "Laptop", status, step, AT, AT)


def test_an_approval_with_a_step_after_moves_the_run_there() -> None:
    assert decision.decide(APPROVE, "alice", "ok", FINANCE, AT) == Decision(
        APPROVE, "alice", "ok", IN_PROGRESS, FINANCE, AT
    )


def test_an_approval_of_the_last_step_completes_the_run() -> None:
    assert decision.decide(APPROVE, "alice", "", None, AT) == Decision(
        APPROVE, "alice", "", COMPLETED, None, AT
    )


@pytest.mark.parametrize("next_step", [FINANCE, None], ids=["more-steps", "last-step"])
def test_a_rejection_ends_the_run_whatever_follows(next_step: Step | None) -> None:
    assert decision.decide(REJECT, "bob", "no", next_step, AT) == Decision(
        REJECT, "bob", "no", REJECTED, None, AT
    )


def test_an_unknown_action_is_a_bug_not_a_decision() -> None:
    with pytest.raises(ValueError):
        decision.decide("abstain", "carol", "", FINANCE, AT)


def test_the_step_to_decide_is_the_current_one() -> None:
    assert decision.step_to_decide(run_at(MANAGER)) == MANAGER
    assert decision.step_to_decide(run_at(MANAGER), expected_step_id=MANAGER.id) == MANAGER


@pytest.mark.parametrize("status", [COMPLETED, REJECTED])
def test_an_ended_run_has_no_step_to_decide(status: str) -> None:
    with pytest.raises(errors.Conflict, match=r"^Run is not in progress$"):
        decision.step_to_decide(run_at(None, status), expected_step_id=MANAGER.id)


def test_a_run_past_the_expected_step_is_stale_and_says_where_it_is() -> None:
    with pytest.raises(errors.StaleRun) as raised:
        decision.step_to_decide(run_at(FINANCE), expected_step_id=MANAGER.id)

    assert raised.value.details == {"current_step_id": FINANCE.id}
    assert "'Finance'" in raised.value.message
