"""The app on `make run`'s local server (scripts/local_server.py), in this
process on a free loopback port, serving from a storage the test hands it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chalice.config import Config

import app as app_module
from chalicelib.storage import Backend
from scripts import local_server


@contextmanager
def served(storage: Backend) -> Iterator[int]:
    """The port of the app serving from `storage`, for as long as the block runs."""
    app_module.use_storage(storage)
    with local_server.serving(app_module.app, Config.create()) as base_url:
        yield int(base_url.rsplit(":", 1)[1])
