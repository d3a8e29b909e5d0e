"""SQLite: the runs of a workflow started in a window, with their histories
(the figures of GET /workflows/{id}/stats, chalicelib/domain/stats.py).

One statement, so one snapshot: the window's first runs by (created_at, id),
through the index on workflow_runs(workflow_id, created_at), joined with
their actions. Its rows are bounded as the answer is: at most `max_runs` + 1
runs, and no more rows than `max_actions` + `max_runs` + 1 (a run without
actions is one row), so the last run read may be cut short: it is dropped.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from chalicelib.domain.models import Action, Run, Slice
from chalicelib.storage.sqlite import rows


def runs_started_between(
    conn: sqlite3.Connection,
    workflow_id: int,
    start: str,
    end: str,
    max_runs: int,
    max_actions: int,
) -> Slice[Run]:
    """The workflow's runs started from `start` (inclusive) to `end`
    (exclusive), earliest first, with their histories: as many as `max_runs`
    runs and `max_actions` actions hold; `more` where the window holds others."""
    row_limit = max_actions + max_runs + 1
    read = conn.execute(
        "WITH chosen AS (SELECT id FROM workflow_runs WHERE workflow_id = ? "
        "AND created_at >= ? AND created_at < ? ORDER BY created_at, id LIMIT ?) "
        f"SELECT {rows.RUN_COLUMNS}, {rows.ACTION_COLUMNS} FROM chosen c "
        "JOIN workflow_runs r ON r.id = c.id "
        "LEFT JOIN workflow_steps s ON s.id = r.current_step_id "
        f"JOIN {rows.RUN_VERSION} "
        "LEFT JOIN workflow_actions wa ON wa.run_id = r.id "
        "LEFT JOIN workflow_steps ws ON ws.id = wa.step_id "
        "ORDER BY r.created_at, r.id, wa.id LIMIT ?",
        (workflow_id, start, end, max_runs + 1, row_limit),
    ).fetchall()
    runs = _grouped(read)
    if len(read) == row_limit:
        runs = runs[:-1]  # the LIMIT may have cut its history short
    return fitting(runs, max_runs, max_actions, cut=len(read) == row_limit)


def fitting(runs: list[Run], max_runs: int, max_actions: int, cut: bool) -> Slice[Run]:
    """The first of `runs` that `max_runs` runs and `max_actions` actions hold,
    and whether any were left out (or, `cut`, not read)."""
    kept: list[Run] = []
    actions = 0
    for run in runs[:max_runs]:
        actions += len(run.actions)
        if actions > max_actions:
            break
        kept.append(run)
    return Slice(tuple(kept), cut or len(kept) < len(runs))


def _grouped(read: list[tuple[Any, ...]]) -> list[Run]:
    """The runs of rows that each start with a run's columns and end with one
    of its actions' (NULLs for a run without any), in order."""
    found: list[tuple[tuple[Any, ...], list[Action]]] = []
    for row in read:
        if not found or found[-1][0][0] != row[0]:
            found.append((row, []))
        if row[rows.ACTIONS_FROM] is not None:
            found[-1][1].append(rows.action(row[rows.ACTIONS_FROM :]))
    return [rows.listed_run(row, tuple(actions)) for row, actions in found]
