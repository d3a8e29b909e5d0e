"""CloudWatch metrics as Embedded Metric Format lines: one JSON line per start,
decision and deadline action, which CloudWatch Logs turns into metrics on its
own (no PutMetricData call, no cost per request beyond the log line).

Pure: each line is made from what the transition computed (the run started,
or the change written); the engine writes it to standard output once the
write succeeded. Dimensions: `workflow` (its id) and `step` (its name).

    Started      Count    a run started, at its first step
    Decisions    Count    an approval, rejection or return of the step
    WaitSeconds  Seconds  the wait at the step a decision moved the run on
                          from (domain/stats.py measures it alike)
    Overdue      Count    the step's deadline passed (the sweeper applied it)

The format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

import functools
from json.encoder import encode_basestring as _string
from typing import Optional

from chalicelib.domain.changes import RunChange
from chalicelib.domain.models import Run, Step
from chalicelib.domain.shapes import compact
from chalicelib.domain.stats import DECISIONS, milliseconds, seconds_between

DEFAULT_NAMESPACE = "ApprovalWorkflows"
DIMENSIONS = ("workflow", "step")
UNITS = {"Started": "Count", "Decisions": "Count", "WaitSeconds": "Seconds", "Overdue": "Count"}


def started_line(run: Run, namespace: str) -> Optional[str]:
    """The line of a run started (None: it started completed, every step skipped)."""
    if run.current_step is None:
        return None
    return _line(namespace, run, run.current_step, run.created_at, {"Started": 1})


def change_line(
    change: RunChange, namespace: str, deadline_at: Optional[str] = None
) -> Optional[str]:
    """The line of a decision, or of a deadline the sweeper applied at
    `deadline_at`; None for a change that is neither (a cancellation, a resubmit)."""
    before, step = change.before, change.before.current_step
    decided = next((a for a in change.actions if a.action in DECISIONS), None)
    if step is None or (decided is None and deadline_at is None):
        return None
    values: dict[str, float] = {"Overdue": 1} if deadline_at is not None else {}
    at = decided.created_at if decided is not None else deadline_at
    assert at is not None
    if decided is not None:
        values["Decisions"] = 1
        if _moves_on(change) and before.current_step_since is not None:
            values["WaitSeconds"] = seconds_between(before.current_step_since, at)
    return _line(namespace, before, step, at, values)


def _moves_on(change: RunChange) -> bool:
    """Whether the change leaves the step: the run is elsewhere, or ended, after it."""
    before, after = change.before, change.after
    return (after.status, after.current_step_id, after.round) != (
        before.status,
        before.current_step_id,
        before.round,
    )


def _line(namespace: str, run: Run, step: Step, at: str, values: dict[str, float]) -> str:
    # On every decision's path: the document's fixed part is made once per
    # namespace and set of metrics, and the rest filled in (a third of the
    # time json.dumps of the whole takes).
    members = "".join(f'"{name}":{value!r},' for name, value in values.items())
    return (
        f'{{"_aws":{{"Timestamp":{milliseconds(at)},"CloudWatchMetrics":'
        f"{_directives(namespace, tuple(values))}}},"
        f'"workflow":"{run.workflow_id}","step":{_string(step.name)},'
        f'{members}"run_id":{run.id}}}'
    )


@functools.lru_cache(maxsize=64)
def _directives(namespace: str, names: tuple[str, ...]) -> str:
    """The CloudWatchMetrics of a line: its namespace, dimensions and metrics."""
    directive = {
        "Namespace": namespace,
        "Dimensions": [list(DIMENSIONS)],
        "Metrics": [{"Name": name, "Unit": UNITS[name]} for name in names],
    }
    return compact([directive])
