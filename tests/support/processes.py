"""Running the project's commands as a user does, for tests/local/: make targets
and scripts as subprocesses, servers on loopback ports that are free.

Every wait is bounded, and every process a test starts is stopped with its
children (it leads a process group of its own) however the test ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Optional

PROJECT_DIR = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"

# What the machine running the tests could leak into a command: its AWS
# configuration, the service's settings, and the make that runs `make test`.
_LEAKY_PREFIXES = ("AWS_", "WORKFLOW_", "BOTO_")
_LEAKY = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PORT", "HOST", "MOTO_PORT")


def ctrl_c_stops() -> None:
    """In a command's process, before it starts (Popen's preexec_fn): SIGINT
    stops it as Ctrl-C does in a terminal, even where whoever starts it runs
    with SIGINT ignored (a job started with `&` or nohup inherits that, and the
    command would too)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def command_env(tmp_path: Path, **variables: str) -> dict[str, str]:
    """The environment of a command: the machine's, without AWS configuration,
    service settings or make's own variables, plus `variables`. AWS files point
    nowhere and instance metadata is off, so no credentials come from anywhere."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_LEAKY_PREFIXES) and name not in _LEAKY
    }
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        WORKFLOW_SQLITE_PATH=str(tmp_path / "workflows.sqlite3"),
    )
    env.update(variables)
    return env


def make(
    target: str, env: Mapping[str, str], *assignments: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`make TARGET NAME=value ...` in the project, to its end (at most `timeout` s)."""
    return subprocess.run(
        ["make", "--no-print-directory", target, *assignments],
        cwd=PROJECT_DIR,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def own_lines(stream: str) -> list[str]:
    """The lines of `stream` that the project's commands wrote: without make's
    own "make: *** [...] Error 1" trailer, which every failing recipe gets."""
    return [line for line in stream.splitlines() if line.strip() and not line.startswith("make")]


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick for port 0)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def occupied_port() -> Iterator[int]:
    """A port that something listens on until the block ends."""
    with socket.socket() as listener:
        listener.bind((HOST, 0))
        listener.listen()
        yield int(listener.getsockname()[1])


def listening(port: int, host: str = HOST) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def started(
    command: list[str], env: Mapping[str, str], out_dir: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` running in the project, its output in out_dir/stdout and
    out_dir/stderr; stopped with all its children when the block ends."""
    with open(out_dir / "stdout", "wb") as stdout, open(out_dir / "stderr", "wb") as stderr:
        process = subprocess.Popen(
            command,
            cwd=PROJECT_DIR,
            env=dict(env),
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=ctrl_c_stops,
        )
        try:
            yield process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGINT to the process group (as Ctrl-C would), then SIGKILL if it lingers."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout)


def wait_listening(
    port: int, process: subprocess.Popen[bytes], timeout: float = 60, host: str = HOST
) -> None:
    """Return once something listens on `port`; fail if `process` ends first
    or `timeout` s pass."""
    deadline = time.monotonic() + timeout
    while not listening(port, host):
        code: Optional[int] = process.poll()
        assert code is None, f"the server exited with {code} before listening on {port}"
        assert time.monotonic() < deadline, f"nothing listens on {port} after {timeout} s"
        time.sleep(0.1)
