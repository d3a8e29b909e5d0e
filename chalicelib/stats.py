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
    version: Optional[int] = None,
) -> stats.WorkflowStats:
    """The workflow's figures over the runs started from `start` (inclusive)
    to `end` (exclusive), service timestamps (None: the last DEFAULT_DAYS to
    now): those started on `version` with its steps (NotFound where it has no
    such version), or (None) every version's with the newest's steps. A
    verified `reader` (None where callers are not verified) must be an
    administrator or one of that version's approvers."""
    from chalicelib.domain import decision

    now = clock()
    span = stats.window(start, end, now)
    if version is None:
        workflow = storage.get_workflow(workflow_id)
    else:
        workflow = storage.get_workflow_version(workflow_id, version)
    if reader is not None:
        stats.may_read(workflow, decision.inbox_keys(reader, groups), admin)
    found = storage.runs_started_between(
        workflow_id, span.start, span.end, stats.MAX_RUNS, stats.MAX_ACTIONS
    )
    runs = stats.started_on(found.items, version)
    return stats.workflow_stats(workflow, runs, span, found.more, now)
