"""The storage a process serves from, picked by the environment.

Each backend (sqlite/, dynamodb/) is one adapter of the protocols in
protocols.py: it writes atomically what the rules computed, and reads it back.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chalicelib.storage.protocols import Backend as Backend
    from chalicelib.storage.protocols import Notices as Notices
    from chalicelib.storage.protocols import Outbox as Outbox
    from chalicelib.storage.protocols import Storage as Storage

PROTOCOLS = ("Backend", "Notices", "Outbox", "Storage")


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
    """The file of a process that names none: workflows.sqlite3 in the user's
    data directory ($XDG_DATA_HOME, else ~/.local/share), in a folder of its
    own for each clone of the project (approval-workflows/<folder>-<crc32 of
    its path>), so that `make run` and `chalice local` share it, and two clones
    never do.

    Outside the project: `chalice local`'s reloader restarts the server on
    every change of a file under it, and every write would be one. Found when
    asked, not on every import: a deployed function's variables name its file
    or its table, and resolving the path is an lstat for each of its parts."""
    import zlib

    # os.path, not pathlib: pathlib is not imported by Chalice, and importing it
    # cost every cold start 1.2 ms.
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    data = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data):  # unset, or relative: the XDG specification ignores it
        data = os.path.join(os.path.expanduser("~"), ".local", "share")
    clone = f"{os.path.basename(project)}-{zlib.crc32(project.encode()):08x}"
    return os.path.join(data, "approval-workflows", clone, "workflows.sqlite3")
