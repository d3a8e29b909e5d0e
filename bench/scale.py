"""Benchmark 2: latency does not grow with the database, only with the response.

  approve, GET run    100 runs versus 100,000 runs in the database (goal: the
                      ratio <= 1.2, which holds when every query uses an index)
  GET run history     a 1,000-action history versus 10 actions (goal: the same
                      number of SQL statements; time grows with the response
                      size only, so its ratio stays at or below the size ratio)
  approve history     an approve on a run with 1,000 actions versus 10 (goal:
                      at most 1.5x; the answer holds the whole history)

Both databases are built with bulk SQL in the schema the service makes, each
history chained as the service chains it: a 3-step workflow whose runs are a
third completed (three actions each), a third at step 2 (one action) and a
third at step 1. Measured
requests go through chalice.test.Client to the service, on runs picked at
random across the whole id range. Each measured approval is undone after it
(untimed), so the databases keep their size and every approval does the same
work. Every statement these requests run is checked with EXPLAIN QUERY PLAN.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from bench._common import Figure, Report, alternate, quiet_access_log, scaled, workdir

SMALL, BIG = 100, scaled(100_000, 20_000)
OPS_PER_ROUND = scaled(100, 8)
ROUNDS = scaled(31, 3)
HISTORY_SMALL, HISTORY_BIG = 10, 1000
SCALE_GOAL = 1.2
# An approve on a run with 1,000 actions against one with 10.
HISTORY_GOAL = 1.5
JSON = {"Content-Type": "application/json"}
# An approval whose answer leaves the history out (RFC 7240).
MINIMAL = {**JSON, "Prefer": "return=minimal"}
NOW = "2026-01-01T00:00:00.000Z"


def build(path: str, runs: int) -> dict[str, Any]:
    """A database with `runs` runs of a 3-step workflow, plus two long-history runs."""
    from chalicelib.storage.sqlite.adapter import SQLiteStorage

    # The service's schema, made by the service as it opens the file; the rows in bulk.
    made = SQLiteStorage(path)
    made.list_workflows(None, 1)
    made.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO workflows (id, name, created_at) VALUES (1, 'po', ?)", (NOW,))
    conn.execute(
        "INSERT INTO workflow_versions (workflow_id, version, created_at) VALUES (1, 1, ?)", (NOW,)
    )
    conn.executemany(
        "INSERT INTO workflow_steps (id, workflow_id, name, step_order) VALUES (?, 1, ?, ?)",
        [(i, f"step {i}", i) for i in (1, 2, 3)],
    )
    stored = Rows(conn)
    at_first_step = []
    for run_id in range(1, runs + 1):
        kind = run_id % 3
        status, step = [("completed", None), ("in_progress", 2), ("in_progress", 1)][kind]
        approvals = [(step_id, f"step {step_id}", f"approver {step_id}") for step_id in (1, 2, 3)]
        stored.run(run_id, 1, f"PO-{run_id}", status, step, approvals[: {0: 3, 1: 1, 2: 0}[kind]])
        if kind == 2:
            at_first_step.append(run_id)
    # A workflow long enough for a 1,000-action history, and its two runs.
    steps = HISTORY_BIG + 1
    conn.execute("INSERT INTO workflows (id, name, created_at) VALUES (2, 'long', ?)", (NOW,))
    conn.execute(
        "INSERT INTO workflow_versions (workflow_id, version, created_at) VALUES (2, 1, ?)", (NOW,)
    )
    conn.executemany(
        "INSERT INTO workflow_steps (id, workflow_id, name, step_order) VALUES (?, 2, ?, ?)",
        [(100 + i, f"step {i}", i) for i in range(1, steps + 1)],
    )
    history_runs = {}
    for number, count in enumerate((HISTORY_SMALL, HISTORY_BIG), start=runs + 1):
        approvals = [(100 + i, f"step {i}", "approver") for i in range(1, count + 1)]
        stored.run(number, 2, "long", "in_progress", 100 + count + 1, approvals)
        history_runs[count] = number
    stored.write()
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return {"runs": runs, "at_first_step": at_first_step, "history": history_runs}


class Rows:
    """Runs and their approvals as the service stores them: each action
    chained, the run's head, and the inbox row of a run waiting at a step
    open to anyone; written in bulk."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.runs: list[tuple[Any, ...]] = []
        self.actions: list[tuple[Any, ...]] = []
        self.inbox: list[tuple[Any, ...]] = []

    def run(
        self,
        run_id: int,
        workflow_id: int,
        title: str,
        status: str,
        step_id: int | None,
        approvals: list[tuple[int, str, str]],
    ) -> None:
        """A run, approved by `approvals` (step id, step name, actor) in turn."""
        import json

        from chalicelib.domain import audit, decision
        from chalicelib.domain.lifecycle import ActionKind, RunStatus
        from chalicelib.domain.models import Action, Run, Step

        actions = tuple(
            Action(
                len(self.actions) + seq, run_id, step, name, ActionKind.APPROVE, actor, "ok", NOW
            )
            for seq, (step, name, actor) in enumerate(approvals, start=1)
        )
        current = Step(step_id, workflow_id, "current", 0) if step_id is not None else None
        run = Run(run_id, workflow_id, title, RunStatus(status), current, NOW, NOW, actions)
        genesis, *hashes = audit.recomputed(run)
        self.actions += [
            (action.id, run_id, action.step_id, action.actor, hashed)
            for action, hashed in zip(actions, hashes, strict=True)
        ]
        since = NOW if current is not None else None
        approvers = json.dumps(list(dict.fromkeys(action.actor for action in actions)))
        head = (hashes or [genesis])[-1]
        self.runs.append((run_id, workflow_id, title, status, step_id, head, approvers, since))
        if current is not None:
            self.inbox += [(key, NOW, run_id) for key in decision.awaited_by(run)]

    def write(self) -> None:
        self.conn.executemany(
            "INSERT INTO workflow_runs (id, workflow_id, title, status, current_step_id, "
            "head_hash, approvers, current_step_since, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row, NOW, NOW) for row in self.runs],
        )
        self.conn.executemany(
            "INSERT INTO workflow_actions (id, run_id, step_id, action, actor, comment, "
            "hash, created_at) VALUES (?, ?, ?, 'approve', ?, 'ok', ?, ?)",
            [(*row, NOW) for row in self.actions],
        )
        self.conn.executemany(
            "INSERT INTO run_inbox (principal, since, run_id) VALUES (?, ?, ?)", self.inbox
        )


class Target:
    """The service on one database file, and what the benchmark needs of it."""

    def __init__(self, service: Any, path: str, built: dict[str, Any], seed: int) -> None:
        from chalice.test import Client

        from chalicelib.storage.sqlite import adapter as service_sqlite

        self.service = service
        self.storage = service_sqlite.SQLiteStorage(path)
        self.http = Client(service.app).http
        self.built = built
        self.random = random.Random(seed)
        self.undo = sqlite3.connect(path, isolation_level=None)

    def use(self) -> None:
        self.service.use_storage(self.storage)

    def approve_once(self) -> float:
        run_id = self.random.choice(self.built["at_first_step"])
        return self._approve_undone(run_id, (1, None, None))

    def approve_history(self, run_id: int, headers: dict[str, str] = JSON) -> float:
        """Approve a long-history run (as it was built, again each time)."""
        before = self.undo.execute(
            "SELECT current_step_id, updated_at, head_hash FROM workflow_runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        return self._approve_undone(run_id, before, headers)

    def _approve_undone(
        self, run_id: int, before: tuple[Any, ...], headers: dict[str, str] = JSON
    ) -> float:
        """The time of one approval of `run_id`, which is then undone (untimed):
        the run back at step, update time and head `before` (None: as they are)."""
        self.use()
        start = time.perf_counter()
        response = self.http.post(
            f"/runs/{run_id}/approve", headers=headers, body='{"actor": "bench"}'
        )
        elapsed = time.perf_counter() - start
        assert response.status_code == 200, response.body
        self.undo.execute("BEGIN IMMEDIATE")
        self.undo.execute(
            "DELETE FROM workflow_actions WHERE run_id = ? AND actor = 'bench'", (run_id,)
        )
        self.undo.execute(
            "UPDATE workflow_runs SET status = 'in_progress', current_step_id = ?, "
            "updated_at = coalesce(?, updated_at), head_hash = coalesce(?, head_hash) "
            "WHERE id = ?",
            (*before, run_id),
        )
        self.undo.execute("COMMIT")
        return elapsed

    def get_once(self, run_id: int | None = None) -> float:
        run_id = run_id or self.random.randint(1, self.built["runs"])
        self.use()
        start = time.perf_counter()
        response = self.http.get(f"/runs/{run_id}")
        elapsed = time.perf_counter() - start
        assert response.status_code == 200, response.body
        return elapsed


def mean_of(op: Callable[[], float], count: int) -> Callable[[], float]:
    return lambda: sum(op() for _ in range(count)) / count


def traced(target: Target, request: Callable[[], Any]) -> list[str]:
    """The SQL statements the service runs for one request."""
    statements: list[str] = []
    target.use()
    conn = target.storage._connection()
    conn.set_trace_callback(statements.append)
    try:
        request()
    finally:
        conn.set_trace_callback(None)
    return statements


def full_scans(path: str, statements: list[str]) -> list[str]:
    """The statements whose query plan scans a whole table instead of searching."""
    conn = sqlite3.connect(path)
    found = []
    for sql in statements:
        if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "INSERT")):
            continue
        for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"):
            detail = row[-1]
            if detail.startswith("SCAN") and "USING" not in detail:
                found.append(f"{detail}: {sql[:90]}")
    conn.close()
    return found


def main() -> None:
    tmp = workdir("scale")
    os.environ["WORKFLOW_STORAGE"] = "sqlite"
    os.environ["WORKFLOW_SQLITE_PATH"] = os.path.join(tmp, "unused.sqlite3")
    import app as service

    quiet_access_log(service)

    started = time.perf_counter()
    paths = {n: os.path.join(tmp, f"runs-{n}.sqlite3") for n in (SMALL, BIG)}
    built = {n: build(paths[n], n) for n in (SMALL, BIG)}
    build_s = time.perf_counter() - started
    small = Target(service, paths[SMALL], built[SMALL], seed=1)
    big = Target(service, paths[BIG], built[BIG], seed=2)

    history = built[SMALL]["history"]
    rounds = alternate(
        {
            "approve_small": mean_of(small.approve_once, OPS_PER_ROUND),
            "approve_big": mean_of(big.approve_once, OPS_PER_ROUND),
            "get_small": mean_of(small.get_once, OPS_PER_ROUND),
            "get_big": mean_of(big.get_once, OPS_PER_ROUND),
            "history_small": mean_of(lambda: small.get_once(history[HISTORY_SMALL]), OPS_PER_ROUND),
            "history_big": mean_of(
                lambda: small.get_once(history[HISTORY_BIG]), OPS_PER_ROUND // 4
            ),
        },
        ROUNDS,
        progress="scale",
    )
    # Rounds of their own: a 1,000-action approval's 230 KB answer, between
    # the approvals above, would change what those find in the CPU's caches.
    decisions = alternate(
        {
            "decide_small": mean_of(
                lambda: small.approve_history(history[HISTORY_SMALL]), OPS_PER_ROUND // 4
            ),
            "decide_big": mean_of(
                lambda: small.approve_history(history[HISTORY_BIG]), OPS_PER_ROUND // 4
            ),
            "minimal_small": mean_of(
                lambda: small.approve_history(history[HISTORY_SMALL], MINIMAL), OPS_PER_ROUND // 4
            ),
            "minimal_big": mean_of(
                lambda: small.approve_history(history[HISTORY_BIG], MINIMAL), OPS_PER_ROUND // 4
            ),
        },
        ROUNDS,
        progress="scale, long histories",
    )

    # Statements per request and their query plans, on the big database.
    approve_sql = traced(big, big.approve_once)
    get_sql = traced(big, big.get_once)
    history_sql = {n: traced(small, partial(small.get_once, history[n])) for n in history}
    decide_sql = {n: traced(small, partial(small.approve_history, history[n])) for n in history}
    minimal_sql = {
        n: traced(small, partial(small.approve_history, history[n], MINIMAL)) for n in history
    }
    scans = full_scans(paths[BIG], approve_sql + get_sql)
    sizes = {n: len(small.http.get(f"/runs/{history[n]}").body) for n in history}

    report = Report("scale", "2. Scale (SQLite)")
    for op in ("approve", "get"):
        label = "approve" if op == "approve" else "GET run"
        report.add(Figure(f"{label}, {SMALL} runs", rounds.median(f"{op}_small"), "s"))
        report.add(Figure(f"{label}, {BIG:,} runs", rounds.median(f"{op}_big"), "s"))
        ratio = rounds.ratio(f"{op}_big", f"{op}_small")
        report.add(
            Figure(
                f"{label}: {BIG:,} / {SMALL} runs",
                ratio,
                "x",
                goal=f"<= {SCALE_GOAL}",
                met=ratio <= SCALE_GOAL,
            )
        )
    report.add(
        Figure(
            f"GET run, {HISTORY_SMALL} actions",
            rounds.median("history_small"),
            "s",
            note=f"{sizes[HISTORY_SMALL]:,} bytes",
        )
    )
    report.add(
        Figure(
            f"GET run, {HISTORY_BIG:,} actions",
            rounds.median("history_big"),
            "s",
            note=f"{sizes[HISTORY_BIG]:,} bytes",
        )
    )
    size_ratio = sizes[HISTORY_BIG] / sizes[HISTORY_SMALL]
    time_ratio = rounds.ratio("history_big", "history_small")
    report.add(
        Figure(
            f"GET run time, {HISTORY_BIG:,} / {HISTORY_SMALL} actions",
            time_ratio,
            "x",
            goal=f"<= size ratio {size_ratio:.1f}x",
            met=time_ratio <= size_ratio,
        )
    )
    same = len(history_sql[HISTORY_SMALL]) == len(history_sql[HISTORY_BIG])
    report.add(
        Figure(
            f"SQL statements per GET run, {HISTORY_SMALL} / {HISTORY_BIG:,} actions",
            len(history_sql[HISTORY_BIG]),
            "",
            goal="same for both",
            met=same,
            note=f"{len(history_sql[HISTORY_SMALL])} and {len(history_sql[HISTORY_BIG])}",
        )
    )
    for answer, rounds_of in (("", "decide"), (", minimal answer", "minimal")):
        for n, size in ((HISTORY_SMALL, "small"), (HISTORY_BIG, "big")):
            report.add(
                Figure(
                    f"approve, {n:,} actions{answer}", decisions.median(f"{rounds_of}_{size}"), "s"
                )
            )
    minimal_ratio = decisions.ratio("minimal_big", "minimal_small")
    report.add(
        Figure(
            f"approve: {HISTORY_BIG:,} / {HISTORY_SMALL} actions, minimal answer",
            minimal_ratio,
            "x",
            goal=f"<= {HISTORY_GOAL}",
            met=minimal_ratio <= HISTORY_GOAL,
            note=f"Prefer: return=minimal; SQL statements {len(minimal_sql[HISTORY_SMALL])} "
            f"and {len(minimal_sql[HISTORY_BIG])}: the run and a count of its actions",
        )
    )
    decide_ratio = decisions.ratio("decide_big", "decide_small")
    report.add(
        Figure(
            f"approve: {HISTORY_BIG:,} / {HISTORY_SMALL} actions, whole answer",
            decide_ratio,
            "x",
            note=f"SQL statements {len(decide_sql[HISTORY_SMALL])} and "
            f"{len(decide_sql[HISTORY_BIG])}; the answer holds the whole history, read and "
            "encoded",
        )
    )
    report.add(
        Figure(
            "full table scans in approve and GET run",
            len(scans),
            "",
            goal="0",
            met=not scans,
            note="; ".join(scans),
        )
    )
    report.markdown = (
        f"Bulk-built databases in {build_s:.1f} s. Mean latency per request through "
        f"chalice.test.Client, {ROUNDS} rounds of {OPS_PER_ROUND} requests per contender "
        f"({OPS_PER_ROUND // 4} for the 1,000-action history), alternating; ratios are medians "
        f"of per-round ratios. Statements per request on the big database: approve "
        f"{len(approve_sql)}, GET run {len(get_sql)}.\n\n"
        "Statements of one approve:\n\n" + "\n".join(f"    {s}" for s in approve_sql)
    )
    report.finish()


if __name__ == "__main__":
    main()
