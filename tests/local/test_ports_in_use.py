"""A port already in use: `make run` and `make run-dynamodb` say so in one line
before starting anything, and the server says so too if the port is taken
between that check and its own start; no traceback, nothing left running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.processes import (
    PROJECT_DIR,
    command_env,
    free_port,
    listening,
    make,
    occupied_port,
    own_lines,
)

TIMEOUT = 60


def test_make_run_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    with occupied_port() as port:
        result = make("run", command_env(tmp_path), f"PORT={port}", timeout=TIMEOUT)
    assert result.returncode != 0
    assert own_lines(result.stderr) == [
        f"Port {port} on 127.0.0.1 is already in use; choose another with PORT=..."
    ]
    assert result.stdout == ""
    assert not (tmp_path / "workflows.sqlite3").exists()


def test_the_server_says_in_one_line_when_its_port_was_taken_after_the_check(
    tmp_path: Path,
) -> None:
    with occupied_port() as port:
        result = subprocess.run(
            [sys.executable, "scripts/local_server.py", "--port", str(port)],
            cwd=PROJECT_DIR,
            env=command_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Port {port} on 127.0.0.1 is already in use; choose another with PORT=..."
    ]


def test_make_run_dynamodb_on_an_api_port_in_use_starts_nothing(tmp_path: Path) -> None:
    moto_port = free_port()
    env = command_env(tmp_path, MOTO_LOG=str(tmp_path / "moto.log"))
    with occupied_port() as port:
        result = make(
            "run-dynamodb", env, f"PORT={port}", f"MOTO_PORT={moto_port}", timeout=TIMEOUT
        )
    assert result.returncode != 0
    assert own_lines(result.stderr) == [
        f"Port {port} on 127.0.0.1 is already in use; choose another with PORT=..."
    ]
    assert "Traceback" not in result.stdout
    assert not (tmp_path / "moto.log").exists()
    assert not listening(moto_port)


def test_make_run_dynamodb_on_a_moto_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    port = free_port()
    env = command_env(tmp_path, MOTO_LOG=str(tmp_path / "moto.log"))
    with occupied_port() as moto_port:
        result = make(
            "run-dynamodb", env, f"PORT={port}", f"MOTO_PORT={moto_port}", timeout=TIMEOUT
        )
    assert result.returncode != 0
    assert own_lines(result.stderr) == [
        f"Port {moto_port} on 127.0.0.1 is already in use; choose another with MOTO_PORT=..."
    ]
    assert not (tmp_path / "moto.log").exists()
    assert not listening(port)


def test_make_run_dynamodb_with_one_port_for_both_says_so_in_one_line(tmp_path: Path) -> None:
    port = free_port()
    env = command_env(tmp_path, MOTO_LOG=str(tmp_path / "moto.log"))
    result = make("run-dynamodb", env, f"PORT={port}", f"MOTO_PORT={port}", timeout=TIMEOUT)
    assert result.returncode != 0
    assert own_lines(result.stderr) == [
        f"PORT and MOTO_PORT are both {port}; choose another with MOTO_PORT=..."
    ]
    assert not (tmp_path / "moto.log").exists()
    assert not listening(port)
