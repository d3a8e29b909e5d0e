"""SQLite only: list pages walk an index from the cursor on, in as few statements as promised."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from chalicelib.domain.lifecycle import ActionKind
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from tests.support.stored import NOW, decide, rules, stored_run, stored_workflow


class Statements:
    """The SQL statements a storage's connection runs, with their query plans."""

    def __init__(self, storage: SQLiteStorage) -> None:
        self.conn = storage._connection()
        self.run: list[str] = []
        self.conn.set_trace_callback(self.run.append)

    def plans(self) -> list[str]:
        self.conn.set_trace_callback(None)
        try:
            return [
                " / ".join(row[3] for row in self.conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
                for sql in self.run
            ]
        finally:
            self.run.clear()
            self.conn.set_trace_callback(self.run.append)


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SQLiteStorage]:
    storage = SQLiteStorage(str(tmp_path / "lists.sqlite3"))
    first = stored_workflow(storage, "First", "", rules("A", "B"), NOW)
    second = stored_workflow(storage, "Second", "", rules("X"), NOW)
    for i in range(30):
        run = stored_run(storage, (first, second)[i % 2], f"Run {i}", NOW)
        if i % 3:
            decide(storage, run, (ActionKind.APPROVE, ActionKind.REJECT)[i % 3 - 1])
    yield storage
    storage.close()


@pytest.mark.parametrize(
    "workflow_id, status, index",
    [
        (None, None, None),
        (1, None, "workflow_runs_workflow"),
        (None, "rejected", "workflow_runs_status"),
        (1, "in_progress", "workflow_runs_workflow_status"),
    ],
)
@pytest.mark.parametrize("before_id", [None, 20])
def test_a_run_page_is_one_statement_on_the_index_of_its_filter(
    sqlite: SQLiteStorage,
    workflow_id: Optional[int],
    status: Optional[str],
    index: Optional[str],
    before_id: Optional[int],
) -> None:
    statements = Statements(sqlite)

    sqlite.list_runs(workflow_id, status, before_id, 3)

    (plan,) = statements.plans()
    assert "TEMP B-TREE" not in plan, plan  # no sort: LIMIT ends the walk early
    if index:
        assert f"USING INDEX {index}" in plan, plan
    elif before_id:
        assert "USING INTEGER PRIMARY KEY (rowid<?)" in plan, plan


def test_a_workflow_page_is_two_statements_whatever_its_size(sqlite: SQLiteStorage) -> None:
    for i in range(20):
        stored_workflow(sqlite, f"More {i}", "", rules("A", "B", "C"), NOW)
    statements = Statements(sqlite)

    page = sqlite.list_workflows(1, 15)

    assert len(page.items) == 15
    plans = statements.plans()
    assert len(plans) == 2, plans
    assert "USING INTEGER PRIMARY KEY (rowid>?)" in plans[0], plans
    assert "USING INDEX sqlite_autoindex_workflow_steps_1" in plans[1], plans
    assert not any("TEMP B-TREE" in plan for plan in plans), plans
