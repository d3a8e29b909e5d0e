"""The storage a process serves from, picked by the environment.

Each backend (sqlite/, dynamodb/) is one adapter of the protocols in
protocols.py: it writes atomically what the rules computed, and reads it back.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chalicelib.storage.protocols import Backend as Backend
    from chalicelib.storage.protocols import Outbox as Outbox
    from chalicelib.storage.protocols import Storage as Storage

PROTOCOLS = ("Backend", "Outbox", "Storage")


def __getattr__(name: str) -> Any:
    """The protocols, for a module that names them at run time (a cold start's
    code names them only in annotations, and never loads them)."""
    if name in PROTOCOLS:
        from chalicelib.storage import protocols

        return getattr(protocols, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def create_storage() -> Backend:
    """The backend that the environment names (WORKFLOW_STORAGE, default sqlite)."""
    kind = os.environ.get("WORKFLOW_STORAGE", "sqlite").strip().lower()
    if kind == "sqlite":
        from chalicelib.storage.sqlite.adapter import SQLiteStorage

        path = os.environ.get("WORKFLOW_SQLITE_PATH") or default_sqlite_path()
        return SQLiteStorage(path)
    if kind == "dynamodb":
        from chalicelib.storage.dynamodb import client
        from chalicelib.storage.dynamodb.adapter import DynamoDBStorage

        return DynamoDBStorage(client.create_client(), client.table_name())
    from chalicelib.storage.failures import unavailable

    raise unavailable(
        f"WORKFLOW_STORAGE is {kind!r}, which is no storage: set it to 'sqlite' (the default) "
        "or 'dynamodb'"
    )


def default_sqlite_path() -> str:
    """.data/workflows.sqlite3 in the project, for a process that names no file.

    Found when asked, not on every import: a deployed function's variables
    name its file or its table, and resolving the path is an lstat for each
    of its parts."""
    # os.path, not pathlib: pathlib is not imported by Chalice, and importing it
    # cost every cold start 1.2 ms.
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    return os.path.join(project, ".data", "workflows.sqlite3")
