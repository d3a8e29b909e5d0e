"""Benchmark 1: throughput of the service on SQLite against the floor.

One unit of work is what an approval does end to end: start a run of a
3-step workflow, approve it three times, read it back (five requests).

  service  app.py through chalice.test.Client, SQLite storage
  floor    raw sqlite3, hand-written SQL doing the same reads and writes on the
           service's schema with the same pragmas, each read one statement and
           each decision one write transaction (a)
  bare     the same five requests against a Chalice app whose routes do
           nothing: the framework's own cost (b)

The floor writes what the service must write for its guarantees, and no
more: each run's audit chain (the genesis hash, each action's hash and the
run's head, every decision conditional on the head it read), the approvals
the approver rules are checked against, and each transition's events in the
outbox in the transition's own transaction (chalicelib/domain/events.py: a run's
start and each approval record two), and the run's row in the inbox of each
principal its step awaits (run_inbox: in at the start, out when it completes;
the steps of the unit name no approvers, so anyone's). The event bodies are the
service's CloudEvents, filled into a ready template rather than serialised,
and the hashes are SHA-256 of the canonical texts, written out by hand: the
least work that stores the same bytes.

The fastest any service on Chalice and SQLite could go is limited by (a) and
(b) together: limit = 1 / (1/a + 1/b). The service's share of it is a figure
without a goal since issue 43: no deployed function uses SQLite.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any, cast

from bench._common import Figure, Report, alternate, per_unit, quiet_access_log, scaled, workdir
from chalicelib.domain.models import StepRule
from chalicelib.storage.sqlite import adapter as sqlite
from tests.support.stored import stored_workflow

UNITS_PER_ROUND = scaled(200, 10)
ROUNDS = scaled(31, 3)
JSON = {"Content-Type": "application/json"}

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA busy_timeout = 10000",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
)

# The run with what a decision is checked against (its current step's rules,
# its workflow's policy, the approvals so far, the head of its chain) and its
# history, in one statement: one snapshot with no read transaction around it.
RUN_SQL = (
    "SELECT r.id, r.workflow_id, r.title, r.status, r.created_at, r.updated_at, "
    "r.requested_by, r.head_hash, r.approved_by, r.approvers, r.current_step_since, "
    "r.current_step_due_at, r.deadline_passed, s.id, s.name, s.step_order, s.approvers, "
    "s.required_approvals, s.deadline_seconds, s.on_deadline, s.escalate_to, "
    "w.allow_self_approval, w.distinct_approvers, w.reject_requires_comment, "
    "wa.*, ws.name AS step_name FROM workflow_runs r "
    "LEFT JOIN workflow_steps s ON s.id = r.current_step_id "
    "JOIN workflows w ON w.id = r.workflow_id "
    "LEFT JOIN workflow_actions wa ON wa.run_id = r.id "
    "LEFT JOIN workflow_steps ws ON ws.id = wa.step_id "
    "WHERE r.id = ? ORDER BY wa.id ASC"
)
NEXT_SQL = (
    "SELECT id, name, step_order, approvers, required_approvals, deadline_seconds, "
    "on_deadline, escalate_to FROM workflow_steps "
    "WHERE workflow_id = ? AND step_order > ? ORDER BY step_order ASC LIMIT 1"
)
EVENT_SQL = "INSERT INTO events (id, subject, sequence, type, body) VALUES (?, ?, ?, ?, ?)"
INBOX_IN_SQL = "INSERT INTO run_inbox (principal, since, run_id) VALUES (?, ?, ?)"
INBOX_OUT_SQL = "DELETE FROM run_inbox WHERE principal = ? AND since = ? AND run_id = ?"
NOW = "2026-01-01T00:00:00.000Z"
STEPS = ("Manager", "Finance", "CFO")
# A run's CloudEvent as the service stores it (chalicelib/domain/events.py), to fill in.
EVENT = (
    '{"specversion":"1.0","id":"%s","source":"/approval-workflows/dev","type":"%s",'
    '"subject":"runs/%d","time":"' + NOW + '","datacontenttype":"application/json",'
    '"sequence":"%020d","data":{"run_id":%d,"workflow_id":%d,"title":"PO-1","requested_by":null,'
    '"status":"%s","step":%s,"actor":%s,"head_hash":"%s","input_digest":null,"round":1%s}}'
)
STEP_JSON = (
    '{"id":%d,"workflow_id":%d,"name":"%s","step_order":%d,"approvers":[],'
    '"required_approvals":1,"deadline_seconds":null,"on_deadline":null,"escalate_to":[],'
    '"when":null}'
)
# The inbox key of a step that names no approvers (chalicelib/domain/decision.py).
ANYONE = "*"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Floor:
    """The same reads and writes as the service, with nothing around them."""

    def __init__(self, path: str) -> None:
        # The service's schema, made by the service.
        storage = sqlite.SQLiteStorage(path)
        workflow = stored_workflow(storage, "po", "", [StepRule(name) for name in STEPS], NOW)
        storage.close()
        self.conn = sqlite3.connect(path, isolation_level=None)
        for pragma in PRAGMAS:
            self.conn.execute(pragma)
        self.workflow_id = workflow.id
        self.steps = {
            step.id: STEP_JSON % (step.id, workflow.id, step.name, step.step_order)
            for step in workflow.steps
        }

    def event(
        self,
        kind: str,
        run_id: int,
        seq: int,
        status: str,
        step: Any,
        actor: str,
        head: str,
        extra: str = "",
    ) -> tuple[str, str, int, str, str]:
        event_id = str(uuid.uuid4())
        body = EVENT % (
            event_id,
            kind,
            run_id,
            seq,
            run_id,
            self.workflow_id,
            status,
            self.steps[step] if step else "null",
            f'"{actor}"' if actor else "null",
            head,
            extra,
        )
        return (event_id, f"runs/{run_id}", seq, kind, body)

    def unit(self) -> None:
        c = self.conn
        wid = self.workflow_id
        # POST /runs: the workflow's first step, then the run, its genesis hash
        # (of its id: after the insert) and its first two events (a new run's
        # stream starts at 1: AUTOINCREMENT never reuses an id).
        c.execute("BEGIN IMMEDIATE")
        first = c.execute(
            "SELECT id, name, step_order, approvers, required_approvals, deadline_seconds, "
            "on_deadline, escalate_to FROM workflow_steps WHERE workflow_id = ? "
            "ORDER BY step_order LIMIT 1",
            (wid,),
        ).fetchone()
        run_id = c.execute(
            "INSERT INTO workflow_runs (workflow_id, title, status, current_step_id, "
            "created_at, updated_at, requested_by, current_step_since, current_step_due_at) "
            "VALUES (?, 'PO-1', 'in_progress', ?, ?, ?, NULL, ?, NULL)",
            (wid, first[0], NOW, NOW, NOW),
        ).lastrowid
        assert run_id is not None
        head = sha256(
            f'{{"created_at":"{NOW}","requested_by":null,"run_id":{run_id},"title":"PO-1",'
            f'"workflow_id":{wid}}}'
        )
        c.execute("UPDATE workflow_runs SET head_hash = ? WHERE id = ?", (head, run_id))
        c.execute(INBOX_IN_SQL, (ANYONE, NOW, run_id))
        c.execute(
            EVENT_SQL,
            self.event(
                "approval.run.started",
                run_id,
                1,
                "in_progress",
                first[0],
                "",
                head,
                ',"input":{}',
            ),
        )
        c.execute(
            EVENT_SQL,
            self.event(
                "approval.step.activated",
                run_id,
                2,
                "in_progress",
                first[0],
                "",
                head,
                ',"due_at":null',
            ),
        )
        c.execute("COMMIT")
        # POST /runs/{id}/approve x 3: read the run and its history (the
        # response holds both), find the next step, extend the chain from the
        # head read (the write's condition), record the action and its events.
        approvers: list[str] = []
        for actor in ("ann", "bob", "cy"):
            c.execute("BEGIN IMMEDIATE")
            rows = c.execute(RUN_SQL, (run_id,)).fetchall()
            run = rows[0]
            step_id, step_name, order, prev = run[13], run[14], run[15], run[7]
            seq = len(rows) if rows[0][24] is not None else 0
            nxt = c.execute(NEXT_SQL, (wid, order)).fetchone()
            head = sha256(
                f'{prev}\n{{"action":"approve","actor":"{actor}","comment":"",'
                f'"created_at":"{NOW}","run_id":{run_id},"seq":{seq + 1},'
                f'"step_id":{step_id},"step_name":"{step_name}"}}'
            )
            approvers.append(actor)
            if nxt:
                sets = (
                    "current_step_id = ?, current_step_since = ?, current_step_due_at = NULL, "
                    "deadline_passed = 0"
                )
                values: tuple[Any, ...] = (nxt[0], NOW)
            else:
                sets = (
                    "status = ?, current_step_id = NULL, current_step_since = NULL, "
                    "current_step_due_at = NULL"
                )
                values = ("completed",)
            moved = c.execute(
                f"UPDATE workflow_runs SET approved_by = '[]', approvers = ?, {sets}, "
                "updated_at = ?, head_hash = ? WHERE id = ? AND status = 'in_progress' "
                "AND current_step_id = ? AND head_hash IS ?",
                (json.dumps(approvers), *values, NOW, head, run_id, step_id, prev),
            ).rowcount
            assert moved == 1
            c.execute(
                "INSERT INTO workflow_actions (run_id, step_id, action, actor, comment, "
                "created_at, hash) VALUES (?, ?, 'approve', ?, '', ?, ?)",
                (run_id, step_id, actor, NOW, head),
            )
            (last,) = c.execute(
                "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE subject = ?",
                (f"runs/{run_id}",),
            ).fetchone()
            status = "in_progress" if nxt else "completed"
            c.execute(
                EVENT_SQL,
                self.event(
                    "approval.step.approved",
                    run_id,
                    last + 1,
                    status,
                    step_id,
                    actor,
                    head,
                    ',"on_behalf_of":null',
                ),
            )
            if nxt:
                c.execute(
                    EVENT_SQL,
                    self.event(
                        "approval.step.activated",
                        run_id,
                        last + 2,
                        status,
                        nxt[0],
                        "",
                        head,
                        ',"due_at":null',
                    ),
                )
            else:
                c.execute(INBOX_OUT_SQL, (ANYONE, NOW, run_id))
                c.execute(
                    EVENT_SQL,
                    self.event(
                        "approval.run.completed", run_id, last + 2, status, None, actor, head
                    ),
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
            cast(sqlite.SQLiteStorage, service.get_storage())._connection(),
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
            note="median of per-round ratios; no goal since issue 43 (the embedded "
            "development backend, which no deployed function uses)",
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
