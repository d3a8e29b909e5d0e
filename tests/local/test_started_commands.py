"""The commands the local tests start stop on SIGINT, as a user's would on
Ctrl-C, however the suite itself was started."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from tests.support.processes import started, stop


def test_a_command_stops_on_sigint_where_the_suite_runs_with_sigint_ignored(
    tmp_path: Path,
) -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        command = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"]
        with started(command, {}, tmp_path) as process:
            deadline = time.monotonic() + 30
            while b"up" not in (tmp_path / "stdout").read_bytes():
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            stop(process)
    finally:
        signal.signal(signal.SIGINT, before)
    # Stopped by SIGINT itself (Python ends a KeyboardInterrupt so), not by the SIGKILL after it.
    assert process.returncode == -signal.SIGINT
