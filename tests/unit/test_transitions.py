"""The transitions compute a change from the run as read, whatever the storage
read of it: its whole history or none, and a revision of its own that they
pass on untouched."""

from __future__ import annotations

from chalicelib.domain import transitions
from chalicelib.domain.lifecycle import ActionKind
from chalicelib.domain.models import Run, StepRule, Workflow

AT = "2030-01-02T03:04:05.000Z"
LATER = "2030-01-02T03:05:00.000Z"
RULES = (StepRule("Board", required_approvals=2), StepRule("Sign-off"))
STEPS = tuple(rule.stored(i, 1, i) for i, rule in enumerate(RULES, start=1))
WORKFLOW = Workflow(1, "W", "", AT, STEPS)


def approved_once() -> Run:
    run = transitions.start_run(WORKFLOW, "PO", "rita", AT).made(7).run
    return transitions.decide(run, ActionKind.APPROVE, "ann", "", (), AT).after


def test_a_run_read_without_its_history_changes_as_the_whole_run_does() -> None:
    whole = approved_once()
    unread = whole._replace(actions=(), unread_actions=len(whole.actions))

    moved = transitions.decide(whole, ActionKind.APPROVE, "bob", "", STEPS[1:], LATER).after
    counted = transitions.decide(unread, ActionKind.APPROVE, "bob", "", STEPS[1:], LATER).after

    assert counted.history_length == moved.history_length == 2
    assert counted.actions == moved.actions[1:]  # what it recorded, chained alike
    assert counted._replace(actions=moved.actions, unread_actions=0) == moved
    assert moved.current_step == STEPS[1]


def test_the_storage_s_revision_of_a_run_is_passed_on_untouched() -> None:
    token = object()
    run = approved_once()._replace(revision=token)

    change = transitions.decide(run, ActionKind.APPROVE, "bob", "", STEPS[1:], LATER)

    assert change.before.revision is token and change.after.revision is token
