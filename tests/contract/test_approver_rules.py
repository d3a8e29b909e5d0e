"""Approver rules through the engine, on every backend: who may decide each step,
quorums of distinct approvers, the policy flags, cancel, and the inbox."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import count

import pytest

from chalicelib import engine
from chalicelib.api.representations import listed_event
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.domain.models import DEFAULT_POLICY, Deadline, Policy, Run, StepRule, Workflow
from chalicelib.storage import Storage

FINANCE = frozenset({"finance"})
T0 = "2030-01-01T00:00:00.000Z"


def ticking() -> Iterator[str]:
    for second in count():
        yield f"2030-01-01T00:{second // 60:02d}:{second % 60:02d}.000Z"


@pytest.fixture
def clock() -> engine.Clock:
    ticks = ticking()
    return lambda: next(ticks)


def purchase(storage: Storage, clock: engine.Clock, policy: Policy = DEFAULT_POLICY) -> Workflow:
    """Manager (anyone), Finance (2 of the finance group or the CFO), CFO alone."""
    steps = [
        StepRule("Manager"),
        StepRule("Finance", ("group:finance", "user:cfo"), 2),
        StepRule("CFO", ("user:cfo",)),
    ]
    return engine.create_workflow(storage, "Purchase", "", steps, clock=clock, policy=policy)


def at_finance(storage: Storage, clock: engine.Clock, policy: Policy = DEFAULT_POLICY) -> Run:
    workflow = purchase(storage, clock, policy)
    run = engine.start_run(storage, workflow.id, "Laptop", "ann", clock=clock)
    return engine.approve(storage, run.id, "mo", clock=clock)


def unchanged(storage: Storage, run: Run) -> None:
    """The run is stored as it was: the refused request wrote nothing."""
    assert storage.get_run(run.id) == run


# -- definitions --------------------------------------------------------------------


def test_step_rules_and_policy_flags_are_stored_and_read_back(
    storage: Storage, clock: engine.Clock
) -> None:
    policy = Policy(allow_self_approval=True, distinct_approvers=True)
    workflow = purchase(storage, clock, policy)
    appended = engine.append_step(storage, workflow.id, StepRule("Board", ("group:board",), 3))

    stored = engine.get_workflow(storage, workflow.id)
    assert stored == workflow._replace(steps=(*workflow.steps, appended))
    assert stored.policy == policy
    assert [(s.approvers, s.required_approvals) for s in stored.steps] == [
        ((), 1),
        (("group:finance", "user:cfo"), 2),
        (("user:cfo",), 1),
        (("group:board",), 3),
    ]
    assert engine.list_workflows(storage, 10).items == (stored,)


def test_a_run_carries_its_steps_rules_and_its_workflows_policy(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock, Policy(reject_requires_comment=True))
    assert run.current_step is not None
    assert run.current_step.approvers == ("group:finance", "user:cfo")
    assert run.current_step.required_approvals == 2
    assert run.policy == Policy(reject_requires_comment=True)
    assert storage.get_run(run.id) == run
    assert engine.list_runs(storage, None, None, 10).items == (run._replace(actions=()),)


# -- quorum -------------------------------------------------------------------------


def test_a_step_waits_for_its_quorum_of_distinct_approvers(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock)
    reached = run.current_step_since

    first = engine.approve(storage, run.id, "fay", clock=clock, groups=FINANCE)
    assert (first.status, first.current_step_id) == (RunStatus.IN_PROGRESS, run.current_step_id)
    assert first.current_step_approved_by == ("fay",)
    assert first.current_step_since == reached
    assert storage.get_run(run.id) == first

    with pytest.raises(errors.Conflict, match="'fay' already approved step 'Finance'"):
        engine.approve(storage, run.id, "fay", clock=clock, groups=FINANCE)
    unchanged(storage, first)

    second = engine.approve(storage, run.id, "cfo", clock=clock)
    assert second.current_step is not None and second.current_step.name == "CFO"
    assert second.current_step_approved_by == ()
    assert second.current_step_since == second.actions[-1].created_at
    assert [(a.step_name, a.actor) for a in second.actions] == [
        ("Manager", "mo"),
        ("Finance", "fay"),
        ("Finance", "cfo"),
    ]
    assert storage.get_run(run.id) == second
    done = engine.approve(storage, run.id, "cfo", clock=clock)
    assert done.status == RunStatus.COMPLETED and done.current_step_since is None


def test_one_eligible_rejection_ends_the_run_whatever_approvals_it_had(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock)
    engine.approve(storage, run.id, "fay", clock=clock, groups=FINANCE)

    rejected = engine.reject(storage, run.id, "fay", "changed my mind", clock=clock, groups=FINANCE)

    assert rejected.status == RunStatus.REJECTED and rejected.current_step_approved_by == ()
    assert storage.get_run(run.id) == rejected


# -- who may decide -----------------------------------------------------------------


@pytest.mark.parametrize("decide", [engine.approve, engine.reject], ids=["approve", "reject"])
def test_only_the_steps_approvers_may_decide_it(
    storage: Storage, clock: engine.Clock, decide: Callable[..., Run]
) -> None:
    run = at_finance(storage, clock)
    with pytest.raises(errors.Forbidden, match="'gus' may not decide step 'Finance'"):
        decide(storage, run.id, "gus", "x", clock=clock, groups=frozenset({"sales"}))
    unchanged(storage, run)
    assert decide(storage, run.id, "gus", "x", clock=clock, groups=FINANCE).actions[-1].actor == (
        "gus"
    )


@pytest.mark.parametrize("decide", [engine.approve, engine.reject], ids=["approve", "reject"])
def test_the_requester_may_not_decide_their_own_run_unless_allowed(
    storage: Storage, clock: engine.Clock, decide: Callable[..., Run]
) -> None:
    workflow = engine.create_workflow(storage, "Own", "", ["Only"], clock=clock)
    run = engine.start_run(storage, workflow.id, "Mine", "ann", clock=clock)
    with pytest.raises(errors.Forbidden, match="self-approval"):
        decide(storage, run.id, "ann", "x", clock=clock)
    unchanged(storage, run)

    lenient = engine.create_workflow(
        storage, "Lenient", "", ["Only"], clock=clock, policy=Policy(allow_self_approval=True)
    )
    own = engine.start_run(storage, lenient.id, "Mine", "ann", clock=clock)
    assert decide(storage, own.id, "ann", "x", clock=clock).status != RunStatus.IN_PROGRESS
    anonymous = engine.start_run(storage, workflow.id, "Nobody's", None, clock=clock)
    assert decide(storage, anonymous.id, "ann", "x", clock=clock).status != RunStatus.IN_PROGRESS


def test_distinct_approvers_may_not_approve_two_steps_of_a_run(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock, Policy(distinct_approvers=True))
    engine.approve(storage, run.id, "fay", clock=clock, groups=FINANCE)
    moved = engine.approve(storage, run.id, "cfo", clock=clock)

    with pytest.raises(errors.Forbidden, match="distinct approvers"):
        engine.approve(storage, run.id, "cfo", clock=clock)
    unchanged(storage, moved)
    # Rejecting is no second approval.
    assert engine.reject(storage, run.id, "cfo", clock=clock).status == RunStatus.REJECTED


def test_a_rejection_needs_its_reason_where_the_workflow_says_so(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock, Policy(reject_requires_comment=True))
    with pytest.raises(errors.Unprocessable, match="comment"):
        engine.reject(storage, run.id, "cfo", " \u200b ", clock=clock)
    unchanged(storage, run)
    assert (
        engine.reject(storage, run.id, "cfo", "over budget", clock=clock).status
        == RunStatus.REJECTED
    )


def test_an_ended_run_is_not_in_progress_for_everyone(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock)
    engine.reject(storage, run.id, "cfo", clock=clock)
    for actor in ("cfo", "ann", "gus"):
        with pytest.raises(errors.Conflict, match=r"^Run is not in progress$"):
            engine.approve(storage, run.id, actor, clock=clock)


def test_a_step_appended_later_decides_with_its_own_rules(
    storage: Storage, clock: engine.Clock
) -> None:
    workflow = engine.create_workflow(storage, "Grows", "", ["First"], clock=clock)
    run = engine.start_run(storage, workflow.id, "Long", clock=clock)
    engine.append_step(storage, workflow.id, StepRule("Legal", ("user:lee",)))

    at_legal = engine.approve(storage, run.id, "mo", clock=clock)
    with pytest.raises(errors.Forbidden):
        engine.approve(storage, run.id, "mo", clock=clock)
    assert at_legal.current_step is not None and at_legal.current_step.approvers == ("user:lee",)
    assert engine.approve(storage, run.id, "lee", clock=clock).status == RunStatus.COMPLETED


# -- cancel -------------------------------------------------------------------------


def test_the_requester_cancels_their_run_with_a_reason(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock)
    with pytest.raises(errors.Forbidden, match="requester"):
        engine.cancel(storage, run.id, "mo", "not mine", clock=clock)
    unchanged(storage, run)

    cancelled = engine.cancel(storage, run.id, "ann", "bought elsewhere", clock=clock)

    assert (cancelled.status, cancelled.current_step) == (RunStatus.CANCELLED, None)
    last = cancelled.actions[-1]
    assert (last.action, last.actor, last.step_name, last.comment) == (
        ActionKind.CANCEL,
        "ann",
        "Finance",
        "bought elsewhere",
    )
    assert storage.get_run(run.id) == cancelled
    assert engine.audit_run(storage, run.id).first_invalid_seq is None
    assert engine.list_runs(storage, None, RunStatus.CANCELLED, 10).items == (
        cancelled._replace(actions=()),
    )
    with pytest.raises(errors.Conflict, match=r"^Run is not in progress$"):
        engine.cancel(storage, run.id, "ann", clock=clock)


def test_an_admin_cancels_any_run_and_anyone_a_run_without_requester(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock)
    assert (
        engine.cancel(storage, run.id, "ada", admin=True, clock=clock).status == RunStatus.CANCELLED
    )
    workflow = engine.get_workflow(storage, run.workflow_id)
    orphan = engine.start_run(storage, workflow.id, "Nobody's", None, clock=clock)
    assert engine.cancel(storage, orphan.id, "gus", clock=clock).status == RunStatus.CANCELLED


# -- the inbox ----------------------------------------------------------------------


def inbox_ids(storage: Storage, actor: str, groups: frozenset[str] = frozenset()) -> list[int]:
    """Every run in the actor's inbox, walked one page at a time."""
    ids: list[int] = []
    cursor = None
    for _ in range(100):
        page = engine.inbox(storage, actor, groups, 1, cursor)
        ids += [item.run.id for item in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return ids
    raise AssertionError("the inbox never ended")


def test_the_inbox_holds_what_the_caller_may_decide_now_longest_waiting_first(
    storage: Storage, clock: engine.Clock
) -> None:
    workflow = purchase(storage, clock)
    first = engine.start_run(storage, workflow.id, "One", "ann", clock=clock)
    second = engine.start_run(storage, workflow.id, "Two", "ann", clock=clock)
    third = engine.start_run(storage, workflow.id, "Three", "fay", clock=clock)

    assert inbox_ids(storage, "mo") == [first.id, second.id, third.id]
    assert inbox_ids(storage, "ann") == [third.id]  # not their own runs
    assert inbox_ids(storage, "fay", FINANCE) == [first.id, second.id]

    engine.approve(storage, second.id, "mo", clock=clock)  # second reaches Finance
    engine.approve(storage, first.id, "mo", clock=clock)  # then first
    assert inbox_ids(storage, "mo") == [third.id]
    assert inbox_ids(storage, "fay", FINANCE) == [second.id, first.id]
    assert inbox_ids(storage, "fay") == []  # without the group: not an approver
    assert inbox_ids(storage, "cfo") == [third.id, second.id, first.id]

    engine.approve(storage, second.id, "fay", clock=clock, groups=FINANCE)
    assert inbox_ids(storage, "fay", FINANCE) == [first.id]  # approved it already
    assert inbox_ids(storage, "gus", FINANCE) == [third.id, second.id, first.id]

    engine.cancel(storage, first.id, "ann", clock=clock)
    engine.approve(storage, second.id, "gus", clock=clock, groups=FINANCE)  # to CFO
    assert inbox_ids(storage, "gus", FINANCE) == [third.id]  # Manager: anyone
    assert inbox_ids(storage, "cfo") == [third.id, second.id]


def test_the_inbox_leaves_out_steps_blocked_by_distinct_approvers(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock, Policy(distinct_approvers=True))
    assert inbox_ids(storage, "cfo") == [run.id]
    engine.approve(storage, run.id, "fay", clock=clock, groups=FINANCE)
    engine.approve(storage, run.id, "cfo", clock=clock)  # now at the CFO step
    assert inbox_ids(storage, "cfo") == []


def test_an_inbox_page_continues_where_the_last_ended_while_runs_move(
    storage: Storage, clock: engine.Clock
) -> None:
    workflow = engine.create_workflow(storage, "Open", "", ["Any", "Also any"], clock=clock)
    runs = [engine.start_run(storage, workflow.id, f"R{n}", clock=clock) for n in range(5)]

    page = engine.inbox(storage, "mo", frozenset(), 2)
    assert [item.run.id for item in page.items] == [runs[0].id, runs[1].id]
    assert page.items[0].run == storage.get_run(runs[0].id)._replace(actions=())
    engine.approve(storage, runs[0].id, "zed", clock=clock)  # moves to the end
    engine.approve(storage, runs[3].id, "zed", clock=clock)  # and so does this one
    rest = engine.inbox(storage, "mo", frozenset(), 2, page.next_cursor)
    assert [item.run.id for item in rest.items] == [runs[2].id, runs[4].id]
    last = engine.inbox(storage, "mo", frozenset(), 2, rest.next_cursor)
    assert [item.run.id for item in last.items] == [runs[0].id, runs[3].id]
    assert (
        last.next_cursor is None
        or not engine.inbox(storage, "mo", frozenset(), 2, last.next_cursor).items
    )


def test_an_inbox_cursor_belongs_to_its_caller(storage: Storage, clock: engine.Clock) -> None:
    workflow = engine.create_workflow(storage, "Open", "", ["Any"], clock=clock)
    for n in range(3):
        engine.start_run(storage, workflow.id, f"R{n}", clock=clock)
    cursor = engine.inbox(storage, "mo", frozenset(), 1).next_cursor
    assert cursor is not None
    with pytest.raises(errors.InvalidInput, match="cursor"):
        engine.inbox(storage, "gus", frozenset(), 1, cursor)
    with pytest.raises(errors.InvalidInput, match="cursor"):
        engine.list_runs(storage, None, None, 1, cursor)


def test_approved_steps_leave_the_inbox_of_every_principal(
    storage: Storage, clock: engine.Clock
) -> None:
    steps = [StepRule(f"S{n}", tuple(f"user:u{i}" for i in range(50))) for n in range(3)]
    workflow = engine.create_workflow(storage, "Wide", "", steps, clock=clock)
    run = engine.start_run(storage, workflow.id, "Wide", clock=clock)
    assert all(inbox_ids(storage, f"u{i}") == [run.id] for i in (0, 25, 49))

    engine.approve(storage, run.id, "u7", clock=clock)
    engine.approve(storage, run.id, "u8", clock=clock)
    assert inbox_ids(storage, "u0") == [run.id]
    engine.reject(storage, run.id, "u9", clock=clock)
    assert all(inbox_ids(storage, f"u{i}") == [] for i in range(50))


def test_runs_of_steps_open_to_anyone_wait_for_everyone(
    storage: Storage, clock: engine.Clock
) -> None:
    workflow = engine.create_workflow(storage, "Open", "", ["Any"], clock=clock)
    run = engine.start_run(storage, workflow.id, "R", clock=clock)
    assert inbox_ids(storage, "x") == inbox_ids(storage, "y", FINANCE) == [run.id]
    assert engine.inbox(storage, "x", frozenset(), 10).items[0].run.current_step_approved_by == ()
    engine.approve(storage, run.id, "y", clock=clock)
    assert inbox_ids(storage, "x") == []
    assert ActionKind.APPROVE in {a.action for a in storage.get_run(run.id).actions}


# -- with events and deadlines ------------------------------------------------------


def run_event_types(storage: Storage, run_id: int) -> list[str]:
    page = engine.run_events(storage, run_id, 100)
    return [event.type for event in page.items]


def test_a_quorum_tells_each_approval_and_activates_the_next_step_once(
    storage: Storage, clock: engine.Clock
) -> None:
    run = at_finance(storage, clock)
    engine.approve(storage, run.id, "fay", clock=clock, groups=FINANCE)
    engine.approve(storage, run.id, "cfo", clock=clock)

    assert run_event_types(storage, run.id) == [
        "approval.run.started",
        "approval.step.activated",
        "approval.step.approved",  # Manager
        "approval.step.activated",  # Finance
        "approval.step.approved",  # fay: one of two, the run waits
        "approval.step.approved",  # cfo: two of two
        "approval.step.activated",  # CFO
    ]
    activated = listed_event(engine.run_events(storage, run.id, 100).items[3])
    assert activated["data"]["step"]["approvers"] == ["group:finance", "user:cfo"]
    assert activated["data"]["step"]["required_approvals"] == 2


def test_a_cancellation_is_told_with_its_reason(storage: Storage, clock: engine.Clock) -> None:
    run = at_finance(storage, clock)
    engine.cancel(storage, run.id, "ann", "bought elsewhere", clock=clock)

    last = listed_event(engine.run_events(storage, run.id, 100).items[-1])
    assert last["type"] == "approval.run.cancelled"
    assert (last["data"]["status"], last["data"]["actor"], last["data"]["comment"]) == (
        RunStatus.CANCELLED,
        "ann",
        "bought elsewhere",
    )


def test_an_escalated_step_admits_and_waits_for_those_it_was_escalated_to(
    storage: Storage, clock: engine.Clock
) -> None:
    board = StepRule(
        "Board",
        ("group:board",),
        1,
        Deadline(60, OnDeadline.ESCALATE, ("user:chair", "group:audit")),
    )
    workflow = engine.create_workflow(storage, "Escalating", "", [board], clock=lambda: T0)
    run = engine.start_run(storage, workflow.id, "Slow", clock=lambda: T0)
    with pytest.raises(errors.Forbidden):
        engine.approve(storage, run.id, "chair", clock=clock)
    assert inbox_ids(storage, "chair") == []

    assert engine.sweep(storage, lambda: "2030-01-01T00:01:00.000Z") == 1

    escalated = storage.get_run(run.id)
    assert escalated.current_step_escalated_to == ("user:chair", "group:audit")
    assert inbox_ids(storage, "chair") == [run.id]
    assert inbox_ids(storage, "al", frozenset({"audit"})) == [run.id]
    assert inbox_ids(storage, "bo", frozenset({"board"})) == [run.id]
    done = engine.approve(storage, run.id, "al", clock=clock, groups=frozenset({"audit"}))
    assert done.status == RunStatus.COMPLETED
    assert inbox_ids(storage, "chair") == inbox_ids(storage, "bo", frozenset({"board"})) == []
