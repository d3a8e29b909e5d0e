"""The rules on their own: what approve, reject and cancel do to a run, and who may."""

from __future__ import annotations

import pytest

from chalicelib.domain import decision, errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Decision, Policy, Run, Step

AT = "2030-01-02T03:04:05.000Z"
MANAGER = Step(1, 7, "Manager", 1)
FINANCE = Step(2, 7, "Finance", 2)


def run_at(step: Step | None, status: RunStatus = RunStatus.IN_PROGRESS) -> Run:
    return Run(3, 7, "Laptop", status, step, AT, AT)


def test_an_approval_with_a_step_after_moves_the_run_there() -> None:
    assert decision.decide(
        run_at(MANAGER), ActionKind.APPROVE, "alice", "ok", FINANCE, AT
    ) == Decision(ActionKind.APPROVE, "alice", "ok", RunStatus.IN_PROGRESS, FINANCE, AT)


def test_an_approval_of_the_last_step_completes_the_run() -> None:
    assert decision.decide(run_at(FINANCE), ActionKind.APPROVE, "alice", "", None, AT) == Decision(
        ActionKind.APPROVE, "alice", "", RunStatus.COMPLETED, None, AT
    )


@pytest.mark.parametrize("next_step", [FINANCE, None], ids=["more-steps", "last-step"])
def test_a_rejection_ends_the_run_whatever_follows(next_step: Step | None) -> None:
    assert decision.decide(
        run_at(MANAGER), ActionKind.REJECT, "bob", "no", next_step, AT
    ) == Decision(ActionKind.REJECT, "bob", "no", RunStatus.REJECTED, None, AT)


def test_a_cancellation_ends_the_run_as_cancelled() -> None:
    assert decision.decide(
        run_at(MANAGER), ActionKind.CANCEL, "ann", "moot", FINANCE, AT
    ) == Decision(ActionKind.CANCEL, "ann", "moot", RunStatus.CANCELLED, None, AT)


@pytest.mark.parametrize("action", [ActionKind.SKIP, ActionKind.RESUBMIT])
def test_a_skip_or_a_resubmit_is_no_decision_of_a_step(action: ActionKind) -> None:
    with pytest.raises(ValueError):
        decision.decide(run_at(MANAGER), action, "carol", "", FINANCE, AT)


# -- quorums ---------------------------------------------------------------------

TWO_OF = Step(1, 7, "Finance", 1, ("group:finance", "user:cfo"), 2)


def test_an_approval_short_of_the_quorum_keeps_the_run_at_its_step() -> None:
    run = run_at(TWO_OF)
    assert not decision.needs_next_step(run, ActionKind.APPROVE)
    assert decision.decide(run, ActionKind.APPROVE, "fay", "", None, AT) == Decision(
        ActionKind.APPROVE, "fay", "", RunStatus.IN_PROGRESS, TWO_OF, AT, ("fay",), None, ("",)
    )


def test_the_approval_that_meets_the_quorum_moves_the_run_on() -> None:
    run = run_at(TWO_OF)._replace(current_step_approved_by=("fay",))
    assert decision.needs_next_step(run, ActionKind.APPROVE)
    assert decision.decide(run, ActionKind.APPROVE, "cfo", "", FINANCE, AT) == Decision(
        ActionKind.APPROVE, "cfo", "", RunStatus.IN_PROGRESS, FINANCE, AT
    )


# -- who may decide ----------------------------------------------------------------


def test_a_step_without_approvers_admits_anyone() -> None:
    decision.check_decider(run_at(MANAGER), ActionKind.APPROVE, "anyone", frozenset())


@pytest.mark.parametrize(
    ("actor", "groups"),
    [("cfo", frozenset()), ("fay", frozenset({"finance"})), ("fay", frozenset({"x", "finance"}))],
)
def test_a_step_admits_its_users_and_the_members_of_its_groups(
    actor: str, groups: frozenset[str]
) -> None:
    decision.check_decider(run_at(TWO_OF), ActionKind.APPROVE, actor, groups)


@pytest.mark.parametrize("action", [ActionKind.APPROVE, ActionKind.REJECT])
def test_anyone_else_may_not_decide_it(action: ActionKind) -> None:
    with pytest.raises(errors.Forbidden, match="may not decide step 'Finance'"):
        decision.check_decider(run_at(TWO_OF), action, "finance", frozenset({"sales"}))


@pytest.mark.parametrize("action", [ActionKind.APPROVE, ActionKind.REJECT])
def test_the_requester_may_not_decide_their_own_run_unless_the_workflow_allows(
    action: ActionKind,
) -> None:
    run = run_at(MANAGER)._replace(requested_by="ann")
    with pytest.raises(errors.Forbidden, match="self-approval"):
        decision.check_decider(run, action, "ann", frozenset())
    allowed = run._replace(policy=Policy(allow_self_approval=True))
    decision.check_decider(allowed, action, "ann", frozenset())


def test_an_approver_of_an_earlier_step_may_not_approve_another_under_distinct_approvers() -> None:
    run = run_at(FINANCE)._replace(approvers=("bob",))
    decision.check_decider(run, ActionKind.APPROVE, "bob", frozenset())
    strict = run._replace(policy=Policy(distinct_approvers=True))
    with pytest.raises(errors.Forbidden, match="distinct approvers"):
        decision.check_decider(strict, ActionKind.APPROVE, "bob", frozenset())
    decision.check_decider(strict, ActionKind.REJECT, "bob", frozenset())


@pytest.mark.parametrize("comment", ["", "  ", "\u200b"])
def test_a_rejection_without_a_reason_is_refused_where_the_workflow_asks_for_one(
    comment: str,
) -> None:
    run = run_at(MANAGER)._replace(policy=Policy(reject_requires_comment=True))
    with pytest.raises(errors.Unprocessable, match="comment"):
        decision.check_decider(run, ActionKind.REJECT, "bob", frozenset(), comment)
    decision.check_decider(run, ActionKind.REJECT, "bob", frozenset(), "over budget")
    decision.check_decider(run, ActionKind.APPROVE, "bob", frozenset(), comment)


def test_approving_a_step_twice_is_a_conflict_and_comes_after_the_403s() -> None:
    run = run_at(TWO_OF)._replace(current_step_approved_by=("fay",), requested_by="fay")
    with pytest.raises(errors.Forbidden):
        decision.check_decider(run, ActionKind.APPROVE, "fay", frozenset({"finance"}))
    run = run._replace(requested_by=None)
    with pytest.raises(errors.Conflict, match="already approved"):
        decision.check_decider(run, ActionKind.APPROVE, "fay", frozenset({"finance"}))
    decision.check_decider(run, ActionKind.REJECT, "fay", frozenset({"finance"}))


def test_the_inbox_rule_is_the_decision_rule() -> None:
    run = run_at(TWO_OF)._replace(current_step_approved_by=("fay",), requested_by="ann")
    assert decision.awaits(run, "cfo", frozenset())
    assert decision.awaits(run, "gus", frozenset({"finance"}))
    assert not decision.awaits(run, "fay", frozenset({"finance"}))  # approved already
    assert not decision.awaits(run, "ann", frozenset({"finance"}))  # the requester
    assert not decision.awaits(run, "gus", frozenset())  # not an approver
    assert not decision.awaits(run_at(None, RunStatus.COMPLETED), "cfo", frozenset())


@pytest.mark.parametrize(
    ("requested_by", "actor", "admin", "allowed"),
    [
        ("ann", "ann", False, True),
        ("ann", "bob", False, False),
        ("ann", "bob", True, True),
        (None, "bob", False, True),
    ],
)
def test_the_requester_or_an_admin_may_cancel(
    requested_by: str | None, actor: str, admin: bool, allowed: bool
) -> None:
    run = run_at(MANAGER)._replace(requested_by=requested_by)
    if allowed:
        decision.check_requesters_action(run, ActionKind.CANCEL, actor, admin)
    else:
        with pytest.raises(errors.Forbidden, match="requester"):
            decision.check_requesters_action(run, ActionKind.CANCEL, actor, admin)


def test_an_ended_run_cannot_be_cancelled() -> None:
    with pytest.raises(errors.Conflict, match=r"^Run is not in progress$"):
        decision.check_requesters_action(
            run_at(None, RunStatus.CANCELLED), ActionKind.CANCEL, "ann", True
        )


def test_the_step_to_decide_is_the_current_one() -> None:
    assert decision.step_to_decide(run_at(MANAGER)) == MANAGER
    assert decision.step_to_decide(run_at(MANAGER), expected_step_id=MANAGER.id) == MANAGER


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.REJECTED, RunStatus.CANCELLED])
def test_an_ended_run_has_no_step_to_decide(status: RunStatus) -> None:
    with pytest.raises(errors.Conflict, match=r"^Run is not in progress$"):
        decision.step_to_decide(run_at(None, status), expected_step_id=MANAGER.id)


def test_a_run_past_the_expected_step_is_stale_and_says_where_it_is() -> None:
    with pytest.raises(errors.StaleRun) as raised:
        decision.step_to_decide(run_at(FINANCE), expected_step_id=MANAGER.id)

    assert raised.value.details == {"current_step_id": FINANCE.id}
    assert "'Finance'" in raised.value.message
