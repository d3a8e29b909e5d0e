"""Events and deadlines as a user meets them: the local server of `make run`
(scripts/local_server.py) in a process of its own, a webhook receiver on
127.0.0.1, real HTTP both ways, on each backend (a SQLite file; a moto
server that outlives the API server).

Every event type a transition here can make arrives signed, each run's
events in order, each id once after dedupe, across a receiver that answers
500 for a while and a server killed with SIGKILL and started again; a step
with a one-second reject deadline is rejected by system:deadline within a
few seconds (WORKFLOW_SWEEP_SECONDS=1).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.http import request
from tests.support.processes import command_env, free_port, started, wait_listening
from tests.support.receiver import SECRET, Receiver

START_SECONDS = 60
# Long enough for a retry after a 500 (due within 5 s) and a restart.
ARRIVAL_SECONDS = 30


def eventually(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)


@contextlib.contextmanager
def dynamodb_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A moto server with the table, in a process of its own, and the
    environment that points the API server at it."""
    moto_port = free_port()
    env = command_env(
        tmp_path,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL_DYNAMODB=f"http://127.0.0.1:{moto_port}",
        WORKFLOW_STORAGE="dynamodb",
        WORKFLOW_TABLE="events-e2e",
    )
    moto_dir = tmp_path / "moto"
    moto_dir.mkdir()
    command = [sys.executable, "scripts/moto_server.py", "--port", str(moto_port)]
    with started(command, env, moto_dir) as moto:
        wait_listening(moto_port, moto, START_SECONDS)
        subprocess.run(
            [sys.executable, "scripts/create_table.py"],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            check=True,
            capture_output=True,
        )
        yield env


@pytest.fixture(params=["sqlite", "dynamodb"])
def backend_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    if request.param == "sqlite":
        yield command_env(tmp_path)
    else:
        with dynamodb_env(tmp_path) as env:
            yield env


class Server:
    """The API server process, started and killed as the test says."""

    def __init__(self, env: dict[str, str], out: Path) -> None:
        self.env = env
        self.out = out
        self.port = free_port()
        self._stack = contextlib.ExitStack()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        out = self.out / f"server-{self.starts}"
        out.mkdir()
        command = [sys.executable, "scripts/local_server.py", "--port", str(self.port)]
        self.process = self._stack.enter_context(started(command, self.env, out))
        wait_listening(self.port, self.process, START_SECONDS)

    def kill(self) -> None:
        """SIGKILL: no cleanup, no flush, as a crash."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        answer = request(self.port, method, path, body)
        assert answer.status == status, (answer.status, answer.body)
        return answer.json()

    def close(self) -> None:
        self._stack.close()


def all_events(server: Server, run_ids: list[int]) -> dict[str, dict[str, Any]]:
    """Every event of these runs, as GET /runs/{id}/events gives them, by id."""
    found = {}
    for run_id in run_ids:
        for event in server.call("GET", f"/runs/{run_id}/events?limit=100")["items"]:
            found[event["id"]] = event
    return found


def test_every_event_arrives_signed_in_order_once_across_failures_and_a_kill(
    backend_env: dict[str, str], tmp_path: Path
) -> None:
    with Receiver() as receiver:
        env = {
            **backend_env,
            "WORKFLOW_WEBHOOK_URL": receiver.url,
            "WORKFLOW_WEBHOOK_SECRET": SECRET,
            "WORKFLOW_SWEEP_SECONDS": "1",
        }
        server = Server(env, tmp_path)
        try:
            server.start()
            receiver.failing = True  # the receiver is down at first
            remind = server.call(
                "POST",
                "/workflows",
                {
                    "name": "Remind",
                    "steps": [{"name": "A", "deadline_seconds": 1}, "B"],
                },
                201,
            )
            server.call("POST", f"/workflows/{remind['id']}/steps", {"name": "C"}, 201)
            escalate = server.call(
                "POST",
                "/workflows",
                {
                    "name": "Escalate",
                    "steps": [
                        {
                            "name": "A",
                            "deadline_seconds": 1,
                            "on_deadline": "escalate",
                            "escalate_to": ["user:boss"],
                        }
                    ],
                },
                201,
            )
            expire = server.call(
                "POST",
                "/workflows",
                {
                    "name": "Expire",
                    "steps": [{"name": "A", "deadline_seconds": 1, "on_deadline": "reject"}],
                },
                201,
            )
            reminded = server.call(
                "POST", "/runs", {"workflow_id": remind["id"], "title": "r"}, 201
            )
            escalated = server.call(
                "POST", "/runs", {"workflow_id": escalate["id"], "title": "e"}, 201
            )
            started_at = time.monotonic()
            expired = server.call("POST", "/runs", {"workflow_id": expire["id"], "title": "x"}, 201)

            # The one-second reject deadline: rejected by system:deadline within seconds.
            ended = eventually(
                lambda: (
                    (run := server.call("GET", f"/runs/{expired['id']}"))["status"] == "rejected"
                    and run
                ),
                5,
                "the deadline's rejection",
            )
            assert time.monotonic() - started_at < 5
            assert [(a["action"], a["actor"]) for a in ended["actions"]] == [
                ("reject", "system:deadline")
            ]
            eventually(
                lambda: server.call("GET", f"/runs/{escalated['id']}")["current_step_escalated_to"],
                5,
                "the escalation",
            )
            eventually(
                lambda: any(
                    e["type"] == "approval.step.reminded"
                    for e in server.call("GET", f"/runs/{reminded['id']}/events")["items"]
                ),
                5,
                "the reminder",
            )

            # A crash, then a restart on the same data; meanwhile the receiver comes back.
            server.kill()
            receiver.failing = False
            server.start()
            server.call("POST", f"/runs/{reminded['id']}/approve", {"actor": "maria"})
            server.call("POST", f"/runs/{reminded['id']}/approve", {"actor": "finn"})
            server.call("POST", f"/runs/{reminded['id']}/approve", {"actor": "cfo"})
            server.call(
                "POST", f"/runs/{escalated['id']}/reject", {"actor": "boss", "comment": "No"}
            )
            withdrawn = server.call(
                "POST",
                "/runs",
                {"workflow_id": remind["id"], "title": "w", "requested_by": "ann"},
                201,
            )
            server.call(
                "POST", f"/runs/{withdrawn['id']}/cancel", {"actor": "ann", "reason": "moot"}
            )
            run_ids = [reminded["id"], escalated["id"], expired["id"], withdrawn["id"]]
            expected = all_events(server, run_ids)
            workflow_events = 4  # three created, one step added

            eventually(
                lambda: len(receiver.deduped()) >= len(expected) + workflow_events,
                ARRIVAL_SECONDS,
                "every event at the receiver",
            )

            # Within a second of its commit, once the receiver answers.
            before = len(receiver.deduped())
            server.call("POST", "/workflows", {"name": "Late"}, 201)
            sent = time.monotonic()
            eventually(lambda: len(receiver.deduped()) > before, 2, "a new event")
            assert time.monotonic() - sent < 1.0
        finally:
            server.close()

    got = receiver.deduped()  # each signed; each id once
    receiver.assert_in_order()
    assert any(r.status == 500 for r in receiver.received)  # the outage was real
    run_events = [event for event in got if event["subject"].startswith("runs/")]
    assert {event["id"]: event for event in run_events} == expected
    assert {event["type"] for event in got} == {
        "approval.workflow.created",
        "approval.workflow.step_added",
        "approval.run.started",
        "approval.step.activated",
        "approval.step.approved",
        "approval.step.rejected",
        "approval.run.completed",
        "approval.run.rejected",
        "approval.run.cancelled",
        "approval.step.reminded",
        "approval.step.escalated",
        "approval.step.expired",
    }
    for run_id in run_ids:
        sequences = [e["sequence"] for e in got if e["subject"] == f"runs/{run_id}"]
        assert sequences == [f"{n:020d}" for n in range(1, len(sequences) + 1)]
