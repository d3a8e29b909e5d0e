"""A moto DynamoDB server in its own process on loopback, one request at a time.

Its own process, so that CPU time measured in the benchmark's process is the
service's alone. It serves requests one by one, as tests/dynamodb_server.py does.
"""
from __future__ import annotations

import subprocess
import sys

from bench._common import PROJECT_DIR, offline_aws_env

_SERVE = """
import sys
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

server = make_server("127.0.0.1", 0, DomainDispatcherApplication(create_backend_app),
                     threaded=False)
print(server.server_port, flush=True)
server.serve_forever()
"""


class MotoProcess:
    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.endpoint = ""

    def start(self) -> "MotoProcess":
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            cwd=PROJECT_DIR, env=offline_aws_env())
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def __enter__(self) -> "MotoProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
