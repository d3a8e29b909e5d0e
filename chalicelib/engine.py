"""The use cases of approval workflows, over any storage.

Every function takes the storage and plain, already validated values
(chalicelib/api/validation.py turns requests into those), and returns models or
raises a domain error from `errors`. No SQL, no boto3, no HTTP: a use case
reads the state, asks the rules (chalicelib/domain/decision.py) whether the
caller may, has the change computed (chalicelib/domain/transitions.py) and
hands it to the storage, which writes it or refuses it as a whole.

transitions (and the events module behind it), the decision rule and the
audit chain are imported by the functions that use them: a cold start that
serves a read by id loads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import (
    DEFAULT_MAX_RETURNS,
    DEFAULT_POLICY,
    MAX_ID,
    Awaiting,
    Delegation,
    Event,
    Listed,
    Page,
    Permissions,
    Policy,
    Run,
    RunAudit,
    Slice,
    Step,
    StepRule,
    Workflow,
)
from chalicelib.domain.record import Record

if TYPE_CHECKING:
    from chalicelib.domain.decision import Capacity
    from chalicelib.domain.lifecycle import ActionKind
    from chalicelib.storage import Storage

WORKFLOWS = "workflows"
# Attempts of one decision that keeps losing its conditional write (see _decide).
DECISION_ATTEMPTS = 10
# Attempts of one append that keeps finding another appended first.
APPEND_ATTEMPTS = 50
RUNS = "runs"
INBOX = "inbox"
EVENTS = "events"
# Runs whose deadline is due, read per page of a sweep.
SWEEP_PAGE = 100
# Reads of the storage one inbox page may take to fill itself with runs the
# caller may decide (the storage reads by inbox keys; the rule leaves some out).
INBOX_READS = 8
NO_GROUPS: frozenset[str] = frozenset()


if TYPE_CHECKING:
    Clock = Callable[[], str]
    Filter = Mapping[str, Any]


def utc_now() -> str:
    """The current time as an ISO 8601 UTC timestamp with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- workflows -------------------------------------------------------------


def create_workflow(
    storage: Storage,
    name: str,
    description: str = "",
    steps: Sequence[StepRule | str] = (),
    clock: Clock = utc_now,
    policy: Policy = DEFAULT_POLICY,
    input_schema: Optional[dict[str, Any]] = None,
    max_returns: int = DEFAULT_MAX_RETURNS,
) -> Workflow:
    """Define a workflow, optionally with its first steps (a name alone is a
    step anyone may decide with one approval) and the schema its runs' input
    must meet."""
    from chalicelib.domain import transitions

    rules = [StepRule(step) if isinstance(step, str) else step for step in steps]
    return storage.create_workflow(
        transitions.define_workflow(
            name, description, rules, policy, clock(), input_schema, max_returns
        )
    )


def get_workflow(storage: Storage, workflow_id: int) -> Workflow:
    """The workflow with its steps in order."""
    return storage.get_workflow(workflow_id)


def append_step(
    storage: Storage, workflow_id: int, step: StepRule | str, clock: Clock = utc_now
) -> Step:
    """Append a step after the workflow's last one; runs in progress reach it too."""
    from chalicelib.domain import transitions

    rule = StepRule(step) if isinstance(step, str) else step

    # The limits hold for the workflow with the step after its last one as
    # read: the storage appends it only there, so another append that came
    # first means reading it again (limits.py).
    def attempt(_: int) -> Step:
        workflow = storage.get_workflow(workflow_id)
        return storage.append_step(transitions.append_step(workflow, rule, clock()))

    crowded = errors.Unavailable("Too many steps are being appended at once; retry shortly")
    return errors.until_written(APPEND_ATTEMPTS, attempt, crowded)


# -- runs ------------------------------------------------------------------


def start_run(
    storage: Storage,
    workflow_id: int,
    title: str,
    requested_by: Optional[str] = None,
    clock: Clock = utc_now,
    data: Optional[dict[str, Any]] = None,
) -> Run:
    """Start a run of a workflow, about `data` (its input), on behalf of
    `requested_by`: at its first step whose condition holds."""
    if workflow_id > MAX_ID:
        raise errors.workflow_not_found(workflow_id)
    workflow = storage.get_workflow(workflow_id)
    if not workflow.steps:
        raise errors.Conflict(
            f"Workflow {workflow_id} has no steps; append one before starting a run"
        )
    from chalicelib import metric_lines
    from chalicelib.domain import transitions

    run = storage.create_run(transitions.start_run(workflow, title, requested_by, clock(), data))
    metric_lines.started(run)
    return run


def get_run(storage: Storage, run_id: int) -> Run:
    """The run's state and its full history."""
    return storage.get_run(run_id)


def audit_run(storage: Storage, run_id: int) -> RunAudit:
    """The run's audit: its chain, its replayed state, the definitions it binds (audit_of)."""
    from chalicelib.domain import audit, replay, shapes

    run = storage.get_run(run_id)
    started_on = storage.get_version(run.workflow_id, run.genesis_version or run.workflow_version)
    # A moved run's history goes on under each version it was moved to; the
    # definitions its chain binds are held against these versions as stored now.
    targets = sorted({a.workflow_version for a in run.actions if a.workflow_version})
    moved_to = {version: storage.get_version(run.workflow_id, version) for version in targets}
    versions = {v.version: shapes.workflow_shape(v) for v in (started_on, *moved_to.values())}
    return audit.audit_of(run, replay.state_mismatches(run, started_on.steps, moved_to), versions)


class Seen(Record):
    """Where the caller saw the run when they decided (a page's stale state is
    refused with 409), and for whom they decide (None: as the rules find)."""

    step_id: Optional[int] = None
    round: Optional[int] = None
    on_behalf_of: Optional[str] = None
    # How the decision comes (Action.channel): the API, an email's link, Slack.
    channel: str = "api"


NOT_SEEN = Seen()


def approve(
    storage: Storage,
    run_id: int,
    actor: str,
    comment: str = "",
    expected_step_id: Optional[int] = None,
    clock: Clock = utc_now,
    groups: frozenset[str] = NO_GROUPS,
    history: bool = True,
    seen: Seen = NOT_SEEN,
) -> Run:
    """Approve the current step as `actor`, a member of `groups` (for
    themselves, or for a delegator: see `decision.capacity`): once its quorum
    is met, move to the next step or complete the run. The run comes back with
    its history, or (not `history`) only counting it."""

    seen = seen._replace(step_id=expected_step_id) if expected_step_id is not None else seen
    from chalicelib.domain.lifecycle import ActionKind

    kind = ActionKind.APPROVE
    return _decide(storage, run_id, kind, actor, groups, comment, seen, clock, history=history)


def reject(
    storage: Storage,
    run_id: int,
    actor: str,
    comment: str = "",
    expected_step_id: Optional[int] = None,
    clock: Clock = utc_now,
    groups: frozenset[str] = NO_GROUPS,
    history: bool = True,
    seen: Seen = NOT_SEEN,
) -> Run:
    """Reject the current step as `actor`, a member of `groups`: the run ends as
    rejected (with its history, or only counting it, as for approve)."""
    seen = seen._replace(step_id=expected_step_id) if expected_step_id is not None else seen
    from chalicelib.domain.lifecycle import ActionKind

    kind = ActionKind.REJECT
    return _decide(storage, run_id, kind, actor, groups, comment, seen, clock, history=history)


def return_run(
    storage: Storage,
    run_id: int,
    actor: str,
    comment: str,
    clock: Clock = utc_now,
    groups: frozenset[str] = NO_GROUPS,
    history: bool = True,
    seen: Seen = NOT_SEEN,
) -> Run:
    """Send the run back for changes, as `actor`, who may decide its current
    step: it waits, returned, for its requester; its round's approvals stop
    counting and its deadline pauses."""
    from chalicelib.domain.lifecycle import ActionKind

    kind = ActionKind.RETURN
    return _decide(storage, run_id, kind, actor, groups, comment, seen, clock, history=history)


def resubmit(
    storage: Storage,
    run_id: int,
    actor: str,
    comment: str = "",
    data: Optional[dict[str, Any]] = None,
    admin: bool = False,
    clock: Clock = utc_now,
    history: bool = True,
) -> Run:
    """Resubmit a returned run, as its requester (or an administrator), with a
    new input or its own: a new round from the first step that applies."""
    from chalicelib.domain import decision, transitions
    from chalicelib.domain.lifecycle import ActionKind

    def attempt(_: int) -> Run:
        stored = storage.get_run(run_id, history)
        run = as_proven(storage, stored)
        decision.check_requesters_action(run, ActionKind.RESUBMIT, actor, admin)
        workflow = storage.get_version(run.workflow_id, run.workflow_version)
        change = transitions.resubmit(run, workflow, actor, comment, data, clock())
        return storage.record_change(decision.against(change, stored))

    return errors.until_written(DECISION_ATTEMPTS, attempt, errors.Contended())


def cancel(
    storage: Storage,
    run_id: int,
    actor: str,
    reason: str = "",
    admin: bool = False,
    clock: Clock = utc_now,
    history: bool = True,
) -> Run:
    """Withdraw a run in progress or returned: its requester may, or an
    administrator (with its history, or only counting it, as for approve)."""
    from chalicelib.domain.lifecycle import ActionKind

    return _decide(
        storage,
        run_id,
        ActionKind.CANCEL,
        actor,
        NO_GROUPS,
        reason,
        NOT_SEEN,
        clock,
        admin,
        history,
    )


def _decide(
    storage: Storage,
    run_id: int,
    action: ActionKind,
    actor: str,
    groups: frozenset[str],
    comment: str,
    seen: Seen,
    clock: Clock,
    admin: bool = False,
    history: bool = True,
) -> Run:
    """Record the decision on the run as it is when the decision is written.

    A decision that loses the conditional write to another one re-reads the run
    and decides again, rechecking everything: losing an optimistic write is the
    service's business, not the caller's. A caller that named the step (and the
    round) it saw is answered 409 once the run has left it; while the run
    waits at it (another approval of a quorum won, or a step was appended to
    the workflow), the decision still stands. Every lost write means another
    decision (or an append) won, so DECISION_ATTEMPTS bounds a run's waiting
    deciders by its remaining approvals; past it the answer is a 409 the
    caller may retry (errors.Contended), and nothing is written.
    """
    from chalicelib import metric_lines
    from chalicelib.domain import decision, transitions
    from chalicelib.domain.lifecycle import ActionKind

    cancel = action == ActionKind.CANCEL
    for _ in range(DECISION_ATTEMPTS):
        stored = storage.get_run(run_id, history)
        run = as_proven(storage, stored)
        on_behalf_of, current = None, run.current_step
        own: Optional[Capacity] = None
        lent: tuple[Delegation, ...] = ()
        if not cancel:
            current = decision.step_to_decide(run, seen.step_id, seen.round)
            own, lent = _own_or_lent(storage, run, action, actor, groups, seen.on_behalf_of)
        following = (
            storage.steps_after(run.workflow_id, current.step_order, run.workflow_version)
            if current is not None and decision.needs_next_step(run, action)
            else ()
        )
        now = clock()  # after every read: the decision is made on the state as read now
        if cancel:
            decision.check_requesters_action(run, action, actor, admin)
        else:
            on_behalf_of = decision.check_decider(
                run, action, actor, groups, comment, lent, seen.on_behalf_of, now, own
            )
        change = transitions.decide(
            run, action, actor, comment, following, now, on_behalf_of, seen.channel
        )
        try:
            recorded = storage.record_change(decision.against(change, stored))
        except errors.LostWrite:
            continue
        metric_lines.changed(change)
        return recorded
    raise errors.Contended()


def permissions(
    storage: Storage,
    run_id: int,
    actor: str,
    groups: frozenset[str],
    admin: bool = False,
    on_behalf_of: Optional[str] = None,
    clock: Clock = utc_now,
    administers: bool = False,
) -> Permissions:
    """What `actor` (a member of `groups`, an administrator or not, holding
    their delegations) may do with the run now, for whom, and why not where
    they may not: the rule the decision routes and the inbox apply
    (decision.capacity); for `on_behalf_of` only, where given."""
    from chalicelib.domain import decision
    from chalicelib.domain.lifecycle import ADMINISTERED, CALLER_ACTIONS

    run = as_proven(storage, storage.get_run(run_id, history=False))
    now = clock()
    lent = delegations_to(storage, actor, groups)
    # Reassign and move are for who may define workflows (`administers`).
    rights = {kind: administers if kind in ADMINISTERED else admin for kind in CALLER_ACTIONS}
    held = tuple(
        decision.capacity(run, action, actor, groups, rights[action], lent, on_behalf_of, now)
        for action in CALLER_ACTIONS
    )
    refused = tuple(capacity.refused for capacity in held)
    lenders = tuple(capacity.on_behalf_of for capacity in held)
    return Permissions(run.id, run.workflow_id, actor, refused, lenders)


def delegations_to(storage: Storage, actor: str, groups: frozenset[str]) -> tuple[Delegation, ...]:
    """The delegations lent to `actor` or to one of `groups`, not ended nor revoked."""
    from chalicelib.domain import decision

    keys = decision.inbox_keys(actor, groups)[:-1]  # the user's and the groups' own
    return storage.delegations_to(keys, utc_now())


def _own_or_lent(
    storage: Storage,
    run: Run,
    action: ActionKind,
    actor: str,
    groups: frozenset[str],
    on_behalf_of: Optional[str],
) -> tuple[Optional[Capacity], tuple[Delegation, ...]]:
    """The caller's own capacity where it allows the decision for themselves;
    else their delegations, read only then: a decision for someone named, or
    one the caller may not make for themselves."""
    from chalicelib.domain import decision

    if on_behalf_of is None:
        own = decision.capacity(run, action, actor, groups)
        if own.refused is None:
            return own, ()
    return None, delegations_to(storage, actor, groups)


def as_proven(storage: Storage, run: Run) -> Run:
    """`run` with its current step's approvals and its round as its chained
    history holds them (decision.proven): from the history where it was read,
    else from the last actions a quorum needs, read only then."""
    from chalicelib.domain import decision

    count = decision.proving_actions(run)
    if not run.unread_actions:  # the history was read whole
        last = run.actions[-max(count, decision.PROVING_TAIL) :] if run.actions else ()
    elif count:
        last = storage.last_actions(run.id, count)
    else:
        last = ()
    return decision.proven(run, last)


def inbox(
    storage: Storage,
    actor: str,
    groups: frozenset[str],
    limit: int,
    cursor: Optional[str] = None,
) -> Page[Awaiting]:
    """One page of the runs that wait for a decision `actor` (a member of
    `groups`) may make now, the longest waiting first.

    The storage reads the runs in the inboxes of the caller's keys
    (decision.inbox_keys); the rule (decision.awaits) has the last word on
    each, so every backend's inbox is the same. The page reads on until it
    holds `limit` runs and knows whether one more follows, so next_cursor is
    set exactly when more follow, unless the rule left out so many that
    INBOX_READS reads did not reach them: then the page is shorter and
    next_cursor continues where the reading stopped."""
    from chalicelib.domain import decision
    from chalicelib.domain.lifecycle import ActionKind

    filters = inbox_filters(actor, groups)
    after = cursor_position(cursor, INBOX, filters)
    now = utc_now()
    lent = tuple(d for d in delegations_to(storage, actor, groups) if d.active_at(now))
    keys = decision.inbox_keys(actor, groups, [d.delegator for d in lent])
    position: Optional[tuple[str, int]] = (after[0], after[1]) if after else None
    waiting: list[Awaiting] = []
    for _ in range(INBOX_READS):
        found = storage.inbox(keys, position, limit + 1 - len(waiting))
        for run in found.items:
            held = decision.capacity(run, ActionKind.APPROVE, actor, groups, False, lent, None, now)
            if held.refused is None:
                waiting.append(Awaiting(run, held.on_behalf_of))
        if len(waiting) > limit:
            last = _waiting_position(waiting[limit - 1].run)
            return Page(tuple(waiting[:limit]), _cursor(INBOX, filters, list(last)))
        if not found.more or (found.resume is None and not found.items):
            return Page(tuple(waiting), None)
        position = found.resume or _waiting_position(found.items[-1])
    assert position is not None
    return Page(tuple(waiting), _cursor(INBOX, filters, list(position)))


def _waiting_position(run: Run) -> tuple[str, int]:
    """Where a run stands in the inboxes: when it reached its step, then its id."""
    assert run.current_step_since is not None, "only a waiting run is in an inbox"
    return run.current_step_since, run.id


# -- deadlines -----------------------------------------------------------------


def sweep(storage: Storage, clock: Clock = utc_now, page: int = SWEEP_PAGE) -> int:
    """Apply every step deadline that has passed by `clock()` (chalicelib/domain/deadlines.py);
    how many it applied. A run decided meanwhile is left to that decision."""

    now = clock()
    applied = 0
    while True:
        due = storage.due_runs(now, page)
        done = sum(_apply_deadline(storage, run_id, now) for run_id in due)
        applied += done
        if len(due) < page or not done:
            return applied


def _apply_deadline(storage: Storage, run_id: int, now: str) -> bool:
    """Apply the run's due deadline with the conditional write of a decision;
    False if none is due or another write won."""
    # Imported here, as in the decisions: reading a run (a cold start's usual
    # first request) needs neither.
    from chalicelib.domain import transitions

    change = transitions.deadline_passed(storage.get_run(run_id), now)
    if change is None:
        return False  # decided meanwhile, or an index that lags the table
    try:
        storage.record_change(change)
    except errors.LostWrite:
        return False  # a decision was recorded first: it stands
    from chalicelib import metric_lines

    metric_lines.changed(change, deadline_at=now)
    return True


# -- lists -------------------------------------------------------------------


def list_workflows(storage: Storage, limit: int, cursor: Optional[str] = None) -> Page[Workflow]:
    """One page of workflows by id ascending."""
    after = cursor_position(cursor, WORKFLOWS, {})
    return page_of(storage.list_workflows(after, limit), WORKFLOWS, {})


def list_runs(
    storage: Storage,
    workflow_id: Optional[int],
    status: Optional[str],
    limit: int,
    cursor: Optional[str] = None,
) -> Page[Run]:
    """One page of runs newest first, of that workflow and status where given."""
    filters = {"workflow_id": workflow_id, "status": status}
    before = cursor_position(cursor, RUNS, filters)
    if workflow_id is not None and workflow_id > MAX_ID:
        return Page((), None)  # no workflow has such an id
    return page_of(storage.list_runs(workflow_id, status, before, limit), RUNS, filters)


def run_events(
    storage: Storage, run_id: int, limit: int, cursor: Optional[str] = None
) -> Page[Event]:
    """One page of the run's events, oldest first, as they are delivered."""
    from chalicelib.domain import events

    filters = {"run_id": run_id}
    after = cursor_position(cursor, EVENTS, filters)
    found = storage.list_events(events.run_subject(run_id), after, limit)
    if not found.items and after is None:
        storage.get_run(run_id)  # NotFound, unless the run has no events yet
    return page_of(found, EVENTS, filters, lambda event: event.sequence)


def inbox_filters(actor: str, groups: frozenset[str]) -> dict[str, str]:
    """What an inbox cursor is bound to: its caller and groups, as a digest (up
    to 100 groups of 200 characters would not fit in a cursor)."""
    from chalicelib.domain import audit, names

    caller = [names.canonical(actor), sorted({names.canonical(group) for group in groups})]
    return {"caller": audit.sha256_hex(audit.canonical(caller))[:32]}


def cursor_position(cursor: Optional[str], list_name: str, filters: Filter) -> Any:
    if cursor is None:
        return None
    # Imported here, as below: only list pages need cursors (and their secret).
    from chalicelib import cursors

    return cursors.position(cursor, list_name, filters)


def _cursor(list_name: str, filters: Filter, position: Any) -> str:
    from chalicelib import cursors

    return cursors.issue(list_name, filters, position)


def page_of(
    found: Slice[Listed],
    list_name: str,
    filters: Filter,
    position: Callable[[Any], int] = lambda item: int(item.id),
) -> Page[Listed]:
    """The page of `found`, with a cursor that continues after its last item
    (at its `position` in the list: its id, or an event's sequence), or where
    the storage says the next page resumes (it may read entries it leaves out)."""
    resume = found.resume
    if resume is None and found.items:
        resume = position(found.items[-1])
    if not found.more or resume is None:
        return Page(found.items, None)
    return Page(found.items, _cursor(list_name, filters, resume))
