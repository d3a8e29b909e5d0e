"""The CloudWatch metrics of starts, decisions and deadlines, written as
Embedded Metric Format lines on standard output (CloudWatch Logs on Lambda,
which makes them metrics): the lines are chalicelib/domain/metrics.py's, the
namespace WORKFLOW_METRICS_NAMESPACE's (default ApprovalWorkflows).

The engine calls these once a write succeeded, so that a change that lost its
conditional write, and was decided again, counts once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional, TextIO

from chalicelib import log_lines

if TYPE_CHECKING:
    from chalicelib.domain.changes import RunChange
    from chalicelib.domain.models import Run

NAMESPACE_VARIABLE = "WORKFLOW_METRICS_NAMESPACE"

# Where the lines go: None is standard output at the time of writing (as for
# the access lines); set_stream points them elsewhere (a benchmark's /dev/null).
_stream: Optional[TextIO] = None


def set_stream(stream: Optional[TextIO]) -> None:
    """Write the lines to `stream` from now on (None: standard output again)."""
    global _stream
    _stream = stream


def namespace() -> str:
    from chalicelib.domain.metrics import DEFAULT_NAMESPACE

    return os.environ.get(NAMESPACE_VARIABLE, "").strip() or DEFAULT_NAMESPACE


def started(run: Run) -> None:
    """The line of a run started."""
    from chalicelib.domain import metrics

    _write(metrics.started_line(run, namespace()))


def changed(change: RunChange, deadline_at: Optional[str] = None) -> None:
    """The line of a change written: a decision, or a deadline the sweeper
    applied at `deadline_at`."""
    from chalicelib.domain import metrics

    _write(metrics.change_line(change, namespace(), deadline_at))


def _write(line: Optional[str]) -> None:
    if line is not None:
        log_lines.write(line, _stream)
