"""moto's AWS APIs (DynamoDB among them) on loopback, answering one request at a time.

    python scripts/moto_server.py [--host 127.0.0.1] [--port $MOTO_PORT or 5000]

moto does not make a condition check and its write atomic under concurrent
requests; served one by one, each request is atomic as in DynamoDB, so the
races that remain are the service's own. State lives in memory until exit.

The same server serves `make run-dynamodb` (this script), the tests (the
`MotoServer` class, in a thread, with faults injected per operation before
moto sees the request: real HTTP, real botocore retries) and the benchmarks
(this script in its own process, `--port 0` printing the port it took).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any


class Fault:
    """Answer `remaining` requests of one operation with an error; with `share`
    below 1, only that share of them, picked by a seeded random generator."""

    def __init__(
        self, status: int, body: dict[str, Any], remaining: int = 10**6, share: float = 1.0
    ) -> None:
        self.status = status
        self.body = body
        self.remaining = remaining
        self.share = share
        self.seen = 0
        self._random = random.Random(0)

    def strikes(self) -> bool:
        """Whether this request gets the error."""
        if self.remaining <= 0 or self._random.random() >= self.share:
            return False
        self.remaining -= 1
        self.seen += 1
        return True


class MotoServer:
    """moto on 127.0.0.1 (port 0: a free one), one request at a time, with faults."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        from moto.server import (  # type: ignore[attr-defined]
            DomainDispatcherApplication,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        self.faults: dict[str, Fault] = {}
        self._moto = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(host, port, self._app, threaded=False)
        self.port = self._server.server_port
        self.endpoint = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None

    def __enter__(self) -> MotoServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def inject(self, operation: str, fault: Fault) -> Fault:
        self.faults[operation] = fault
        return fault

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        operation = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        fault = self.faults.get(operation)
        if fault is None or not fault.strikes():
            answer: Iterable[bytes] = self._moto(environ, start_response)
            return answer
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response(f"{fault.status} Fault", [("Content-Type", "application/x-amz-json-1.0")])
        return [json.dumps(fault.body).encode()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("MOTO_PORT", "5000")))
    args = parser.parse_args(argv)
    try:
        server = MotoServer(args.host, args.port)
    except OSError as exc:
        print(f"moto cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    # The first line says where it listens, for callers that asked for port 0.
    print(server.port, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
