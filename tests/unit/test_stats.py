"""The figures' rules (chalicelib/domain/stats.py): nearest-rank percentiles,
which decision moved a run on, and the window a query asks for."""

from __future__ import annotations

from typing import Optional

import pytest

from chalicelib.domain import errors, stats
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Action, Run, Step


@pytest.mark.parametrize(
    "values, percentile, expected",
    [
        ([], 50, None),
        ([7.0], 99, 7.0),
        ([1.0, 2.0], 50, 1.0),
        ([1.0, 2.0], 51, 2.0),
        ([float(v) for v in range(1, 201)], 50, 100.0),
        ([float(v) for v in range(1, 201)], 90, 180.0),
        ([float(v) for v in range(1, 201)], 99, 198.0),
        ([float(v) for v in range(1, 11)], 99, 10.0),
        ([float(v) for v in range(1, 11)], 90, 9.0),
    ],
)
def test_a_percentile_is_the_value_at_the_nearest_rank(
    values: list[float], percentile: int, expected: Optional[float]
) -> None:
    assert stats.nearest_rank(values, percentile) == expected


def test_figures_sort_what_they_are_given() -> None:
    assert stats.figures([3.0, 1.0, 2.0]) == stats.Figures(3, 2.0, 3.0, 3.0, 3.0)
    assert stats.figures([]) == stats.Figures(0, None, None, None, None)


def test_seconds_are_kept_to_the_millisecond() -> None:
    assert stats.seconds_between("2026-03-01T00:00:00.000Z", "2026-03-01T00:00:01.001Z") == 1.001
    assert stats.seconds_between("2026-02-28T23:59:59.999Z", "2026-03-01T00:00:00.000Z") == 0.001


STEP = Step(1, 1, "Manager", 1, required_approvals=2)
NEXT = Step(2, 1, "Finance", 2)


def entry(kind: ActionKind, step: Step, second: int, round_: int = 1) -> Action:
    return Action(
        0, 1, step.id, step.name, kind, "x", "", f"2026-03-01T00:00:{second:02d}.000Z", round=round_
    )


def run(actions: tuple[Action, ...], status: RunStatus, current: Optional[Step]) -> Run:
    return Run(1, 1, "t", status, current, "2026-03-01T00:00:00.000Z", "", actions)


def test_only_the_approval_that_completes_the_quorum_ends_a_wait() -> None:
    waiting = run((entry(ActionKind.APPROVE, STEP, 5),), RunStatus.IN_PROGRESS, STEP)
    assert stats.waits(waiting) == []
    moved = run(
        (entry(ActionKind.APPROVE, STEP, 5), entry(ActionKind.APPROVE, STEP, 9)),
        RunStatus.IN_PROGRESS,
        NEXT,
    )
    assert stats.waits(moved) == [(STEP.id, 9.0)]


def test_a_wait_after_a_return_starts_at_the_resubmit() -> None:
    history = (
        entry(ActionKind.RETURN, STEP, 4),
        entry(ActionKind.RESUBMIT, STEP, 10, round_=2),
        entry(ActionKind.REJECT, STEP, 13, round_=2),
    )
    assert stats.waits(run(history, RunStatus.REJECTED, None)) == [(1, 4.0), (1, 3.0)]


def test_a_cancelled_wait_is_not_counted() -> None:
    history = (entry(ActionKind.APPROVE, STEP, 4), entry(ActionKind.CANCEL, STEP, 6))
    assert stats.waits(run(history, RunStatus.CANCELLED, None)) == []


NOW = "2026-03-31T00:00:00.000Z"


def test_the_window_defaults_to_the_30_days_before_its_end() -> None:
    assert stats.window(None, None, NOW) == stats.Window("2026-03-01T00:00:00.000Z", NOW)
    assert stats.window(None, "0001-01-02T00:00:00.000Z", NOW).start == stats.EARLIEST


@pytest.mark.parametrize(
    "start, end",
    [(NOW, NOW), ("2026-04-01T00:00:00.000Z", None), ("2025-03-29T23:59:59.999Z", None)],
)
def test_a_window_that_is_none_or_longer_than_366_days_is_refused(
    start: str, end: Optional[str]
) -> None:
    with pytest.raises(errors.Unprocessable):
        stats.window(start, end, NOW)
