"""`make run`'s server: the API as `chalice local --no-autoreload` serves it, but
answering as the deployed API does where chalice's differs.

    python scripts/local_server.py [--host 127.0.0.1] [--port 8000] [--stage dev]
                                   [--autoreload] [--project-dir DIR]

`make run`, `make run-dynamodb` (scripts/run_dynamodb.sh), the fuzz tests and
`make screenshots` serve through it. docs/development.md says where it differs
from `chalice local`, and why; docs/operating.md what it refuses itself, each
request read within bounds by scripts/local_http.py.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

import chalice.local  # noqa: E402
from chalice.app import Chalice, CORSConfig  # noqa: E402
from chalice.config import Config  # noqa: E402

from chalicelib import background, log_lines  # noqa: E402
from chalicelib.api import access_log  # noqa: E402
from chalicelib.api.http import MAX_BODY_BYTES  # noqa: E402
from chalicelib.domain import events  # noqa: E402
from scripts import local_http  # noqa: E402

# What an unknown path answers: no echo of the path, which may be long.
NO_ROUTE = "No route matches this path"


# The listen backlog: connections the kernel holds until the server accepts
# them. http.server's default of 5 reset clients beyond the fifth at once.
BACKLOG = 1024
# After an answer that ends the connection, what the client still sends is
# read and dropped for up to this long (and this much), so that closing does
# not reset the connection before the client has read the answer.
LINGER_SECONDS = 2.0
LINGER_BYTES = 4 * 1024 * 1024
# What parse_request refuses, in words (its own messages echo the request).
_REFUSALS = {
    400: "The request line is malformed: send METHOD /path HTTP/1.1",
    505: "HTTP/1.0 and HTTP/1.1 are served, no other version",
}
# RFC 9110's token: what a method name is made of.
_METHOD = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _error(message: str) -> bytes:
    """The service's error shape, compact as the app writes it."""
    return json.dumps({"error": message}, separators=(",", ":")).encode()


class RequestHandler(chalice.local.ChaliceRequestHandler):
    """chalice's request handler, reading each request within bounds
    (scripts/local_http.py), with the deployed API's answer to unknown paths,
    the service's error shape and access line for what the server refuses
    itself, and no line of http.server's own."""

    # http.server writes headers and body apart: with Nagle's algorithm and delayed
    # ACKs every request would take 40 ms instead of one.
    disable_nagle_algorithm = True
    # Requests are read from the socket by local_http.Reader, not through rfile.
    rbufsize = 0
    rfile: io.BufferedIOBase

    def __init__(
        self,
        request: Any,
        client_address: Any,
        server: Any,
        app_object: Chalice,
        config: Config,
    ) -> None:
        # Set before the base class handles the request, inside its __init__.
        self._routes = chalice.local.RouteMatcher(list(app_object.routes))
        self._cors = app_object.api.cors
        super().__init__(request, client_address, server, app_object, config)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.rfile = io.BytesIO()
        self._reader = local_http.Reader(self.connection)
        self._started = time.perf_counter()
        self._body: bytes | None = None
        self._expects_continue = False

    def handle_one_request(self) -> None:
        """Read one request whole (or refuse it in the service's error shape),
        then answer it as chalice local does."""
        self.close_connection = True
        if not self._reader.next_request():
            return  # the client closed or stayed silent: no request, no line
        self._started = time.perf_counter()
        self.command, self.path, self.requestline = "", "", ""
        self.request_version = self.protocol_version
        self._expects_continue = False
        try:
            if not self._read_request():
                return  # parse_request refused it (send_error)
        except (local_http.Refused, local_http.Gone) as refused:
            # A client that is Gone may have closed only its sending side: it may still read.
            self._refuse(getattr(refused, "status", 400), str(refused))
            return
        self.connection.settimeout(local_http.REQUEST_SECONDS)
        try:
            self._generic_handle()
            self.wfile.flush()
        except OSError:
            # The client left before it read the answer (whose line is written).
            self.close_connection = True

    def _read_request(self) -> bool:
        try:
            self.raw_requestline = local_http.request_line(self._reader)
        except local_http.Refused:
            self._name_method(self._reader.first_word())
            raise
        words = self.raw_requestline.decode("latin-1").split()
        self._name_method(words[0] if words else "")
        self.path = words[1] if len(words) > 1 else ""
        # parse_request reads the header fields from rfile: the ones read here.
        self.rfile = io.BytesIO(local_http.header_fields(self._reader))
        if not self.parse_request():
            return False
        if self.request_version == "HTTP/0.9" or not _METHOD.fullmatch(self.command):
            raise local_http.Refused(400, _REFUSALS[400])
        most = MAX_BODY_BYTES
        length, chunked = local_http.body_framing(self.headers, most)
        if self._expects_continue and (length or chunked):
            try:
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            except OSError as exc:
                message = "The connection failed before the request sent its body"
                raise local_http.Gone(message) from exc
        self._reader.reading = "its body"
        if chunked:
            self._body = local_http.read_chunked(self._reader, most) or None
            del self.headers["Transfer-Encoding"]
            self.headers["Content-Length"] = str(len(self._body or b""))
        else:
            self._body = self._reader.exactly(length) if length else None
        return True

    def _name_method(self, word: str) -> None:
        """The method for the access line of a request refused before
        parse_request ran, if the request names one."""
        self.command = word if _METHOD.fullmatch(word) else ""

    def handle_expect_100(self) -> bool:
        """The interim 100 Continue is sent once the body's framing and size are known to
        be served (_read_request), not for a body that is refused unread."""
        self._expects_continue = True
        return True

    def _parse_payload(self) -> tuple[dict[str, Any], bytes | None]:
        return dict(self.headers), self._body

    def _generic_handle(self) -> None:
        try:
            self._routes.match_route(self.path)
        except ValueError:
            self._answer_no_route()
            return
        super()._generic_handle()

    # The base class binds every method to its own _generic_handle. Any other
    # method name reaches _generic_handle too (handle_one_request): the app
    # answers it 405 with Allow, as it does PUT on a route without one.
    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _generic_handle

    def _access_line(self, status: int, route: str | None) -> str:
        """Write the access line of an answer the server gives itself; its request id."""
        request_id = access_log.new_request_id()
        line = {
            "request_id": request_id,
            "method": self.command or None,
            "route": route,
            "status": status,
            "duration_ms": round((time.perf_counter() - self._started) * 1000, 2),
        }
        # Written before the answer, as the app's middleware does.
        access_log.write(line)
        return request_id

    def _answer_no_route(self) -> None:
        request_id = self._access_line(404, None)
        headers = {"Content-Type": "application/json", "X-Request-Id": request_id}
        # Deployed, API Gateway's answer carries the stage's allowed origin, so a
        # page on it can read the 404 (deploy/stack.yaml's gateway responses).
        if isinstance(self._cors, CORSConfig):
            headers["Access-Control-Allow-Origin"] = self._cors.allow_origin
        body = None if self.command == "HEAD" else _error(NO_ROUTE).decode()
        self._send_http_response(404, headers, body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What parse_request refuses, in the service's error shape."""
        self._refuse(code, _REFUSALS.get(code) or message or HTTPStatus(code).phrase)

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` {"error": message} with one access line, and end the
        connection (what is left of the request is not read as another)."""
        try:
            route: str | None = self._routes.match_route(self.path).route if self.path else None
        except ValueError:
            route = None
        request_id = self._access_line(status, route)
        self.close_connection = True
        self.request_version = self.protocol_version  # a status line, whatever was sent
        body = b"" if self.command == "HEAD" else _error(message)
        try:
            self.connection.settimeout(local_http.PAUSE_SECONDS)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Request-Id", request_id)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the client is gone: the line says what it was answered
        self._reader.drain(LINGER_SECONDS, LINGER_BYTES)

    def log_message(self, format: str, *args: Any) -> None:
        """Not written: the access line says what each request was answered."""

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        """Not written: the app, or this handler, wrote the request's access line."""


class HTTPServer(chalice.local.ThreadedHTTPServer):
    """chalice local's server (a thread per connection), with a backlog."""

    request_queue_size = BACKLOG


class DevServer(chalice.local.LocalDevServer):
    """chalice's LocalDevServer, whose start line (under --autoreload, where
    chalice's reloader starts it) is written whole beside the event lines."""

    def serve_forever(self) -> None:
        log_lines.write(f"Serving on http://{self.host}:{self.server.server_address[1]}")
        self.server.serve_forever()


def build_server(app: Chalice, config: Config, host: str, port: int) -> DevServer:
    """`app` on an HTTP server bound to host:port (0: a free port), not yet serving.
    OSError if it cannot listen there."""
    # This server starts the background work itself (or, in tests, none).
    background.leave_to_server()
    # As chalice.local.create_local_server does: the app's current_request
    # becomes per thread (the server answers each connection on its own thread).
    if not isinstance(app, chalice.local.LocalChalice):
        chalice.local.CustomLocalChalice.__bases__ = (chalice.local.LocalChalice, app.__class__)
        app.__class__ = chalice.local.CustomLocalChalice
    return DevServer(app, config, host, port, handler_cls=RequestHandler, server_cls=HTTPServer)


@contextlib.contextmanager
def serving(app: Chalice, config: Config, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """`app` served on a thread of this process until the block ends (port 0:
    a free one); yields its base URL. The app's class is given back afterwards,
    for chalice.test.Client."""
    app_class = app.__class__
    server = build_server(app, config, host, port)
    # shutdown() waits for the loop to look again: every 0.05 s, not every 0.5 s.
    thread = threading.Thread(target=server.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server.server_address[1]}"
    finally:
        server.shutdown()
        server.server.server_close()
        thread.join()
        app.__class__ = app_class


def stage_server(
    project_dir: Path, stage: str, host: str, port: int
) -> chalice.local.LocalDevServer:
    """The stage's app on a server, its configuration read as `chalice local --stage`
    reads it: loading the app puts the stage's environment_variables in os.environ."""
    from chalice.cli.factory import CLIFactory
    from chalice.deploy.validate import validate_routes

    factory = CLIFactory(str(project_dir), environ=os.environ)
    config = factory.create_config_obj(chalice_stage_name=stage)
    app = config.chalice_app
    # What chalice local checks first: routes API Gateway would refuse.
    validate_routes(app.routes)
    return build_server(app, config, host, port)


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"Port {port} on {host} is already in use; choose another with PORT=..."
    return f"Cannot listen on {host}:{port}: {exc.strerror or exc}; choose another HOST or PORT"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: a free port")
    parser.add_argument("--stage", default="dev", help="the stage in .chalice/config.json")
    parser.add_argument(
        "--autoreload",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="restart on every change of a file under the project (default: off)",
    )
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR)
    args = parser.parse_args(argv)
    # What the chalice CLI sets for every command, for apps that ask.
    os.environ["AWS_CHALICE_CLI_MODE"] = "true"
    os.environ.setdefault(events.STAGE_VARIABLE, args.stage)

    def server() -> chalice.local.LocalDevServer:
        local = stage_server(args.project_dir, args.stage, args.host, args.port)
        # After the stage's environment_variables are in os.environ.
        background.start_once()
        return local

    if args.autoreload:
        return _serve_reloading(server, args.project_dir)
    try:
        local = server()
    except OSError as exc:
        print(cannot_listen(args.host, args.port, exc), file=sys.stderr)
        return 1
    except (RuntimeError, ValueError) as exc:
        # chalice: no or unreadable .chalice/config.json; an event sink that cannot work
        print(exc, file=sys.stderr)
        return 1
    host, port = local.server.server_address[:2]
    # Through log_lines: the dispatcher thread may be writing an event line already.
    log_lines.write(f"Serving on http://{host}:{port} (stage {args.stage}); Ctrl-C stops it")
    try:
        local.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        local.server.server_close()
        background.stop()
    return 0


def _serve_reloading(server: Any, project_dir: Path) -> int:
    from chalice.cli import reloader

    if "CHALICE_WORKER" not in os.environ:
        # The reloader starts its worker as sys.argv: this script is no
        # executable of its own, so the worker runs it with this interpreter.
        sys.argv = [sys.executable, *sys.argv]
    return int(reloader.run_with_reloader(server, os.environ, str(project_dir)))


if __name__ == "__main__":
    sys.exit(main())
