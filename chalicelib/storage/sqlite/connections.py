"""SQLite connections: one per thread, WAL, the schema in place before the first use,
and write transactions taken with BEGIN IMMEDIATE."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

from chalicelib.domain import errors
from chalicelib.storage.failures import unavailable
from chalicelib.storage.sqlite import schema
from chalicelib.storage.upgrades import Upgrades


class Connections:
    """The connections to one SQLite file, shared safely by threads and
    processes; data from before a feature is upgraded with `upgrades` (schema.py)."""

    def __init__(self, path: str, upgrades: Optional[Upgrades] = None) -> None:
        self.path = path
        self.upgrades = upgrades
        self._local = threading.local()
        self._schema_lock = threading.Lock()
        self._schema_ready = False

    def _connection(self) -> sqlite3.Connection:
        conn: Optional[sqlite3.Connection] = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        """A connection with the schema in place; Unavailable, with the log
        saying what to fix, when the path cannot hold a database."""
        try:
            return self._open()
        except (OSError, sqlite3.Error) as exc:
            if schema.is_busy(exc):
                raise errors.Unavailable("The database is busy; retry shortly") from exc
            # A directory, a path under a file, a place that cannot be written,
            # a file that is not a database: each is the operator's to fix.
            raise unavailable(
                f"The SQLite database {self.path!r} (WORKFLOW_SQLITE_PATH) cannot be used: "
                f"{exc}. Set WORKFLOW_SQLITE_PATH to a file in a writable directory, "
                "or leave it unset for .data/workflows.sqlite3 in the project"
            ) from exc

    def _open(self) -> sqlite3.Connection:
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        # isolation_level=None: we open every transaction ourselves, writers
        # with BEGIN IMMEDIATE so they queue on the busy timeout instead of
        # failing when a read lock would have to be upgraded.
        conn = sqlite3.connect(
            self.path,
            timeout=schema.BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {schema.BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._ensure_schema(conn)
        except BaseException:
            # Not kept, so closed here: the next request opens a new one.
            conn.close()
            raise
        return conn

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        with self._schema_lock:
            if self._schema_ready:
                return
            schema.use_wal(conn)
            schema.migrate(conn, self.upgrades)
            self._schema_ready = True

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise errors.Unavailable("The database is busy; retry shortly") from exc
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def next_id(conn: sqlite3.Connection, table: str) -> int:
    """The id AUTOINCREMENT would give `table`'s next row, taken under the write
    lock so that the rules can compute with it before the row is written."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
    return (row[0] if row else 0) + 1
