"""`chalice local`, as a user runs it (.venv/bin/chalice, its reloader on, as
by default) on a copy of the project: it serves every request of a spaced
series (its reloader restarts on every new or changed file under the
project, and the database is outside it), sends the events to a webhook and
sweeps the deadlines as `make run` does, and writes one access line per
request, the service's (not also http.server's own)."""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from tests.support.http import request
from tests.support.processes import PROJECT_DIR, command_env, free_port, started, wait_listening
from tests.support.receiver import SECRET, Receiver

CHALICE = Path(sys.executable).parent / "chalice"
START_SECONDS = 60
REQUESTS = 40


def project_copy(at: Path) -> Path:
    """What `chalice local` serves, as a clone holds it. Its app.py compiled,
    as after a first start: Python writes that bytecode as the reloader starts
    watching, which restarts it once (docs/development.md)."""
    at.mkdir()
    for name in ("app.py", "chalicelib", ".chalice"):
        source = PROJECT_DIR / name
        if source.is_dir():
            shutil.copytree(source, at / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, at / name)
    py_compile.compile(str(at / "app.py"), doraise=True)
    return at


def eventually(check: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.1)
    return found


def test_chalice_local_serves_every_request_sends_events_and_sweeps_deadlines(
    tmp_path: Path,
) -> None:
    project = project_copy(tmp_path / "project")
    data = tmp_path / "data"
    port = free_port()
    with Receiver() as receiver:
        env = command_env(
            tmp_path,
            XDG_DATA_HOME=str(data),
            WORKFLOW_WEBHOOK_URL=receiver.url,
            WORKFLOW_WEBHOOK_SECRET=SECRET,
            WORKFLOW_SWEEP_SECONDS="1",
        )
        # As a user's shell has it: no database named, bytecode written.
        del env["WORKFLOW_SQLITE_PATH"]
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        command = [str(CHALICE), "--project-dir", str(project), "local", "--port", str(port)]
        (tmp_path / "out").mkdir()
        with started(command, env, tmp_path / "out") as chalice:
            wait_listening(port, chalice, START_SECONDS)
            flow = {
                "name": "Change",
                "steps": [{"name": "CAB", "deadline_seconds": 1, "on_deadline": "reject"}],
            }
            statuses = [request(port, "POST", "/workflows", flow).status]
            for number in range(1, REQUESTS):
                time.sleep(0.25)
                run = {"workflow_id": 1, "title": f"CHG-{number}", "requested_by": "rita"}
                statuses.append(request(port, "POST", "/runs", run).status)
            assert statuses == [201] * REQUESTS  # none refused, none lost to a restart

            gets = []

            def run_one() -> Any:
                gets.append("/runs/1")
                return request(port, "GET", "/runs/1").json()

            swept = eventually(lambda: run_one()["status"] == "rejected" and run_one(), 30, "")
            assert swept["actions"][-1]["actor"] == "system:deadline"  # the sweeper's
            delivered = eventually(
                lambda: [e for e in receiver.deduped() if e["subject"] == "runs/1"][3:],
                30,
                "run 1's four events at the webhook",
            )
            assert delivered[0]["type"] == "approval.run.rejected"
            assert request(port, "GET", "/no/such/path").status == 403
        out = (tmp_path / "out" / "stdout").read_text()
        err = (tmp_path / "out" / "stderr").read_text()

    assert "Restarting" not in out + err
    assert " HTTP/1.1" not in out + err  # http.server's own line of a request
    lines = [json.loads(line) for line in out.splitlines() if line.startswith('{"request_id"')]
    # One line per request: each POST, each GET, and the unknown path's 403.
    assert [line["method"] for line in lines] == ["POST"] * REQUESTS + ["GET"] * (len(gets) + 1)
    assert [line["status"] for line in lines if line["route"] is None] == [403]
    clone = f"project-{zlib.crc32(os.path.realpath(project).encode()):08x}"
    assert (data / "approval-workflows" / clone / "workflows.sqlite3").is_file()
