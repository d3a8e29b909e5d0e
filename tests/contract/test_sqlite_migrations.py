"""A database file written before a schema change keeps working after it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.api.representations import shape
from chalicelib.domain import errors
from chalicelib.domain.models import APPROVE, Deadline, StepRule
from chalicelib.storage.sqlite import connections as sqlite_connections
from chalicelib.storage.sqlite import migrations as sqlite_migrations
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from tests.support import chain
from tests.support.stored import decide, stored_run

NOW = "2030-01-02T03:04:05.000Z"
# The spec's schema as files before the approver rules have it: CHECKs that
# know no cancelled status and no cancel action.
SPEC_SCHEMA = sqlite_migrations.SCHEMA.replace(",'cancelled')", ")").replace(",'cancel')", ")")


def file_of_the_first_schema(path: Path) -> None:
    """A file as the service wrote it before any migration: the spec's schema,
    user_version 0, a workflow and a run that has one approval."""
    with sqlite3.connect(path) as conn:
        conn.executescript(SPEC_SCHEMA)
        conn.execute("INSERT INTO workflows (name, created_at) VALUES ('Old', ?)", (NOW,))
        conn.execute(
            "INSERT INTO workflow_steps (workflow_id, name, step_order) VALUES (1, 'A', 1)"
        )
        conn.execute(
            "INSERT INTO workflow_steps (workflow_id, name, step_order) VALUES (1, 'B', 2)"
        )
        conn.execute(
            "INSERT INTO workflow_runs (workflow_id, title, status, current_step_id, created_at, "
            "updated_at) VALUES (1, 'Old run', 'in_progress', 2, ?, ?)",
            (NOW, NOW),
        )
        conn.execute(
            "INSERT INTO workflow_actions (run_id, step_id, action, actor, created_at) "
            "VALUES (1, 1, 'approve', 'ann', ?)",
            (NOW,),
        )
    conn.close()


def test_an_old_file_is_migrated_on_open_and_its_runs_read_as_before(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    file_of_the_first_schema(path)
    storage = SQLiteStorage(str(path), engine.UPGRADES)

    old = storage.get_run(1)
    workflow = storage.get_workflow(1)
    new = stored_run(storage, workflow, "New run", NOW, requested_by="maria")

    assert (old.title, old.requested_by, [a.actor for a in old.actions]) == (
        "Old run",
        None,
        ["ann"],
    )
    assert storage.get_run(new.id).requested_by == "maria"
    assert [run.requested_by for run in storage.list_runs(None, None, None, 10).items] == [
        "maria",
        None,
    ]
    with sqlite3.connect(path) as conn:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    assert version == len(sqlite_migrations.MIGRATIONS)
    storage.close()


def test_opening_a_migrated_file_again_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    file_of_the_first_schema(path)
    SQLiteStorage(str(path), engine.UPGRADES).get_run(1)

    again = SQLiteStorage(str(path), engine.UPGRADES)

    assert again.get_run(1).title == "Old run"
    again.close()


def file_of_schema_version_1(path: Path) -> None:
    """A file as the service wrote it with requested_by (user_version 1): a run
    requested by maria with an approval and a rejection, and one without actions."""
    file_of_the_first_schema(path)
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE workflow_runs ADD COLUMN requested_by TEXT")
        conn.execute("PRAGMA user_version = 1")
        conn.execute("UPDATE workflow_runs SET requested_by = 'maria' WHERE id = 1")
        conn.execute(
            "INSERT INTO workflow_actions (run_id, step_id, action, actor, comment, created_at) "
            "VALUES (1, 2, 'reject', 'bo', 'Zu teuer – später', ?)",
            (NOW,),
        )
        conn.execute(
            "UPDATE workflow_runs SET status = 'rejected', current_step_id = NULL WHERE id = 1"
        )
        conn.execute(
            "INSERT INTO workflow_runs (workflow_id, title, status, current_step_id, created_at, "
            "updated_at) VALUES (1, 'Untouched', 'in_progress', 1, ?, ?)",
            (NOW, NOW),
        )
    conn.close()


@pytest.mark.parametrize("older", [file_of_the_first_schema, file_of_schema_version_1])
def test_history_recorded_before_the_chain_is_chained_once_on_open(
    tmp_path: Path, older: Callable[[Path], None]
) -> None:
    path = tmp_path / "old.sqlite3"
    older(path)

    storage = SQLiteStorage(str(path), engine.UPGRADES)
    runs = [storage.get_run(run.id) for run in storage.list_runs(None, None, None, 10).items]

    assert runs
    for run in runs:
        chain.assert_chained(shape(run))
        assert audit_answer(storage, run.id)["valid"]
    storage.close()


def test_the_chain_continues_from_migrated_history(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    file_of_the_first_schema(path)
    storage = SQLiteStorage(str(path), engine.UPGRADES)

    done = decide(storage, storage.get_run(1), APPROVE, "new")

    assert [action.actor for action in done.actions] == ["ann", "new"]
    chain.assert_chained(shape(storage.get_run(1)))
    storage.close()


def test_a_migrated_file_is_not_chained_again(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    file_of_the_first_schema(path)
    SQLiteStorage(str(path), engine.UPGRADES).get_run(1)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE workflow_actions SET actor = 'mallory' WHERE id = 1")
    conn.close()

    again = SQLiteStorage(str(path), engine.UPGRADES)

    assert audit_answer(again, 1)["first_invalid_seq"] == 1
    again.close()


def audit_answer(storage: SQLiteStorage, run_id: int) -> dict[str, Any]:
    return shape(engine.audit_run(storage, run_id))


def test_the_approver_rules_reach_an_old_file_and_its_runs_can_be_cancelled(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite3"
    file_of_the_first_schema(path)
    assert "cancel" not in SPEC_SCHEMA
    storage = SQLiteStorage(str(path), engine.UPGRADES)

    old = storage.get_run(1)
    assert old.current_step_since == old.updated_at
    assert old.current_step is not None
    assert (old.current_step.approvers, old.current_step.required_approvals) == ((), 1)
    assert old.approvers == ("ann",) and old.current_step_approved_by == ()
    assert [item.run.id for item in engine.inbox(storage, "bob", frozenset(), 10).items] == [1]

    # Another connection (another process) reads the widened CHECKs as well.
    other = SQLiteStorage(str(path), engine.UPGRADES)
    cancelled = engine.cancel(other, 1, "bob", "obsolete")
    assert cancelled.status == "cancelled"
    assert storage.get_run(1) == cancelled
    chain.assert_chained(shape(cancelled))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA user_version").fetchone() == (
            len(sqlite_migrations.MIGRATIONS),
        )
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE workflow_runs SET status = 'pondering' WHERE id = 1")
    conn.close()
    storage.close()
    other.close()


def file_of_schema_version_5(path: Path) -> list[int]:
    """A file as the service wrote it before its inboxes had rows (user_version
    5): two runs waiting at a group's step whose deadline escalated it to boss,
    one at a step open to anyone, and one that ended; their ids."""
    storage = SQLiteStorage(str(path))
    grouped = engine.create_workflow(
        storage,
        "Grouped",
        "",
        [
            StepRule("Pay", ("group:finance",), deadline=Deadline(60, "escalate", ("user:boss",))),
            StepRule("Any"),
        ],
        lambda: NOW,
    )
    runs = [
        engine.start_run(storage, grouped.id, title, "rita", lambda: NOW).id
        for title in ("waits", "escalated", "moves on", "ends")
    ]
    engine.approve(storage, runs[2], "fay", groups=frozenset({"finance"}), clock=lambda: NOW)
    engine.cancel(storage, runs[3], "rita", clock=lambda: NOW)
    assert engine.sweep(storage, lambda: "2030-01-02T03:06:00.000Z") == 2  # both still at Pay
    storage.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE run_inbox")
        conn.execute(
            "CREATE INDEX workflow_runs_waiting ON workflow_runs(status, current_step_since)"
        )
        # And none of what versions 7 and 8 added.
        for table, column in (
            ("workflow_runs", "input"),
            ("workflows", "input_schema"),
            ("workflow_steps", "when_condition"),
            ("workflow_runs", "round"),
            ("workflow_runs", "on_behalf_of"),
            ("workflow_runs", "genesis_input_digest"),
            ("workflow_actions", "on_behalf_of"),
            ("workflow_actions", "round"),
            ("workflow_actions", "input_digest"),
            ("workflows", "max_returns"),
        ):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("DROP TABLE delegations")
        conn.execute("PRAGMA user_version = 5")
    conn.close()
    return runs


def test_the_runs_waiting_in_a_file_from_before_the_inbox_rows_are_in_their_inboxes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v5.sqlite3"
    waits, escalated, moved_on, _ = file_of_schema_version_5(path)
    storage = SQLiteStorage(str(path), engine.UPGRADES)

    finance = frozenset({"finance"})
    assert [item.run.id for item in engine.inbox(storage, "gus", finance, 10).items] == [
        waits,
        escalated,
        moved_on,
    ]
    assert [item.run.id for item in engine.inbox(storage, "boss", frozenset(), 10).items] == [
        waits,
        escalated,
        moved_on,
    ]
    assert [item.run.id for item in engine.inbox(storage, "zed", frozenset(), 10).items] == [
        moved_on
    ]
    with sqlite3.connect(path) as conn:
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "run_inbox" in indexes and "workflow_runs_waiting" not in indexes
    # Runs from before inputs have none, and their chains verify unchanged.
    for run_id in (waits, escalated, moved_on):
        assert storage.get_run(run_id).input == {}
        assert engine.audit_run(storage, run_id).first_invalid_seq is None
    storage.close()


def test_a_file_with_data_to_upgrade_is_refused_without_the_rules_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v5.sqlite3"
    file_of_schema_version_5(path)

    with pytest.raises(errors.Unavailable):
        SQLiteStorage(str(path)).get_run(1)

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (5,)
    conn.close()
    upgraded = SQLiteStorage(str(path), engine.UPGRADES)
    assert upgraded.get_run(1).title == "waits"
    upgraded.close()


def test_the_version_a_file_is_checked_against_counts_every_migration() -> None:
    """Opening a file reads only its version (schema.py); the migrations module
    it is checked against is loaded only for a file that needs them."""
    assert len(sqlite_migrations.MIGRATIONS) == sqlite_connections.SCHEMA_VERSION
