"""Every change of state, computed once, from the state read: pure.

    define a workflow     the workflow and its first steps; workflow.created
    append a step         the step; workflow.step_added
    start a run           the run at its first step, chained from its genesis;
                          run.started, step.activated; its first step's inbox
    decide                approve (below the quorum, to the next step, the last
                          one), reject, cancel: the action, chained; its events;
                          the inbox it leaves and enters
    a deadline passes     remind, escalate (the step's inbox grows), or reject
                          (a decision by system:deadline)

Each returns one value (chalicelib/domain/models.py): the records after the
change, the action it records with its hash, its event drafts, and the inbox
keys the run leaves and enters. Where the store allocates a value (an id, a
step's order) the value holds the function of it (`made`): the storage calls
it with what it allocated, inside its one atomic write, and stores what it
returns. The storage numbers the events and gives the action its id; every
other value is computed here, and only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from chalicelib.domain import audit, deadlines, decision, events
from chalicelib.domain.models import (
    APPROVE,
    COMPLETED,
    IN_PROGRESS,
    REJECT,
    Action,
    Appended,
    Decision,
    Defined,
    EventDraft,
    Policy,
    Run,
    RunChange,
    RunStart,
    Started,
    Step,
    StepAppend,
    StepRule,
    Workflow,
    WorkflowDefinition,
)


def define_workflow(
    name: str, description: str, rules: Sequence[StepRule], policy: Policy, at: str
) -> WorkflowDefinition:
    """A workflow named `name`, its first steps in the order given."""

    def made(workflow_id: int, step_ids: tuple[int, ...]) -> Defined:
        steps = tuple(
            rule.stored(step_id, workflow_id, order)
            for order, (step_id, rule) in enumerate(zip(step_ids, rules, strict=True), start=1)
        )
        workflow = Workflow(workflow_id, name, description, at, steps, policy)
        return Defined(workflow, _prepared(events.workflow_created(workflow)))

    return WorkflowDefinition(name, len(rules), made)


def append_step(workflow_id: int, rule: StepRule, at: str) -> StepAppend:
    """A step after the workflow's last one."""

    def made(step_id: int, order: int) -> Appended:
        step = rule.stored(step_id, workflow_id, order)
        return Appended(step, _prepared(events.step_added(step, at)))

    return StepAppend(workflow_id, made)


def start_run(workflow: Workflow, title: str, requested_by: Optional[str], at: str) -> RunStart:
    """A run of `workflow` at its first step since `at`, under its policy."""
    first = workflow.steps[0]

    def made(run_id: int) -> Started:
        run = Run(
            run_id,
            workflow.id,
            title,
            IN_PROGRESS,
            first,
            at,
            at,
            (),
            requested_by,
            current_step_since=at,
            policy=workflow.policy,
            current_step_due_at=deadlines.step_due_at(first, at),
        )
        # The id is the genesis's first field: the chain starts once it is known.
        run = run._replace(head_hash=audit.genesis_hash(audit.genesis_of(run)))
        return Started(run, _prepared(events.run_started(run)), decision.awaited_by(run))

    return RunStart(workflow, made)


def decide(
    run: Run, action: str, actor: str, comment: str, next_step: Optional[Step], at: str
) -> RunChange:
    """The decision `action` by `actor` on the run's current step, as read:
    `next_step` is the step after it (None after the last; needed only where
    decision.needs_next_step says so)."""
    return _decided(run, decision.decide(run, action, actor, comment, next_step, at))


def deadline_passed(run: Run, at: str) -> Optional[RunChange]:
    """What the current step's deadline does once it has passed by `at`: a
    reminder, an escalation (those it names find the run in their inboxes) or
    an expiry (the run rejected by the deadline); None when nothing is due."""
    due = deadlines.action_due(run, at)
    if due is None:
        return None
    if due == REJECT:
        return _decided(run, deadlines.expiry(at))
    after = run._replace(deadline_passed=True)
    awaited = decision.awaited_by(run)
    enters = tuple(key for key in decision.awaited_by(after) if key not in awaited)
    told = _prepared(events.deadline_passed(run, after, at))
    return RunChange(run, after, None, told, (), enters)


def _decided(run: Run, chosen: Decision) -> RunChange:
    """The change that `chosen`, a decision on `run` as read, makes."""
    step = run.current_step
    assert step is not None, "only a run in progress has a decision to record"
    chained = audit.next_hash(run, chosen)
    entry = Action(
        0,
        run.id,
        step.id,
        step.name,
        chosen.action,
        chosen.actor,
        chosen.comment,
        chosen.at,
        chained,
    )
    after = _after(run, chosen, entry)
    told = _prepared(events.decided(run, chosen, after))
    if chosen.stays:
        return RunChange(run, after, entry, told)
    # Positional, as every record on this path: keywords take a slower constructor.
    last = step.step_order if after.status == COMPLETED else None
    return RunChange(
        run, after, entry, told, decision.awaited_by(run), decision.awaited_by(after), last
    )


def _after(run: Run, chosen: Decision, entry: Action) -> Run:
    """The run as `chosen` leaves it, `entry` (whose hash is its new head) last
    in its history."""
    return run._replace(
        status=chosen.status,
        current_step=chosen.next_step,
        updated_at=chosen.at,
        # A history that was not read stays unread: only counted.
        actions=(*run.actions, entry) if run.action_count is None else (),
        action_count=None if run.action_count is None else run.action_count + 1,
        head_hash=entry.hash,
        current_step_approved_by=chosen.approved_by,
        current_step_since=(
            None
            if chosen.next_step is None
            else (run.current_step_since if chosen.stays else chosen.at)
        ),
        approvers=(
            (*run.approvers, chosen.actor)
            if chosen.action == APPROVE and not decision.approved(run.approvers, chosen.actor)
            else run.approvers
        ),
        current_step_due_at=(
            run.current_step_due_at
            if chosen.stays
            else deadlines.step_due_at(chosen.next_step, chosen.at)
        ),
        deadline_passed=run.deadline_passed and chosen.stays,
    )


def _prepared(drafts: Sequence[events.Draft]) -> tuple[EventDraft, ...]:
    return tuple(events.prepared(draft) for draft in drafts)
