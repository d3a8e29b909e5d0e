"""How long approvals take: a workflow's figures over the runs started in a
window, computed from those runs and their histories (GET /workflows/{id}/stats).

Pure: the storage reads the runs (at most MAX_RUNS with at most MAX_ACTIONS
actions in all, the earliest started first) and this module counts.

- A run counts when it started in the window: `from` <= created_at < `to`
  (and, where a version is asked for, on that version: `started_on`).
- Its status is counted as it is now; `overdue`: in progress, and its current
  step's deadline has passed by `now` (whether or not the sweeper applied it).
- The wait at a step runs from the run's arrival there (its start, the
  decision that moved it on from the step before, or the resubmit that began
  its round) to the decision that moved it on: the approval that completed
  the quorum, a rejection (by a person or by the deadline) or a return. A run
  still waiting, or withdrawn while it waited, adds no wait.
- `run_seconds`: from the start to the last entry of each run that ended
  (completed, rejected or cancelled).
- Percentiles are exact and nearest-rank: of n values sorted, the p-th is
  the one at rank ceil(p * n / 100) (from 1); of no value, None.

Which approval completed a quorum is read from the history, not from the
rule: an approval moved its run on where the next entry is at another step or
in another round (the next step's decision, a skip, the end), or, as the last
entry, where the run no longer waits at that step in that round.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Optional

from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import ANYONE, Run, Step, Workflow
from chalicelib.domain.names import canonical_principal
from chalicelib.domain.record import Record

# The runs one answer reads, and their actions in all: past either the answer
# holds the runs started first and says it is `truncated`.
MAX_RUNS = 1000
MAX_ACTIONS = 10_000
# The window when none is given, and the longest one may ask for.
DEFAULT_DAYS = 30
MAX_DAYS = 366
PERCENTILES = (50, 90, 99)
EARLIEST = "0001-01-01T00:00:00.000Z"
# The decisions that may move a run on from its step.
DECISIONS = (ActionKind.APPROVE, ActionKind.REJECT, ActionKind.RETURN)
ENDED = (RunStatus.COMPLETED, RunStatus.REJECTED, RunStatus.CANCELLED)


class Figures(Record):
    """Durations in seconds: how many (`total`: a record's `count` is tuple's
    own), their nearest-rank percentiles and the longest."""

    total: int
    p50: Optional[float]
    p90: Optional[float]
    p99: Optional[float]
    max: Optional[float]


class StepFigures(Record):
    name: str
    step_order: int
    step_id: int
    approvals: int
    rejections: int
    returns: int
    skips: int
    wait_seconds: Figures

    @property
    def decisions(self) -> int:
        return self.approvals + self.rejections + self.returns


class RunCounts(Record):
    started: int
    completed: int
    rejected: int
    returned: int
    cancelled: int
    in_progress: int
    overdue: int


class WorkflowStats(Record):
    """A workflow's figures over the runs started from `window_from` (inclusive)
    to `window_to` (exclusive)."""

    workflow_id: int
    window_from: str
    window_to: str
    truncated: bool
    runs: RunCounts
    run_seconds: Figures
    steps: tuple[StepFigures, ...]
    # The runs in progress past their step's deadline, by id.
    overdue_runs: tuple[int, ...]


class Window(Record):
    """Where a stats window starts (inclusive) and ends (exclusive), as stamps."""

    start: str
    end: str


def instant(stamp: str) -> datetime:
    """A service timestamp (UTC, milliseconds, Z) as an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def stamp_of(moment: datetime) -> str:
    """The service's timestamp of an aware datetime (they compare as text)."""
    from datetime import UTC

    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def milliseconds(stamp: str) -> int:
    """The milliseconds from the epoch to a service timestamp (UTC, Z): parsed
    naive, which takes a third of the time an aware parse does (every
    decision's metric line takes two)."""
    elapsed = datetime.fromisoformat(stamp.removesuffix("Z")) - _EPOCH
    return (elapsed.days * 86400 + elapsed.seconds) * 1000 + elapsed.microseconds // 1000


_EPOCH = datetime(1970, 1, 1)


def seconds_between(earlier: str, later: str) -> float:
    """The seconds from one service timestamp to another, to the millisecond."""
    return (milliseconds(later) - milliseconds(earlier)) / 1000


def window(start: Optional[str], end: Optional[str], now: str) -> Window:
    """The window asked for (normalised stamps; None: the default): it ends at
    `end` (default now) and starts at `start` (default DEFAULT_DAYS earlier).
    Unprocessable (a rule no schema states) unless it starts before it ends
    and spans at most MAX_DAYS."""
    last = end if end is not None else now
    first = start if start is not None else _days_before(last, DEFAULT_DAYS)
    if first >= last:
        raise errors.Unprocessable("'from' must be before 'to'")
    if instant(last) - instant(first) > timedelta(days=MAX_DAYS):
        raise errors.Unprocessable(f"A window spans at most {MAX_DAYS} days; narrow 'from'..'to'")
    return Window(first, last)


def _days_before(stamp: str, days: int) -> str:
    """The stamp `days` before `stamp`, or the first the service keeps."""
    try:
        return stamp_of(instant(stamp) - timedelta(days=days))
    except OverflowError:
        return EARLIEST


def nearest_rank(values: Sequence[float], percentile: int) -> Optional[float]:
    """The nearest-rank `percentile` of `values` (sorted): the value at rank
    ceil(percentile * n / 100); None of no value."""
    if not values:
        return None
    rank = -(-percentile * len(values) // 100)  # ceil, exactly, in integers
    return values[max(rank, 1) - 1]


def figures(durations: Iterable[float]) -> Figures:
    ordered = sorted(durations)
    p50, p90, p99 = (nearest_rank(ordered, p) for p in PERCENTILES)
    return Figures(len(ordered), p50, p90, p99, ordered[-1] if ordered else None)


def moved_on(run: Run, at: int) -> bool:
    """Whether the decision at `at` in the run's history moved the run on from
    its step: a rejection or a return always; an approval where the run is
    next at another step, in another round, or done."""
    entry = run.actions[at]
    if entry.action != ActionKind.APPROVE:
        return entry.action in DECISIONS
    if at + 1 < len(run.actions):
        following = run.actions[at + 1]
        return (following.step_id, following.round) != (entry.step_id, entry.round)
    waits_there = run.status == RunStatus.IN_PROGRESS and run.current_step_id == entry.step_id
    return not (waits_there and run.round == entry.round)


def waits(run: Run) -> list[tuple[int, float]]:
    """(step id, seconds) of each wait in the run's history that a decision ended."""
    found: list[tuple[int, float]] = []
    arrived = run.created_at
    for at, entry in enumerate(run.actions):
        if entry.action in DECISIONS and moved_on(run, at):
            found.append((entry.step_id, seconds_between(arrived, entry.created_at)))
            arrived = entry.created_at
        elif entry.action in (ActionKind.SKIP, ActionKind.RESUBMIT):
            arrived = entry.created_at
    return found


def is_overdue(run: Run, now: str) -> bool:
    """In progress, and its current step's deadline has passed by `now`."""
    due = run.current_step_due_at
    return run.status == RunStatus.IN_PROGRESS and due is not None and due <= now


def started_on(runs: Sequence[Run], version: Optional[int]) -> Sequence[Run]:
    """The runs started on `version` of their workflow (None: all of them). A
    run moved to a newer version since counts for the one it started on, as
    its genesis names it."""
    if version is None:
        return runs
    return [run for run in runs if (run.genesis_version or run.workflow_version) == version]


def workflow_stats(
    workflow: Workflow, runs: Sequence[Run], span: Window, truncated: bool, now: str
) -> WorkflowStats:
    """The figures of `workflow` over `runs` (those started in `span`, with
    their histories), its runs' deadlines judged at `now`."""
    overdue = tuple(sorted(run.id for run in runs if is_overdue(run, now)))
    statuses = [run.status for run in runs]
    completed, rejected, returned, cancelled, in_progress = (statuses.count(s) for s in _COUNTED)
    counts = RunCounts(
        len(runs), completed, rejected, returned, cancelled, in_progress, len(overdue)
    )
    ended = (run for run in runs if run.status in ENDED and run.actions)
    run_seconds = figures(seconds_between(r.created_at, r.actions[-1].created_at) for r in ended)
    waited: dict[int, list[float]] = {}
    kinds: dict[int, list[str]] = {}
    for run in runs:  # each history walked once, whatever the number of steps
        for step_id, seconds in waits(run):
            waited.setdefault(step_id, []).append(seconds)
        for entry in run.actions:
            kinds.setdefault(entry.step_id, []).append(entry.action)
    steps = tuple(
        _step_figures(step, kinds.get(step.id, []), waited.get(step.id, []))
        for step in workflow.steps
    )
    return WorkflowStats(
        workflow.id, span.start, span.end, truncated, counts, run_seconds, steps, overdue
    )


# RunCounts' statuses, in its order after `started`.
_COUNTED = (
    RunStatus.COMPLETED,
    RunStatus.REJECTED,
    RunStatus.RETURNED,
    RunStatus.CANCELLED,
    RunStatus.IN_PROGRESS,
)


def _step_figures(step: Step, kinds: list[str], waited: list[float]) -> StepFigures:
    """A step's figures from the kinds of its history entries and its waits."""
    return StepFigures(
        step.name,
        step.step_order,
        step.id,
        kinds.count(ActionKind.APPROVE),
        kinds.count(ActionKind.REJECT),
        kinds.count(ActionKind.RETURN),
        kinds.count(ActionKind.SKIP),
        figures(waited),
    )


def may_read(workflow: Workflow, keys: Sequence[str], admin: bool) -> None:
    """A verified caller reads a workflow's figures as an administrator, or as
    one of its approvers: one of their inbox `keys` (their user, their groups
    and "*", as decision.inbox_keys gives them) is among those a step of it
    names as approvers or escalates to, or a step names no approver (anyone
    may decide it). Forbidden otherwise."""
    if admin or set(keys) & set(approvers_of(workflow)):
        return
    raise errors.Forbidden(
        "Only administrators and the workflow's approvers (whom its steps name as approvers "
        "or escalate to) may read its figures"
    )


def approvers_of(workflow: Workflow) -> tuple[str, ...]:
    """Every principal (canonical) that a step of the workflow may wait for:
    its approvers and whom its deadline escalates to, or ANYONE where it names none."""
    found: dict[str, None] = {}
    for step in workflow.steps:
        escalated = step.deadline.escalate_to if step.deadline else ()
        named = (*step.approvers, *escalated) if step.approvers else (ANYONE, *escalated)
        found.update(dict.fromkeys(canonical_principal(principal) for principal in named))
    return tuple(found)
