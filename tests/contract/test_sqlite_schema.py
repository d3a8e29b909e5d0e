"""The SQLite file's schema: the first release's, and the changes made since,
each once (chalicelib/storage/sqlite/migrations.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chalicelib import engine, versions
from chalicelib.domain import errors
from chalicelib.domain.models import StepRule
from chalicelib.storage.sqlite import connections as sqlite_connections
from chalicelib.storage.sqlite import migrations as sqlite_migrations
from chalicelib.storage.sqlite.adapter import SQLiteStorage

NOW = "2030-01-02T03:04:05.000Z"


def stored_file(path: Path) -> None:
    """A file the service made, holding a workflow."""
    storage = SQLiteStorage(str(path))
    engine.create_workflow(storage, "Old", steps=["A"], clock=lambda: NOW)
    storage.close()


def pragma(path: Path, name: str) -> int:
    with sqlite3.connect(path) as conn:
        (value,) = conn.execute(f"PRAGMA {name}").fetchone()
    conn.close()
    return int(value)


def test_a_new_file_gets_the_first_release_s_schema_and_every_change_since(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.sqlite3"
    stored_file(path)

    assert pragma(path, "user_version") == sqlite_migrations.version()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # The CHECKs hold: a status the state machine does not know is refused.
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO workflow_runs (workflow_id, title, status, created_at, updated_at) "
                "VALUES (1, 't', 'pondering', ?, ?)",
                (NOW, NOW),
            )
    conn.close()


def test_opening_a_file_at_the_latest_schema_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "latest.sqlite3"
    stored_file(path)
    changes = pragma(path, "schema_version")

    storage = SQLiteStorage(str(path))
    assert [workflow.name for workflow in storage.list_workflows(None, 10).items] == ["Old"]
    storage.close()

    assert pragma(path, "schema_version") == changes


@pytest.mark.parametrize(
    "version", [0, 5, sqlite_migrations.BASELINE_VERSION - 1], ids=lambda v: f"version-{v}"
)
def test_a_file_from_before_the_first_release_is_refused_and_left_as_it_was(
    tmp_path: Path, version: int
) -> None:
    """Nothing upgrades a file older than the first release: no such file
    was ever released."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE workflows (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute(f"PRAGMA user_version = {version}")
    conn.close()

    with pytest.raises(errors.Unavailable):
        SQLiteStorage(str(path)).get_workflow(1)

    assert pragma(path, "user_version") == version
    with sqlite3.connect(path) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    conn.close()
    assert tables == [("workflows",)]


def test_a_file_from_a_later_release_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "later.sqlite3"
    stored_file(path)
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {sqlite_migrations.version() + 1}")
    conn.close()

    with pytest.raises(errors.Unavailable):
        SQLiteStorage(str(path)).get_workflow(1)

    assert pragma(path, "user_version") == sqlite_migrations.version() + 1


def test_the_next_change_reaches_a_file_at_the_baseline_and_a_new_file_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the next schema change goes: appended to MIGRATIONS, the version
    one more; a file made before it has it once, and keeps its data."""
    before = tmp_path / "before.sqlite3"
    stored_file(before)
    change = "ALTER TABLE workflows ADD COLUMN colour TEXT NOT NULL DEFAULT 'blue'"
    monkeypatch.setattr(sqlite_migrations, "MIGRATIONS", (*sqlite_migrations.MIGRATIONS, change))
    monkeypatch.setattr(sqlite_connections, "SCHEMA_VERSION", sqlite_migrations.version())

    after = tmp_path / "after.sqlite3"
    for opening, path in enumerate((before, after, before)):
        stored = SQLiteStorage(str(path))
        engine.create_workflow(stored, f"New {path.stem} {opening}", clock=lambda: NOW)
        stored.close()

    for path in (before, after):
        assert pragma(path, "user_version") == sqlite_migrations.BASELINE_VERSION + len(
            sqlite_migrations.MIGRATIONS
        )
        with sqlite3.connect(path) as conn:
            colours = conn.execute("SELECT DISTINCT colour FROM workflows").fetchall()
        conn.close()
        assert colours == [("blue",)]
    reopened = SQLiteStorage(str(before))
    assert reopened.list_workflows(None, 10).items[0].name == "Old"
    reopened.close()


def test_the_version_a_file_is_checked_against_is_the_latest_schema_s() -> None:
    """Opening a file reads only its version (connections.py); the module of
    the schema and its changes is loaded only for a file that needs them."""
    assert sqlite_migrations.version() == sqlite_connections.SCHEMA_VERSION
    assert sqlite_migrations.version() == sqlite_migrations.BASELINE_VERSION + len(
        sqlite_migrations.MIGRATIONS
    )


def test_a_file_from_before_versions_keeps_its_workflows_and_runs_at_version_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The versions' change (docs/versions.md) on a file written before it: its
    workflow and the run on it read as version 1, the run decides on, and the
    workflow publishes a version 2 of its own step orders (a UNIQUE made anew)."""
    path = tmp_path / "before-versions.sqlite3"
    before = sqlite_migrations.MIGRATIONS.index(sqlite_migrations.WORKFLOW_VERSIONS)
    monkeypatch.setattr(sqlite_migrations, "MIGRATIONS", sqlite_migrations.MIGRATIONS[:before])
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    sqlite_migrations.upgrade(conn)
    conn.execute(
        "INSERT INTO workflows (id, name, description, created_at, max_returns) "
        "VALUES (1, 'Old', 'Kept', ?, 2)",
        (NOW,),
    )
    conn.execute(
        "INSERT INTO workflow_steps (id, workflow_id, name, step_order, approvers) "
        "VALUES (1, 1, 'A', 1, '[\"user:ann\"]'), (2, 1, 'B', 2, '[]'), (7, 1, 'Gone', 3, '[]')"
    )
    conn.execute("DELETE FROM workflow_steps WHERE id = 7")
    conn.execute(
        "INSERT INTO workflow_runs (id, workflow_id, title, status, current_step_id, "
        "created_at, updated_at, current_step_since) VALUES (1, 1, 'R', 'in_progress', 1, ?, ?, ?)",
        (NOW, NOW, NOW),
    )
    conn.close()
    monkeypatch.undo()

    storage = SQLiteStorage(str(path))
    workflow = storage.get_workflow(1)
    assert (workflow.version, workflow.retired, workflow.version_created_at) == (1, False, NOW)
    assert (workflow.description, workflow.max_returns) == ("Kept", 2)
    assert [step.name for step in workflow.steps] == ["A", "B"]
    assert engine.get_run(storage, 1).workflow_version == 1
    moved_on = engine.approve(storage, 1, "ann", clock=lambda: NOW)
    assert moved_on.current_step is not None and moved_on.current_step.name == "B"
    published = versions.publish_version(
        storage, 1, versions.Definition("", (StepRule("C"),)), clock=lambda: NOW
    )
    assert (published.version, [step.name for step in published.steps]) == (2, ["C"])
    assert published.steps[0].id == 8  # after the ids the old table gave, 7 its last
    storage.close()

    assert pragma(path, "user_version") == sqlite_migrations.version()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # The runs and actions still reference the steps' table by its name.
        tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    conn.close()
    assert "workflow_steps_unversioned" not in tables
    assert "REFERENCES workflow_steps(id)" in tables["workflow_actions"]
