"""The API on a local HTTP server, as `chalice local --no-autoreload` serves it,
but answering as the deployed API does where chalice's differs.

    python scripts/local_server.py [--host 127.0.0.1] [--port 8000] [--stage dev]
                                   [--autoreload] [--project-dir DIR]

`make run`, `make run-dynamodb` (scripts/run_dynamodb.sh) and the fuzz tests
serve through it. Like `chalice local` it reads the stage from
.chalice/config.json (its environment_variables reach the app, its
lambda_timeout the Lambda context), and gives the app a request per thread.
Where it differs, on purpose:

- A path that matches no route answers 404 {"error": ...} with an X-Request-Id
  and its own access line, where chalice local answers 403 {"message":
  "Missing Authentication Token"}. The shape is that of the packaged API
  Gateway's own answers (scripts/package.py maps them to {"error": ...}); the
  status is what issue 11 asks for (API Gateway's own is still 403).
- One access line per request, the service's JSON line (chalicelib/access_log.py):
  http.server's own "127.0.0.1 - - [...] GET ..." line is not written.
- A port in use, or an address that cannot be listened on, is one line on
  standard error and exit status 1, not a traceback.
- No reloading on code changes unless --autoreload is given (chalice's
  reloader watches every file in the project, the SQLite file included).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

import chalice.local  # noqa: E402
from chalice.app import Chalice  # noqa: E402
from chalice.config import Config  # noqa: E402

from chalicelib import access_log  # noqa: E402

# What an unknown path answers: no echo of the path, which may be long.
NO_ROUTE = "No route matches this path"


class RequestHandler(chalice.local.ChaliceRequestHandler):
    """chalice's request handler, with the deployed API's answer to unknown paths
    and no access line of its own."""

    # http.server writes headers and body apart: with Nagle's algorithm and delayed
    # ACKs every request would take 40 ms instead of one.
    disable_nagle_algorithm = True

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
        super().__init__(request, client_address, server, app_object, config)

    def _generic_handle(self) -> None:
        try:
            self._routes.match_route(self.path)
        except ValueError:
            self._answer_no_route()
            return
        super()._generic_handle()

    # The base class binds every method to its own _generic_handle.
    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _generic_handle

    def _answer_no_route(self) -> None:
        started = time.perf_counter()
        # Read the body even so: the connection may carry further requests.
        self._parse_payload()
        request_id = access_log.new_request_id()
        line = {
            "request_id": request_id,
            "method": self.command,
            "route": None,
            "status": 404,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        }
        # Written before the answer, as the app's middleware does.
        access_log.write(line)
        headers = {"Content-Type": "application/json", "X-Request-Id": request_id}
        body = (
            None
            if self.command == "HEAD"
            else json.dumps({"error": NO_ROUTE}, separators=(",", ":"))
        )
        self._send_http_response(404, headers, body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Not written: the app's access line (or _answer_no_route's) says it."""


def build_server(
    app: Chalice, config: Config, host: str, port: int
) -> chalice.local.LocalDevServer:
    """`app` on an HTTP server bound to host:port (0: a free port), not yet serving.
    OSError if it cannot listen there."""
    # As chalice.local.create_local_server does: the app's current_request
    # becomes per thread (the server answers each connection on its own thread).
    if not isinstance(app, chalice.local.LocalChalice):
        chalice.local.CustomLocalChalice.__bases__ = (chalice.local.LocalChalice, app.__class__)
        app.__class__ = chalice.local.CustomLocalChalice
    return chalice.local.LocalDevServer(app, config, host, port, handler_cls=RequestHandler)


def stage_config(project_dir: Path, stage: str) -> Config:
    """The stage's configuration as `chalice local --stage` reads it; loading
    its app (config.chalice_app) puts the stage's environment_variables in os.environ."""
    from chalice.cli.factory import CLIFactory

    return CLIFactory(str(project_dir), environ=os.environ).create_config_obj(
        chalice_stage_name=stage
    )


def stage_server(
    project_dir: Path, stage: str, host: str, port: int
) -> chalice.local.LocalDevServer:
    from chalice.deploy.validate import validate_routes

    config = stage_config(project_dir, stage)
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

    def server() -> chalice.local.LocalDevServer:
        return stage_server(args.project_dir, args.stage, args.host, args.port)

    if args.autoreload:
        return _serve_reloading(server, args.project_dir)
    try:
        local = server()
    except OSError as exc:
        print(cannot_listen(args.host, args.port, exc), file=sys.stderr)
        return 1
    except RuntimeError as exc:  # chalice: no or unreadable .chalice/config.json
        print(exc, file=sys.stderr)
        return 1
    host, port = local.server.server_address[:2]
    print(f"Serving on http://{host}:{port} (stage {args.stage}); Ctrl-C stops it", flush=True)
    try:
        local.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        local.server.server_close()
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
