"""The changes of a workflow's life and of the version a run is on, computed
once, from the state read: pure, as chalicelib/domain/transitions.py's.

    publish a version     the workflow at its next version; workflow.version_published
    retire, reinstate     the workflow's flag; workflow.retired, .reinstated
    reassign              the run's current step awaiting others (an action,
                          chained; the approvals its new list still names kept);
                          run.reassigned; the inboxes it leaves and enters
    move                  the run at a step of a newer version (an action,
                          chained; its approvals there dropped); run.moved,
                          step.activated; the inboxes it leaves and enters
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from chalicelib.domain import audit, deadlines, decision, errors, events
from chalicelib.domain.changes import Defined, Retirement, RunChange, VersionPublish
from chalicelib.domain.lifecycle import ActionKind
from chalicelib.domain.models import (
    DEFAULT_MAX_RETURNS,
    MAX_ID,
    USER_PREFIX,
    Action,
    Policy,
    Run,
    Step,
    StepRule,
    Workflow,
)
from chalicelib.domain.transitions import check_limits, check_steps


def publish_version(
    workflow: Workflow,
    description: str,
    rules: Sequence[StepRule],
    policy: Policy,
    at: str,
    input_schema: Optional[dict[str, Any]] = None,
    max_returns: int = DEFAULT_MAX_RETURNS,
    expected_version: Optional[int] = None,
) -> VersionPublish:
    """The next version of `workflow` as read: a whole definition (its steps
    new, or carried over from the last version by name: docs/versions.md).
    Conflict where the caller edited another version than the newest
    (`expected_version`): their editor is stale."""
    if expected_version is not None and expected_version != workflow.version:
        raise errors.Conflict(
            f"Workflow {workflow.id} is at version {workflow.version}, not "
            f"{expected_version}: read it again and edit its newest version"
        )
    check_steps(rules, input_schema)
    _check_names_once(rules)
    version = workflow.version + 1

    def at_version(step_ids: Sequence[int]) -> Workflow:
        steps = tuple(
            rule.stored(step_id, workflow.id, order)
            for order, (step_id, rule) in enumerate(zip(step_ids, rules, strict=True), start=1)
        )
        return workflow._replace(
            description=description,
            steps=steps,
            policy=policy,
            input_schema=input_schema,
            max_returns=max_returns,
            version=version,
            version_created_at=at,
        )

    check_limits(at_version([MAX_ID] * len(rules)))

    def made(step_ids: tuple[int, ...]) -> Defined:
        published = at_version(step_ids)
        return Defined(published, events.prepared_all(events.version_published(published, at)))

    return VersionPublish(workflow.id, workflow.version, len(rules), made)


def _check_names_once(rules: Sequence[StepRule]) -> None:
    """A published version's steps carry over, and a run moves to one, by
    name: a name given twice would name two steps. (The seed's define and
    append keep allowing repeats, as its schema does.)"""
    seen: set[str] = set()
    for rule in rules:
        if rule.name in seen:
            raise errors.Unprocessable(
                f"Step name {rule.name!r} appears twice: a version's steps carry over "
                "and runs move to them by name, so each name must name one step"
            )
        seen.add(rule.name)


def retirement(workflow: Workflow, retired: bool, at: str) -> Retirement:
    """`workflow` retired (no new run starts; those in progress go on) or
    reinstated; Conflict where it is so already."""
    if workflow.retired == retired:
        state = "retired" if retired else "not retired"
        raise errors.Conflict(f"Workflow {workflow.id} is {state} already")
    after = workflow._replace(retired=retired)
    return Retirement(workflow, after, events.prepared_all(events.retirement(after, at)))


def reassign(run: Run, approvers: Sequence[str], actor: str, comment: str, at: str) -> RunChange:
    """The run's current step awaiting `approvers` (principals; none: anyone)
    from `at` on, as `actor` (an administrator) said why in `comment`: the
    approvals given so far stay counted where the new list names their giver
    (or whom they approved for) as a user, or names nobody (docs/versions.md)."""
    step = run.current_step
    assert step is not None, "only a run waiting at a step is reassigned"
    listed = tuple(approvers)
    users = [approver for approver in listed if approver.startswith(USER_PREFIX)]
    if listed and len(users) == len(listed) and step.required_approvals > len(users):
        raise errors.Unprocessable(
            f"Step {step.name!r} requires {step.required_approvals} approvals but the new list "
            f"names only {len(users)} approvers, all users: it could never be approved"
        )
    recorded = _chained(run, step, ActionKind.REASSIGN, actor, comment, at, approvers=listed)
    kept = [
        (giver, whom)
        for giver, whom in _approvals(run)
        if decision.still_eligible(listed, whom or giver)
    ]
    after = run._replace(
        current_step=step._replace(approvers=listed),
        updated_at=at,
        actions=(*run.actions, *recorded),
        head_hash=recorded[-1].hash,
        current_step_approved_by=tuple(giver for giver, _ in kept),
        current_step_on_behalf_of=tuple(whom for _, whom in kept),
    )
    told = events.prepared_all(events.reassigned(run, after, actor, comment, at))
    return RunChange(
        run, after, recorded, told, decision.awaited_by(run), decision.awaited_by(after)
    )


def _chained(
    run: Run,
    step: Step,
    kind: ActionKind,
    actor: str,
    comment: str,
    at: str,
    approvers: Optional[tuple[str, ...]] = None,
    target: Optional[Workflow] = None,
) -> tuple[Action, ...]:
    """The administrator's action at `step`, chained after the run's head
    (a move's binding the definition of `target`, the version moved to)."""
    entry = Action(
        0,
        run.id,
        step.id,
        step.name,
        kind,
        actor,
        comment,
        at,
        None,
        None,
        run.round,
        None,
        "api",  # an administrator's change comes through the API alone
        approvers,
        None if target is None else target.version,
        None,
        None if target is None else audit.digest_of_definition(target),
        None if target is None else len(target.steps),
    )
    return (audit.chained(entry, run.history_length + 1, audit.head_of(run)),)


def _approvals(run: Run) -> list[tuple[str, str]]:
    """The current step's approvals: who gave each, and for whom ("": themselves)."""
    behalf = run.current_step_on_behalf_of
    return [
        (giver, behalf[place] if place < len(behalf) else "")
        for place, giver in enumerate(run.current_step_approved_by)
    ]


def move(
    run: Run, target: Workflow, step_name: str, actor: str, comment: str, at: str
) -> RunChange:
    """The run continuing at the step named `step_name` of `target`, a newer
    version of its workflow, from `at` on, as `actor` (an administrator) said
    why: the approvals given at its current step do not carry over, its
    deadline starts afresh. Conflict for a version that is not newer than the
    run's, or a step that the version does not have."""
    if target.version <= run.workflow_version:
        raise errors.Conflict(
            f"Run {run.id} is on version {run.workflow_version}: it moves only to a newer one, "
            f"not {target.version}"
        )
    named = [step for step in target.steps if step.name == step_name]
    if not named:
        raise errors.Conflict(f"Version {target.version} has no step named {step_name!r}")
    if len(named) > 1:
        # Only the seed's define or append can repeat a name; moving to a
        # guess would put the run at a step nobody chose.
        raise errors.Conflict(
            f"Version {target.version} has {len(named)} steps named {step_name!r}: "
            "publish a version whose step names differ, then move the run there"
        )
    landing = named[0]
    recorded = _chained(run, landing, ActionKind.MOVE, actor, comment, at, target=target)
    after = moved(run, target, landing, recorded, at)
    told = events.prepared_all(events.moved(run, after, actor, comment, at))
    return RunChange(
        run, after, recorded, told, decision.awaited_by(run), decision.awaited_by(after)
    )


def moved(run: Run, target: Workflow, landing: Step, recorded: tuple[Action, ...], at: str) -> Run:
    """`run` as a move to `landing`, of `target`, leaves it, `recorded` last in its history."""
    return run._replace(
        current_step=landing,
        updated_at=at,
        actions=(*run.actions, *recorded),
        head_hash=recorded[-1].hash,
        current_step_approved_by=(),
        current_step_on_behalf_of=(),
        current_step_since=at,
        current_step_due_at=deadlines.step_due_at(landing, at),
        deadline_passed=False,
        policy=target.policy,
        max_returns=target.max_returns,
        workflow_version=target.version,
        genesis_version=run.genesis_version or run.workflow_version,
    )
