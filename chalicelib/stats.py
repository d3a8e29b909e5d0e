"""The use case of a workflow's figures: how long its approvals take
(GET /workflows/{id}/stats; the rules that count are chalicelib/domain/stats.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from chalicelib import engine
from chalicelib.domain import stats

if TYPE_CHECKING:
    from chalicelib.storage import Storage


def workflow_stats(
    storage: Storage,
    workflow_id: int,
    start: Optional[str] = None,
    end: Optional[str] = None,
    reader: Optional[str] = None,
    groups: frozenset[str] = frozenset(),
    admin: bool = False,
    clock: engine.Clock = engine.utc_now,
) -> stats.WorkflowStats:
    """The workflow's figures over the runs started from `start` (inclusive)
    to `end` (exclusive), service timestamps (None: the last DEFAULT_DAYS to
    now). A verified `reader` (None where callers are not verified) must be an
    administrator or one of the workflow's approvers."""
    from chalicelib.domain import decision

    now = clock()
    span = stats.window(start, end, now)
    workflow = storage.get_workflow(workflow_id)
    if reader is not None:
        stats.may_read(workflow, decision.inbox_keys(reader, groups), admin)
    found = storage.runs_started_between(
        workflow_id, span.start, span.end, stats.MAX_RUNS, stats.MAX_ACTIONS
    )
    return stats.workflow_stats(workflow, found.items, span, found.more, now)
