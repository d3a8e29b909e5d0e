"""SQLite connections: one per thread, WAL, the schema in place before the first use,
and write transactions taken with BEGIN IMMEDIATE.

A file already at the latest schema (PRAGMA user_version is SCHEMA_VERSION)
is used as it is, after one PRAGMA read; one that is not is brought there by
migrations.py, which only then is loaded.

The service never binds a datetime (it stores times as ISO 8601 text): the
suite drops the package's default datetime adapters, which Python 3.12
deprecates, so that one bound by mistake fails it (tests/conftest.py).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

from chalicelib.domain import errors

BUSY_TIMEOUT_MS = 10_000
# The version of the latest schema: migrations.version(), the first release's
# plus one for each change since (kept here so that opening a file at it
# loads no more than this module).
SCHEMA_VERSION = 19


class Connections:
    """The connections to one SQLite file, shared safely by threads and processes."""

    def __init__(self, path: str) -> None:
        self.path = path
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
            if is_busy(exc):
                raise errors.Unavailable("The database is busy; retry shortly") from exc
            # A directory, a path under a file, a place that cannot be written,
            # a file that is not a database: each is the operator's to fix.
            from chalicelib.storage.failures import unavailable

            raise unavailable(
                f"The SQLite database {self.path!r} (WORKFLOW_SQLITE_PATH) cannot be used: "
                f"{exc}. Set WORKFLOW_SQLITE_PATH to a file in a writable directory, "
                "or leave it unset for the default in your data directory "
                "(docs/configuration.md)"
            ) from exc

    def _open(self) -> sqlite3.Connection:
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        # isolation_level=None: we open every transaction ourselves, writers
        # with BEGIN IMMEDIATE so they queue on the busy timeout instead of
        # failing when a read lock would have to be upgraded. `timeout` is
        # SQLite's busy timeout (sqlite3_busy_timeout).
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
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
            use_wal(conn)
            migrate(conn)
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


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the file to the latest schema in one write transaction (nothing
    to write, and one PRAGMA read, for a file already there)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    from chalicelib.storage.sqlite import migrations

    migrations.upgrade(conn)


def is_busy(exc: BaseException) -> bool:
    """Whether SQLite refused because another connection holds the file, which passes."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL once. SQLite answers 'locked' at once, without the
    busy timeout, while another connection sets up the same fresh file: wait here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if time.monotonic() > deadline:
                raise errors.Unavailable("The database is busy; retry shortly") from exc
            time.sleep(0.005)
