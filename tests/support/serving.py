"""The app on `make run`'s local server (scripts/local_server.py), in this
process on a free loopback port, serving from a storage the test hands it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from chalice.config import Config

import app as app_module
from chalicelib.storage import Backend
from scripts import local_server
from tests.support.http import TIMEOUT


@contextmanager
def served(storage: Backend) -> Iterator[int]:
    """The port of the app serving from `storage`, for as long as the block runs."""
    app_module.use_storage(storage)
    app_class = app_module.app.__class__
    # build_server gives the app a per-thread current_request, as `make run` does;
    # the class goes back afterwards for the tests that use chalice.test.Client.
    server = local_server.build_server(app_module.app, Config.create(), "127.0.0.1", 0)
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server.server_address[1])
    finally:
        server.shutdown()
        server.server.server_close()
        thread.join(TIMEOUT)
        app_module.app.__class__ = app_class
