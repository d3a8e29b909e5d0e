"""scripts/moto_server.py in its own process on loopback, one request at a time.

Its own process, so that CPU time measured in the benchmark's process is the
service's alone.
"""

from __future__ import annotations

import os
import subprocess
import sys

from bench._common import PROJECT_DIR, offline_aws_env


class MotoProcess:
    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.endpoint = ""

    def start(self) -> MotoProcess:
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(PROJECT_DIR, "scripts", "moto_server.py"), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=PROJECT_DIR,
            env=offline_aws_env(),
        )
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def __enter__(self) -> MotoProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
