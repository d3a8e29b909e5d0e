"""Serve moto's AWS APIs (DynamoDB among them) on loopback, one request at a time.

    python scripts/moto_server.py [--host 127.0.0.1] [--port $MOTO_PORT or 5000]

moto does not make a condition check and its write atomic under concurrent
requests; served single-threaded, each request is atomic as in DynamoDB, so the
races that remain are the service's own. State lives in memory until exit.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def serve(host: str, port: int) -> None:
    """Serve until interrupted."""
    from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    run_simple(host, port, DomainDispatcherApplication(create_backend_app),
               threaded=False, request_handler=MotoRequestHandler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("MOTO_PORT", "5000")))
    args = parser.parse_args(argv)
    serve(args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
