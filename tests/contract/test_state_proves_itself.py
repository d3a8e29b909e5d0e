"""The stored state proves itself, on each backend: the audit replays the
history to the state it implies and names what the stored state has else, and
a decision counts only the approvals the chained history holds."""

from __future__ import annotations

import pytest

from chalicelib import delegations, engine
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import StepRule
from chalicelib.storage import Backend
from tests.support import tamper

NOW = "2030-01-02T03:04:05.000Z"
QUORUM = [StepRule("Board", required_approvals=3), StepRule("Sign-off")]


def at_the_board(storage: Backend, *approvers: str, history: bool = True) -> int:
    workflow = engine.create_workflow(storage, "Board", "", QUORUM, lambda: NOW)
    run = engine.start_run(storage, workflow.id, "Merger", "rita", lambda: NOW)
    for actor in approvers:
        engine.approve(storage, run.id, actor, clock=lambda: NOW, history=history)
    return run.id


def test_an_untouched_run_is_in_the_state_its_history_leads_to(storage: Backend) -> None:
    run_id = at_the_board(storage, "p")
    audit = engine.audit_run(storage, run_id)
    assert (audit.first_invalid_seq, audit.state_mismatches) == (None, ())
    engine.approve(storage, run_id, "q", clock=lambda: NOW)
    engine.approve(storage, run_id, "s", clock=lambda: NOW)
    engine.approve(storage, run_id, "t", clock=lambda: NOW)
    done = engine.audit_run(storage, run_id)
    assert storage.get_run(run_id).status == RunStatus.COMPLETED
    assert (done.first_invalid_seq, done.state_mismatches) == (None, ())


@pytest.mark.parametrize("history", [True, False], ids=["whole", "minimal"])
def test_approvals_written_into_the_state_alone_do_not_count(
    storage: Backend, history: bool
) -> None:
    run_id = at_the_board(storage)
    tamper.set_run_state(storage, run_id, approved_by=["p", "q"])

    audit = engine.audit_run(storage, run_id)
    assert audit.first_invalid_seq is None  # the history itself is untouched
    assert audit.state_mismatches == ("current_step_approved_by",)

    after = engine.approve(storage, run_id, "r", clock=lambda: NOW, history=history)
    assert (after.status, after.current_step_approved_by) == (RunStatus.IN_PROGRESS, ("r",))
    assert after.current_step is not None and after.current_step.name == "Board"
    assert engine.audit_run(storage, run_id).state_mismatches == ()  # the state is the history's


def test_an_approval_taken_out_of_the_state_still_counts(storage: Backend) -> None:
    run_id = at_the_board(storage, "p", "q")
    tamper.set_run_state(storage, run_id, approved_by=[])
    assert engine.audit_run(storage, run_id).state_mismatches == ("current_step_approved_by",)

    with pytest.raises(errors.Conflict, match="already approved"):
        engine.approve(storage, run_id, "p", clock=lambda: NOW)
    moved = engine.approve(storage, run_id, "r", clock=lambda: NOW)
    assert moved.current_step is not None and moved.current_step.name == "Sign-off"


@pytest.mark.parametrize("history", [True, False], ids=["whole", "minimal"])
def test_a_run_whose_head_was_removed_counts_no_approval_and_shows_the_break(
    storage: Backend, history: bool
) -> None:
    """Its approvals chain to no stored head: none counts, and its next
    action chains to none, which its audit shows (a head is never computed
    from the history on a write)."""
    run_id = at_the_board(storage, "p", "q")
    tamper.remove_head(storage, run_id)
    assert engine.audit_run(storage, run_id).first_invalid_seq == 3

    after = engine.approve(storage, run_id, "s", clock=lambda: NOW, history=history)

    assert (after.status, after.current_step_approved_by) == (RunStatus.IN_PROGRESS, ("s",))
    assert after.current_step is not None and after.current_step.name == "Board"
    assert engine.audit_run(storage, run_id).first_invalid_seq == 3


def test_a_status_set_by_hand_shows_in_the_audit(storage: Backend) -> None:
    run_id = at_the_board(storage, "p")
    tamper.set_run_state(storage, run_id, status=RunStatus.COMPLETED)
    assert "status" in engine.audit_run(storage, run_id).state_mismatches


def test_an_edited_approval_counts_for_nothing(storage: Backend) -> None:
    run_id = at_the_board(storage, "p", "q")
    tamper.edit_action(storage, run_id, 2, "actor", "mallory")
    assert engine.audit_run(storage, run_id).first_invalid_seq == 2

    after = engine.approve(storage, run_id, "r", clock=lambda: NOW)
    # Neither approval behind the broken link counts: the run stays at its quorum step.
    assert after.current_step is not None and after.current_step.name == "Board"
    assert after.current_step_approved_by == ("r",)


def test_a_completed_run_whose_workflow_grew_after_it_still_reads_as_completed(
    storage: Backend,
) -> None:
    workflow = engine.create_workflow(storage, "Short", "", ["A"], lambda: NOW)
    run = engine.start_run(storage, workflow.id, "t", None, lambda: NOW)
    engine.approve(storage, run.id, "mo", clock=lambda: NOW)
    engine.append_step(storage, workflow.id, "B", clock=lambda: NOW)
    assert engine.audit_run(storage, run.id).state_mismatches == ()


# -- the round, and whom an approval was for -------------------------------------------


def in_round_2(storage: Backend, steps: list[StepRule | str], history: bool = True) -> int:
    """A run of `steps` sent back once and resubmitted: in its second round."""
    workflow = engine.create_workflow(storage, "Sent back", "", steps, lambda: NOW)
    run = engine.start_run(storage, workflow.id, "PO", "rita", lambda: NOW)
    engine.return_run(storage, run.id, "mo", "Add the quote", clock=lambda: NOW)
    engine.resubmit(storage, run.id, "rita", clock=lambda: NOW, history=history)
    return run.id


def test_a_round_set_back_by_hand_shows_in_the_audit(storage: Backend) -> None:
    run_id = in_round_2(storage, ["A", "B"])

    tamper.set_run_state(storage, run_id, round=1)

    audit = engine.audit_run(storage, run_id)
    assert (audit.first_invalid_seq, audit.state_mismatches) == (None, ("round",))


def test_a_decision_takes_the_round_from_the_chain_not_from_the_state(storage: Backend) -> None:
    run_id = in_round_2(storage, ["A", "B"])
    tamper.set_run_state(storage, run_id, round=1)

    with pytest.raises(errors.StaleRun, match="in round 2, not in round 1"):
        engine.approve(storage, run_id, "mo", clock=lambda: NOW, seen=engine.Seen(round=1))
    after = engine.approve(storage, run_id, "mo", clock=lambda: NOW, seen=engine.Seen(round=2))

    assert after.round == 2 and after.actions[-1].round == 2
    assert storage.get_run(run_id).round == 2  # the write put the state back in line
    assert engine.audit_run(storage, run_id).state_mismatches == ()


def test_a_round_set_back_does_not_lend_the_run_another_return(storage: Backend) -> None:
    workflow = engine.create_workflow(storage, "Once", "", ["A"], lambda: NOW, max_returns=1)
    run = engine.start_run(storage, workflow.id, "PO", "rita", lambda: NOW)
    engine.return_run(storage, run.id, "mo", "Add the quote", clock=lambda: NOW)
    engine.resubmit(storage, run.id, "rita", clock=lambda: NOW)
    tamper.set_run_state(storage, run.id, round=1)

    with pytest.raises(errors.Conflict, match="as often as its workflow allows"):
        engine.return_run(storage, run.id, "mo", "Again", clock=lambda: NOW)


def test_an_action_recorded_in_a_round_the_history_cannot_be_in_is_impossible(
    storage: Backend,
) -> None:
    # Prefer: return=minimal on a step of one approval reads no action: the
    # decision takes the stored round, and the audit names what it did.
    run_id = in_round_2(storage, ["A", "B"])
    tamper.set_run_state(storage, run_id, round=1)

    after = engine.approve(storage, run_id, "mo", clock=lambda: NOW, history=False)

    assert after.round == 1
    audit = engine.audit_run(storage, run_id)
    assert audit.first_invalid_seq is None  # every entry is what was recorded
    assert {"status", "current_step_id", "round"} <= set(audit.state_mismatches)


def test_whom_an_approval_was_for_set_by_hand_shows_in_the_audit_and_does_not_count(
    storage: Backend,
) -> None:
    run_id = at_the_board(storage)
    lent = ("2030-01-01T00:00:00.000Z", "2030-02-01T00:00:00.000Z")
    delegations.create(storage, "bob", "dave", *lent, clock=lambda: NOW)
    engine.approve(storage, run_id, "dave", clock=lambda: NOW, seen=engine.Seen(on_behalf_of="bob"))

    tamper.set_run_state(storage, run_id, on_behalf_of=[""])

    audit = engine.audit_run(storage, run_id)
    assert (audit.first_invalid_seq, audit.state_mismatches) == (
        None,
        ("current_step_on_behalf_of",),
    )
    with pytest.raises(errors.Conflict, match="'bob' already approved"):
        engine.approve(storage, run_id, "bob", clock=lambda: NOW)


def test_the_rounds_approvers_set_by_hand_show_in_the_audit(storage: Backend) -> None:
    run_id = at_the_board(storage, "p", "q")

    tamper.set_run_state(storage, run_id, approvers=["q"])

    assert engine.audit_run(storage, run_id).state_mismatches == ("approvers",)
