"""Benchmark 1: throughput of the service on SQLite against the floor.

One unit of work is what an approval does end to end: start a run of a
3-step workflow, approve it three times, read it back (five requests).

  service  app.py through chalice.test.Client, SQLite storage
  floor    raw sqlite3, hand-written SQL doing the same reads and writes on the
           spec's schema with the same pragmas, each read one statement and
           each decision one write transaction (a)
  bare     the same five requests against a Chalice app whose routes do
           nothing: the framework's own cost (b)

The fastest any service on Chalice and SQLite could go is limited by (a) and
(b) together: limit = 1 / (1/a + 1/b). Goal: service >= 0.7 x limit.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench._common import Figure, Report, alternate, per_unit, quiet_access_log, scaled, workdir
from chalicelib.storage import sqlite

GOAL = 0.7
UNITS_PER_ROUND = scaled(200, 10)
ROUNDS = scaled(31, 3)
JSON = {"Content-Type": "application/json"}

# The service's own schema: the spec's tables verbatim plus the indexes any
# implementation needs not to scan a table.
FLOOR_SCHEMA = sqlite.SCHEMA

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA busy_timeout = 10000",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
)

# The run, its current step and its history in one statement: one snapshot
# with no read transaction around it, the least a read can do.
RUN_SQL = (
    "SELECT r.id, r.workflow_id, r.title, r.status, r.created_at, r.updated_at, "
    "s.id, s.name, s.step_order, wa.*, ws.name AS step_name FROM workflow_runs r "
    "LEFT JOIN workflow_steps s ON s.id = r.current_step_id "
    "LEFT JOIN workflow_actions wa ON wa.run_id = r.id "
    "LEFT JOIN workflow_steps ws ON ws.id = wa.step_id "
    "WHERE r.id = ? ORDER BY wa.id ASC"
)
NEXT_SQL = (
    "SELECT id, name, step_order FROM workflow_steps "
    "WHERE workflow_id = ? AND step_order > ? ORDER BY step_order ASC LIMIT 1"
)
NOW = "2026-01-01T00:00:00.000Z"


class Floor:
    """The same reads and writes as the service, with nothing around them."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        for pragma in PRAGMAS:
            self.conn.execute(pragma)
        self.conn.executescript(FLOOR_SCHEMA)
        self.workflow_id = self.conn.execute(
            "INSERT INTO workflows (name, created_at) VALUES ('po', ?)", (NOW,)
        ).lastrowid
        for order, name in enumerate(("Manager", "Finance", "CFO"), start=1):
            self.conn.execute(
                "INSERT INTO workflow_steps (workflow_id, name, step_order) VALUES (?, ?, ?)",
                (self.workflow_id, name, order),
            )

    def unit(self) -> None:
        c = self.conn
        # POST /runs: the workflow's first step, then the run.
        c.execute("BEGIN IMMEDIATE")
        first = c.execute(
            "SELECT id, name, step_order FROM workflow_steps WHERE workflow_id = ? "
            "ORDER BY step_order LIMIT 1",
            (self.workflow_id,),
        ).fetchone()
        run_id = c.execute(
            "INSERT INTO workflow_runs (workflow_id, title, status, current_step_id, "
            "created_at, updated_at) VALUES (?, 'PO-1', 'in_progress', ?, ?, ?)",
            (self.workflow_id, first[0], NOW, NOW),
        ).lastrowid
        c.execute("COMMIT")
        # POST /runs/{id}/approve x 3: read the run and its history (the
        # response holds both), find the next step, move the run, record.
        for actor in ("ann", "bob", "cy"):
            c.execute("BEGIN IMMEDIATE")
            run = c.execute(RUN_SQL, (run_id,)).fetchall()[0]
            nxt = c.execute(NEXT_SQL, (self.workflow_id, run[8])).fetchone()
            moved = c.execute(
                "UPDATE workflow_runs SET status = ?, current_step_id = ?, updated_at = ? "
                "WHERE id = ? AND status = 'in_progress' AND current_step_id = ?",
                (
                    "in_progress" if nxt else "completed",
                    nxt[0] if nxt else None,
                    NOW,
                    run_id,
                    run[6],
                ),
            ).rowcount
            assert moved == 1
            c.execute(
                "INSERT INTO workflow_actions (run_id, step_id, action, actor, comment, "
                "created_at) VALUES (?, ?, 'approve', ?, '', ?)",
                (run_id, run[6], actor, NOW),
            )
            c.execute("COMMIT")
        # GET /runs/{id}: the run and its history, one snapshot.
        c.execute(RUN_SQL, (run_id,)).fetchall()


def http_unit(app: Any, workflow_id: int, service: bool) -> Callable[[], None]:
    """The five requests through chalice.test.Client.

    Both contenders read the id from the first answer (the bare app's is
    empty); the service's answers are checked once, untimed, by check_unit.
    """
    from chalice.test import Client

    http = Client(app).http
    start = json.dumps({"workflow_id": workflow_id, "title": "PO-1"})
    approvals = [json.dumps({"actor": actor}) for actor in ("ann", "bob", "cy")]
    created = 201 if service else 200

    def unit() -> None:
        response = http.post("/runs", headers=JSON, body=start)
        assert response.status_code == created, response.body
        run_id = json.loads(response.body).get("id", 1)
        for body in approvals:
            response = http.post(f"/runs/{run_id}/approve", headers=JSON, body=body)
            assert response.status_code == 200, response.body
        response = http.get(f"/runs/{run_id}")
        assert response.status_code == 200, response.body

    return unit


def check_unit(app: Any, workflow_id: int) -> None:
    """One unit of work on the service, checking what it answers."""
    from chalice.test import Client

    http = Client(app).http
    run = http.post(
        "/runs", headers=JSON, body=json.dumps({"workflow_id": workflow_id, "title": "PO-1"})
    ).json_body
    for actor in ("ann", "bob", "cy"):
        http.post(f"/runs/{run['id']}/approve", headers=JSON, body=json.dumps({"actor": actor}))
    run = http.get(f"/runs/{run['id']}").json_body
    assert run["status"] == "completed" and len(run["actions"]) == 3, run


def with_cpu(samples: list[float], measure: Callable[[], float]) -> Callable[[], float]:
    """`measure`, also appending the CPU seconds per unit it took to `samples`."""
    units = UNITS_PER_ROUND

    def measured() -> float:
        start = time.process_time()
        wall = measure()
        samples.append((time.process_time() - start) / units)
        return wall

    return measured


def count_statements(conn: sqlite3.Connection, work: Callable[[], None]) -> int:
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        work()
    finally:
        conn.set_trace_callback(None)
    return len(statements)


def main() -> None:
    tmp = workdir("throughput")
    os.environ["WORKFLOW_STORAGE"] = "sqlite"
    os.environ["WORKFLOW_SQLITE_PATH"] = os.path.join(tmp, "service.sqlite3")
    import app as service

    quiet_access_log(service)
    from chalice.test import Client

    from bench import bare_app

    created = Client(service.app).http.post(
        "/workflows",
        headers=JSON,
        body=json.dumps({"name": "po", "steps": ["Manager", "Finance", "CFO"]}),
    )
    assert created.status_code == 201, created.body
    floor = Floor(os.path.join(tmp, "floor.sqlite3"))
    check_unit(service.app, created.json_body["id"])

    cpu: dict[str, list[float]] = {"service": [], "floor": [], "bare": []}
    rounds = alternate(
        {
            "service": with_cpu(
                cpu["service"],
                per_unit(
                    http_unit(service.app, created.json_body["id"], service=True),
                    UNITS_PER_ROUND,
                ),
            ),
            "floor": with_cpu(cpu["floor"], per_unit(floor.unit, UNITS_PER_ROUND)),
            "bare": with_cpu(
                cpu["bare"], per_unit(http_unit(bare_app.app, 1, service=False), UNITS_PER_ROUND)
            ),
        },
        ROUNDS,
        progress="throughput",
    )

    service_s, floor_s, bare_s = (rounds.median(n) for n in ("service", "floor", "bare"))
    statements = {
        "service": count_statements(
            service.get_storage()._connection(),
            lambda: check_unit(service.app, created.json_body["id"]),
        ),
        "floor": count_statements(floor.conn, floor.unit),
    }
    share = rounds.ratio_of(lambda r: (r["floor"] + r["bare"]) / r["service"])
    report = Report("throughput", "1. Throughput against the floor (SQLite)")
    report.add(Figure("service", 1 / service_s, "/s", note=f"{service_s * 1e3:.2f} ms per unit"))
    report.add(
        Figure("(a) raw sqlite3 floor", 1 / floor_s, "/s", note=f"{floor_s * 1e3:.3f} ms per unit")
    )
    report.add(
        Figure(
            "(b) do-nothing Chalice app", 1 / bare_s, "/s", note=f"{bare_s * 1e3:.2f} ms per unit"
        )
    )
    report.add(Figure("limit 1/(1/a+1/b)", 1 / (floor_s + bare_s), "/s"))
    report.add(
        Figure(
            "service / limit",
            share,
            "x",
            goal=f">= {GOAL}",
            met=share >= GOAL,
            note="median of per-round ratios",
        )
    )
    # The first round of each is the warm-up, which alternate() drops.
    cpu_share = statistics.median(
        (floor_cpu + bare_cpu) / service_cpu
        for service_cpu, floor_cpu, bare_cpu in zip(
            cpu["service"][1:], cpu["floor"][1:], cpu["bare"][1:], strict=True
        )
    )
    report.add(
        Figure(
            "service / limit, in CPU time",
            cpu_share,
            "x",
            note="the same rounds timed by the process's CPU clock: what the SQLite writes "
            "wait for on a shared disk left out",
        )
    )
    report.markdown = (
        f"Unit of work: start a run of a 3-step workflow, approve it three times, read it "
        f"back (5 requests). Units per second; {ROUNDS} rounds of {UNITS_PER_ROUND} units "
        f"per contender, alternating. SQL statements per unit: service {statements['service']}, "
        f"floor {statements['floor']}."
    )
    report.finish()


if __name__ == "__main__":
    main()
