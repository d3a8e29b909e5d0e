"""Every change of state, computed once, from the state read: pure.

    define a workflow     the workflow and its first steps; workflow.created
    append a step         the step (to the newest version); workflow.step_added
    (a version, retiring, reassigning and moving a run: versioning.py)
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
from typing import Any, Optional, assert_never

from chalicelib.domain import (
    audit,
    conditions,
    content,
    deadlines,
    decision,
    errors,
    events,
    limits,
)
from chalicelib.domain.changes import (
    Appended,
    Defined,
    RunChange,
    RunStart,
    Started,
    StepAppend,
    WorkflowDefinition,
)
from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.domain.models import (
    DEFAULT_MAX_RETURNS,
    MAX_ID,
    Action,
    Decision,
    Policy,
    Run,
    Step,
    StepRule,
    Workflow,
)


def define_workflow(
    name: str,
    description: str,
    rules: Sequence[StepRule],
    policy: Policy,
    at: str,
    input_schema: Optional[dict[str, Any]] = None,
    max_returns: int = DEFAULT_MAX_RETURNS,
) -> WorkflowDefinition:
    """A workflow named `name`, its first steps in the order given, its runs'
    input held to `input_schema` (which its steps' conditions read), each run
    sent back for changes at most `max_returns` times."""
    check_steps(rules, input_schema)
    planned = Workflow(
        MAX_ID,
        name,
        description,
        at,
        tuple(rule.stored(MAX_ID, MAX_ID, order) for order, rule in enumerate(rules, start=1)),
        policy,
        input_schema,
        max_returns,
    )
    check_limits(planned)

    def made(workflow_id: int, step_ids: tuple[int, ...]) -> Defined:
        steps = tuple(
            rule.stored(step_id, workflow_id, order)
            for order, (step_id, rule) in enumerate(zip(step_ids, rules, strict=True), start=1)
        )
        workflow = Workflow(
            workflow_id,
            name,
            description,
            at,
            steps,
            policy,
            input_schema,
            max_returns,
            1,
            False,
            at,
        )
        return Defined(workflow, events.prepared_all(events.workflow_created(workflow)))

    return WorkflowDefinition(name, len(rules), made)


def append_step(workflow: Workflow, rule: StepRule, at: str) -> StepAppend:
    """A step after the last one of `workflow` as read (its condition reads
    the input its schema describes): the storage appends it only there, so
    that the workflow it makes is the one checked against its limits."""
    check_condition(rule, workflow.input_schema)
    after = workflow.steps[-1].step_order if workflow.steps else 0
    check_limits(
        workflow._replace(steps=(*workflow.steps, rule.stored(MAX_ID, workflow.id, after + 1)))
    )

    def made(step_id: int, order: int) -> Appended:
        step = rule.stored(step_id, workflow.id, order)
        return Appended(step, events.prepared_all(events.step_added(step, at)))

    return StepAppend(workflow.id, after, made, workflow.version)


def start_run(
    workflow: Workflow,
    title: str,
    requested_by: Optional[str],
    at: str,
    data: Optional[dict[str, Any]] = None,
) -> RunStart:
    """A run of `workflow` with its input `data`, under its workflow's policy, at
    its first step whose condition holds since `at` (the steps before it
    skipped), or completed if none does."""
    if workflow.retired:
        raise errors.Conflict(
            f"Workflow {workflow.id} is retired: it starts no new runs (reinstate it first)"
        )
    given = data or {}
    violated = content.violation(workflow.input_schema, given)
    if violated:
        raise errors.Unprocessable(f"'input' does not meet the workflow's schema at {violated}")
    landing, skipped = _arrival(workflow.steps, given)

    def made(run_id: int) -> Started:
        return started(workflow, run_id, title, requested_by, at, given, landing, skipped)

    return RunStart(workflow, made)


def started(
    workflow: Workflow,
    run_id: int,
    title: str,
    requested_by: Optional[str],
    at: str,
    given: dict[str, Any],
    landing: Optional[Step],
    skipped: Sequence[Step],
) -> Started:
    """Run `run_id` of `workflow`, with its input `given`, started at `at`:
    waiting at `landing` past the `skipped` steps before it, or completed
    where it lands on none. Chained from its genesis: the id is its first field."""
    run = Run(
        run_id,
        workflow.id,
        title,
        RunStatus.IN_PROGRESS if landing else RunStatus.COMPLETED,
        landing,
        at,
        at,
        (),
        requested_by,
        current_step_since=at if landing else None,
        policy=workflow.policy,
        current_step_due_at=deadlines.step_due_at(landing, at),
        input=given,
        max_returns=workflow.max_returns,
        workflow_version=workflow.version,
        definition_digest=audit.digest_of_definition(workflow),
        definition_steps=len(workflow.steps),
    )
    genesis = audit.genesis_hash(audit.genesis_of(run))
    skips = _skips(run_id, 0, genesis, skipped, at)
    head = skips[-1].hash if skips else genesis
    run = run._replace(actions=skips, head_hash=head)
    told = events.prepared_all(events.run_started(run, skipped))
    return Started(run, told, decision.awaited_by(run), skips)


def decide(
    run: Run,
    action: ActionKind,
    actor: str,
    comment: str,
    following: Sequence[Step],
    at: str,
    on_behalf_of: Optional[str] = None,
    channel: str = "api",
) -> RunChange:
    """The decision `action` by `actor` (for `on_behalf_of`, through a
    delegation, or for themselves) on the run's current step, as read.
    `following` are the steps after it, in order (read only where
    decision.needs_next_step says so): an approval that completes the step's
    quorum moves the run to the first of them whose condition holds for its
    input, skipping the others, or completes it. A return sends the run back
    for changes: its round's approvals stop counting, its deadline pauses."""
    landing, skipped = _arrival(following, run.input)
    chosen = decision.decide(run, action, actor, comment, landing, at, on_behalf_of)
    return decided(run, chosen._replace(channel=channel), skipped, following)


def resubmit(
    run: Run,
    workflow: Workflow,
    actor: str,
    comment: str,
    data: Optional[dict[str, Any]],
    at: str,
) -> RunChange:
    """The run, returned for changes, resubmitted by `actor` (with a new input
    `data`, held to the workflow's schema, or its input as it was): a new
    round from the workflow's first step whose condition holds (the steps
    before it skipped), or completed where none does. Everyone decides again,
    its deadlines start afresh; the resubmit, in the new round, binds a new
    input into the chain by its digest."""
    given = run.input if data is None else data
    if data is not None:
        violated = content.violation(workflow.input_schema, data)
        if violated:
            raise errors.Unprocessable(f"'input' does not meet the workflow's schema at {violated}")
    landing, skipped = _arrival(workflow.steps, given)
    digest = audit.sha256_hex(audit.canonical(data)) if data is not None else None
    return resubmitted(run, workflow, actor, comment, given, digest, landing, skipped, at)


def resubmitted(
    run: Run,
    workflow: Workflow,
    actor: str,
    comment: str,
    given: dict[str, Any],
    digest: Optional[str],
    landing: Optional[Step],
    skipped: Sequence[Step],
    at: str,
) -> RunChange:
    """The returned run resubmitted by `actor` with the input `given` (a new
    one where `digest`, its digest, is given): the next round, waiting at
    `landing` past the `skipped` steps before it, or completed where it lands
    on none."""
    step = run.current_step
    assert step is not None, "a returned run stays at the step it was returned at"
    round_ = run.round + 1
    entry = Action(
        0,
        run.id,
        step.id,
        step.name,
        ActionKind.RESUBMIT,
        actor,
        comment,
        at,
        None,
        None,
        round_,
        digest,
        next_step_digest=None if landing is None else audit.digest_of_step(landing),
    )
    seq = run.history_length + 1
    first = audit.chained(entry, seq, audit.head_of(run))
    assert first.hash is not None
    recorded = (first, *_skips(run.id, seq, first.hash, skipped, at, round_))
    completed = landing is None
    after = run._replace(
        status=RunStatus.COMPLETED if completed else RunStatus.IN_PROGRESS,
        current_step=landing,
        updated_at=at,
        actions=(*run.actions, *recorded),
        head_hash=recorded[-1].hash,
        current_step_approved_by=(),
        current_step_on_behalf_of=(),
        current_step_since=None if completed else at,
        approvers=(),
        current_step_due_at=deadlines.step_due_at(landing, at),
        deadline_passed=False,
        input=given,
        round=round_,
        genesis_input_digest=_genesis_digest(run)
        if digest is not None
        else run.genesis_input_digest,
    )
    told = events.prepared_all(events.resubmitted(run, after, actor, comment, skipped, at))
    last = workflow.steps[-1].step_order if completed else None
    return RunChange(run, after, recorded, told, (), decision.awaited_by(after), last)


def _genesis_digest(run: Run) -> str:
    """The digest the run's genesis holds, kept where its input changes ("" for none)."""
    if run.genesis_input_digest is not None:
        return run.genesis_input_digest
    return audit.input_digest(run.input) or ""


def deadline_passed(run: Run, at: str) -> Optional[RunChange]:
    """What the current step's deadline does once it has passed by `at`: a
    reminder, an escalation (those it names find the run in their inboxes) or
    an expiry (the run rejected by the deadline); None when nothing is due."""
    due = deadlines.action_due(run, at)
    if due is None:
        return None
    match due:
        case OnDeadline.REJECT:
            return decided(run, deadlines.expiry(at))
        case OnDeadline.REMIND | OnDeadline.ESCALATE:
            after = run._replace(deadline_passed=True)
            awaited = decision.awaited_by(run)
            enters = tuple(key for key in decision.awaited_by(after) if key not in awaited)
            told = events.prepared_all(events.deadline_passed(run, after, at))
            return RunChange(run, after, (), told, (), enters)
        case _:
            assert_never(due)


def check_steps(rules: Sequence[StepRule], input_schema: Optional[dict[str, Any]]) -> None:
    """A definition's first steps: at most MAX_INITIAL_STEPS at once, each
    condition judged against the schema (check_condition)."""
    if len(rules) > limits.MAX_INITIAL_STEPS:
        raise errors.InvalidInput(
            f"'steps' may hold at most {limits.MAX_INITIAL_STEPS} steps; append more one by one"
        )
    for rule in rules:
        check_condition(rule, input_schema)


def check_condition(rule: StepRule, input_schema: Optional[dict[str, Any]]) -> None:
    """Unprocessable if the step's condition reads an input path that the
    workflow's schema, where it has one, does not define, or can never hold
    for the types of the values it compares (rules no schema of the document
    can state)."""
    if rule.when is None:
        return
    fields = content.input_fields(input_schema) if input_schema is not None else None
    found = conditions.judged(rule.when, fields)
    if found:
        raise errors.Unprocessable(f"Step {rule.name!r}: 'when' {found}")


def check_limits(workflow: Workflow) -> None:
    """Unprocessable if no store could keep every run of `workflow` (limits.py)."""
    found = limits.definition_problem(workflow)
    if found:
        raise errors.Unprocessable(found)


def _arrival(steps: Sequence[Step], data: dict[str, Any]) -> tuple[Optional[Step], list[Step]]:
    """Where a run arriving at `steps` (in order) waits: the first whose
    condition holds for its input, and the steps before it, which it skips
    (all of them, and None, when no condition holds)."""
    for index, step in enumerate(steps):
        if step.when is None or conditions.holds(step.when, data):
            return step, list(steps[:index])
    return None, list(steps)


def _skips(
    run_id: int, seq: int, head: str, skipped: Sequence[Step], at: str, round_: int = 1
) -> tuple[Action, ...]:
    """The skip of each of `skipped`, chained after `head`, the hash of the
    run's action at `seq` (0: its genesis), in round `round_`: by
    system:conditions, the condition's text its comment."""
    skips: list[Action] = []
    for step in skipped:
        seq += 1
        skip = Action(
            0,
            run_id,
            step.id,
            step.name,
            ActionKind.SKIP,
            events.CONDITIONS_ACTOR,
            conditions.text(step.when),
            at,
            None,
            None,
            round_,
        )
        skips.append(audit.chained(skip, seq, head))
        head = skips[-1].hash or head
    return tuple(skips)


def decided(
    run: Run,
    chosen: Decision,
    skipped: Sequence[Step] = (),
    following: Sequence[Step] = (),
) -> RunChange:
    """The change that `chosen`, a decision on `run` as read, makes, past the
    `skipped` steps where it moves the run on."""
    step = run.current_step
    assert step is not None, "only a run in progress has a decision to record"
    moves = chosen.action == ActionKind.APPROVE and not chosen.stays
    entry = Action(
        0,
        run.id,
        step.id,
        step.name,
        chosen.action,
        chosen.actor,
        chosen.comment,
        chosen.at,
        None,
        chosen.on_behalf_of,
        run.round,
        channel=chosen.channel,
        next_step_digest=_arrival_digest(chosen) if moves else None,
    )
    seq = run.history_length + 1
    first = audit.chained(entry, seq, audit.head_of(run))
    assert first.hash is not None
    passed = skipped if moves else ()
    recorded = (first, *_skips(run.id, seq, first.hash, passed, chosen.at, run.round))
    after = _after(run, chosen, recorded)
    told = events.prepared_all(events.decided(run, chosen, after, passed))
    if chosen.stays:
        return RunChange(run, after, recorded, told)
    # Positional, as every record on this path: keywords take a slower constructor.
    last = None
    if after.status == RunStatus.COMPLETED:
        last = following[-1].step_order if following else step.step_order
    return RunChange(
        run, after, recorded, told, decision.awaited_by(run), decision.awaited_by(after), last
    )


def _arrival_digest(chosen: Decision) -> Optional[str]:
    """What a decision that moves the run on binds of the step it brings it
    to, as read: its digest (None where the run ends)."""
    landing = chosen.next_step
    if landing is None or chosen.status != RunStatus.IN_PROGRESS:
        return None
    return audit.digest_of_step(landing)


def _after(run: Run, chosen: Decision, recorded: tuple[Action, ...]) -> Run:
    """The run as `chosen` leaves it, `recorded` (the decision and the skips
    after it; the last one's hash is its new head) last in its history."""
    waits = chosen.next_step is not None and chosen.status == RunStatus.IN_PROGRESS
    return run._replace(
        status=chosen.status,
        current_step=chosen.next_step,
        updated_at=chosen.at,
        actions=(*run.actions, *recorded),
        head_hash=recorded[-1].hash,
        current_step_approved_by=chosen.approved_by,
        current_step_on_behalf_of=chosen.approved_for,
        current_step_since=(
            None if not waits else (run.current_step_since if chosen.stays else chosen.at)
        ),
        approvers=_approvers_after(run, chosen),
        # A returned run's deadline pauses: its resubmit starts one afresh.
        current_step_due_at=(
            run.current_step_due_at
            if chosen.stays
            else (deadlines.step_due_at(chosen.next_step, chosen.at) if waits else None)
        ),
        deadline_passed=run.deadline_passed and chosen.stays,
    )


def _approvers_after(run: Run, chosen: Decision) -> tuple[str, ...]:
    """Everyone who approved a step of the run's round, once each: the
    approver, and whom they approved for."""
    if chosen.action != ActionKind.APPROVE:
        return run.approvers
    people = [chosen.actor, *([chosen.on_behalf_of] if chosen.on_behalf_of else [])]
    added = [p for p in people if not decision.approved(run.approvers, p)]
    return (*run.approvers, *added) if added else run.approvers
