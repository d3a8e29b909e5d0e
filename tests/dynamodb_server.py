"""A moto DynamoDB server on loopback that answers one request at a time.

Serving requests one by one makes each of them atomic, as real DynamoDB's
conditional writes are (moto's threaded modes are not), so the races that
remain in a test are the service's own. Faults can be injected per operation
before moto sees the request: real HTTP, real botocore retries.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server


@dataclass
class Fault:
    """Answer `remaining` requests of one operation with an error."""

    status: int
    body: dict[str, Any]
    remaining: int = 10**6
    seen: int = 0


class MotoServer:
    def __init__(self) -> None:
        self.faults: dict[str, Fault] = {}
        self._moto = DomainDispatcherApplication(create_backend_app)
        self._server = make_server("127.0.0.1", 0, self._app, threaded=False)
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "MotoServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def inject(self, operation: str, fault: Fault) -> Fault:
        self.faults[operation] = fault
        return fault

    def _app(self, environ: dict[str, Any],
             start_response: Callable[..., Any]) -> Iterable[bytes]:
        operation = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        fault = self.faults.get(operation)
        if fault is None or fault.remaining <= 0:
            return self._moto(environ, start_response)
        fault.remaining -= 1
        fault.seen += 1
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response(f"{fault.status} Fault",
                       [("Content-Type", "application/x-amz-json-1.0")])
        return [json.dumps(fault.body).encode()]
