"""`make run` and `make run-dynamodb` as a user runs them, on free loopback ports:
unknown paths answer as the deployed API does, one access line per request,
the stage's configuration applies, Ctrl-C leaves nothing running."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from tests.support.http import request
from tests.support.processes import (
    PROJECT_DIR,
    command_env,
    free_port,
    listening,
    make,
    own_lines,
    started,
    stop,
    wait_listening,
)

# A make target's first start may install nothing, but imports chalice and boto3.
START_SECONDS = 60


def _access_lines(out_dir: Path) -> list[dict[str, object]]:
    """The access lines on stdout (beside them, WORKFLOW_EVENTS=log's event lines)."""
    lines = [
        json.loads(line)
        for line in (out_dir / "stdout").read_text().splitlines()
        if line.startswith("{")
    ]
    return [line for line in lines if "request_id" in line]


def _serves_like_the_deployed_api(port: int) -> list[str]:
    """Unknown paths answer 404 {"error"} with a request id; the routes as the
    app does. The request ids of the answers, in order."""
    unknown = request(port, "GET", "/no/such/route")
    assert unknown.status == 404
    assert set(unknown.json()) == {"error"}
    created = request(port, "POST", "/workflows", {"name": "Served", "steps": ["a"]})
    assert created.status == 201, created.body
    refused = request(port, "POST", "/workflows/1/nope", {"name": "x"})
    assert refused.status == 404
    return [answer.headers["X-Request-Id"] for answer in (unknown, created, refused)]


def _one_line_per_request(out_dir: Path, request_ids: list[str]) -> None:
    """stdout: the access lines, one per request; stderr: no http.server lines."""
    lines = _access_lines(out_dir)
    assert [line["request_id"] for line in lines] == request_ids
    assert [line["status"] for line in lines] == [404, 201, 404]
    stderr = (out_dir / "stderr").read_text()
    assert "HTTP/1.1" not in stderr and "Traceback" not in stderr, stderr


def test_make_run_answers_unknown_paths_404_and_logs_one_line_per_request(
    tmp_path: Path,
) -> None:
    port = free_port()
    with started(
        ["make", "--no-print-directory", "run", f"PORT={port}"], command_env(tmp_path), tmp_path
    ) as server:
        wait_listening(port, server, START_SECONDS)
        request_ids = _serves_like_the_deployed_api(port)
        stop(server)
    _one_line_per_request(tmp_path, request_ids)
    assert (tmp_path / "workflows.sqlite3").exists()


def test_make_run_reloads_with_the_documented_flag(tmp_path: Path) -> None:
    port = free_port()
    command = ["make", "--no-print-directory", "run", f"PORT={port}"]
    env = command_env(tmp_path, CHALICE_LOCAL_FLAGS="--autoreload")
    with started(command, env, tmp_path) as server:
        wait_listening(port, server, START_SECONDS)
        assert request(port, "GET", "/nope").status == 404
        stop(server)
    assert not listening(port)


def test_the_server_reads_the_stage_from_the_chalice_config(tmp_path: Path) -> None:
    """As `chalice local --stage` does: the stage's environment_variables reach the app."""
    project = tmp_path / "project"
    (project / ".chalice").mkdir(parents=True)
    for name in ("app.py", "chalicelib"):
        os.symlink(PROJECT_DIR / name, project / name)
    config = json.loads((PROJECT_DIR / ".chalice" / "config.json").read_text())
    config["stages"]["trial"] = {
        "environment_variables": {"WORKFLOW_CORS_ORIGIN": "https://trial.example"}
    }
    (project / ".chalice" / "config.json").write_text(json.dumps(config))
    port = free_port()
    command = [
        sys.executable,
        "scripts/local_server.py",
        "--port",
        str(port),
        "--stage",
        "trial",
        "--project-dir",
        str(project),
    ]
    with started(command, command_env(tmp_path), tmp_path) as server:
        wait_listening(port, server, START_SECONDS)
        answer = request(port, "GET", "/workflows")
        assert answer.headers["Access-Control-Allow-Origin"] == "https://trial.example"


# -- make run-dynamodb -------------------------------------------------------------


def test_make_run_dynamodb_installs_what_serving_needs_and_moto_only(tmp_path: Path) -> None:
    """On a fresh clone: requirements-serve.txt and requirements-moto.txt, not
    the test toolchain of requirements-dev.txt (make's own plan, nothing run)."""
    result = make("-n", command_env(tmp_path), "run-dynamodb", f"VENV={tmp_path / 'venv'}")
    assert result.returncode == 0, result.stderr
    installs = [line.split(" -r ")[1] for line in result.stdout.splitlines() if " -r " in line]
    assert installs == ["requirements-serve.txt", "requirements-moto.txt"]
    moto = (PROJECT_DIR / "requirements-moto.txt").read_text().splitlines()
    pins = [line for line in moto if line and not line.startswith(("#", "-r"))]
    assert all("==" in pin for pin in pins) and "moto==" in " ".join(pins)


def test_make_run_dynamodb_answers_like_make_run_and_stops_moto_with_it(
    tmp_path: Path,
) -> None:
    port, moto_port = free_port(), free_port()
    command = [
        "make",
        "--no-print-directory",
        "run-dynamodb",
        f"PORT={port}",
        f"MOTO_PORT={moto_port}",
    ]
    env = command_env(tmp_path, MOTO_LOG=str(tmp_path / "moto.log"))
    with started(command, env, tmp_path) as server:
        wait_listening(port, server, START_SECONDS)
        assert listening(moto_port)
        request_ids = _serves_like_the_deployed_api(port)
        stop(server)
    _one_line_per_request(tmp_path, request_ids)
    assert not listening(moto_port)
    assert not (tmp_path / "workflows.sqlite3").exists()  # stored in moto, not SQLite


def _processes_below(pid: int, name: str) -> list[int]:
    """The processes below `pid` whose command line holds `name` (Linux's /proc)."""
    found: list[int] = []
    try:
        children = [
            int(child)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()
        ]
    except FileNotFoundError:  # it ended
        return found
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        found += [child] if name.encode() in command else []
        found += _processes_below(child, name)
    return found


# run_dynamodb.sh does not start again a server killed this soon after its start.
RESTART_SECONDS = 5


def test_make_run_dynamodb_keeps_what_it_stored_when_the_api_server_is_killed(
    tmp_path: Path,
) -> None:
    """kill -9 of the API server (a crash, the OOM killer): it is started again
    on the same moto, and everything stored is there; Ctrl-C then stops both."""
    port, moto_port = free_port(), free_port()
    command = ["make", "--no-print-directory", "run-dynamodb", f"PORT={port}"]
    command.append(f"MOTO_PORT={moto_port}")
    env = command_env(tmp_path, MOTO_LOG=str(tmp_path / "moto.log"))
    with started(command, env, tmp_path) as server:
        wait_listening(port, server, START_SECONDS)
        began = time.monotonic()
        created = request(port, "POST", "/workflows", {"name": "Kept", "steps": ["a", "b"]})
        assert created.status == 201, created.body
        run_id = request(port, "POST", "/runs", {"workflow_id": 1, "title": "t"}).json()["id"]
        approved = request(port, "POST", f"/runs/{run_id}/approve", {"actor": "ann"})
        assert approved.status == 200, approved.body
        (killed,) = _processes_below(server.pid, "local_server.py")
        time.sleep(max(0.0, RESTART_SECONDS + 0.5 - (time.monotonic() - began)))
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + START_SECONDS
        while _processes_below(server.pid, "local_server.py") in ([], [killed]):
            assert server.poll() is None, "make run-dynamodb ended with its API server"
            assert time.monotonic() < deadline, "the API server was not started again"
            time.sleep(0.1)
        wait_listening(port, server, START_SECONDS)
        assert request(port, "GET", f"/runs/{run_id}").json() == approved.json()
        assert request(port, "GET", "/workflows").json()["items"] == [created.json()]
        stop(server)
    assert not listening(moto_port)
    assert own_lines((tmp_path / "stderr").read_text()) == [
        "The API server was killed (signal 9); starting it again on the same moto: "
        "nothing stored is lost"
    ]
