"""SQLite storage of workflows: their versions, each with its steps, and
their retirement (the tables of migrations.py; the rows, rows.py). A run's
store (adapter.py) is this one too: it reads the steps a run moves to from
the steps kept here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Slice, Step, Workflow
from chalicelib.storage.sqlite import rows
from chalicelib.storage.sqlite.connections import Connections, next_id

if TYPE_CHECKING:
    from chalicelib.domain.changes import (
        Retirement,
        StepAppend,
        VersionPublish,
        WorkflowDefinition,
    )

# Versions of workflows whose steps a storage keeps in memory (a version's
# steps are only appended, so what it knows stays true); past this many it
# forgets the oldest.
KNOWN_WORKFLOWS = 1024


class WorkflowTables(Connections):
    """The workflows of one SQLite file (connections.py), at each of their versions."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        # workflow id -> its steps, as last read or written, for steps_after: a
        # decision then reads its run and nothing else, as on DynamoDB. Steps
        # are only ever appended, so every step known is right, and a step
        # after the last one known is checked for by the write that completes
        # a run (it fails, the steps are forgotten and read again on the retry).
        self._known_steps: dict[tuple[int, int], tuple[Step, ...]] = {}

    # -- workflows -------------------------------------------------------

    def create_workflow(self, definition: WorkflowDefinition) -> Workflow:
        with self._write() as conn:
            first_step = next_id(conn, "workflow_steps")
            step_ids = tuple(range(first_step, first_step + definition.steps))
            defined = definition.made(next_id(conn, "workflows"), step_ids)
            workflow = defined.workflow
            try:
                conn.execute(
                    "INSERT INTO workflows (id, name, description, created_at, "
                    "allow_self_approval, distinct_approvers, reject_requires_comment, "
                    "input_schema, max_returns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        workflow.id,
                        workflow.name,
                        workflow.description,
                        workflow.created_at,
                        *workflow.policy,
                        rows.document(workflow.input_schema),
                        workflow.max_returns,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise errors.Conflict(f"A workflow named {workflow.name!r} already exists") from exc
            rows.insert_version(conn, workflow)
            rows.record_events(conn, defined.events)
        return self._remember(workflow)

    def get_workflow(self, workflow_id: int) -> Workflow:
        return self._workflow_at(workflow_id, None)

    def get_workflow_version(self, workflow_id: int, version: int) -> Workflow:
        return self._workflow_at(workflow_id, version)

    def get_version(self, workflow_id: int, version: int) -> Workflow:
        # The workflow's flag comes in the same statement here.
        return self._workflow_at(workflow_id, version)

    def _workflow_at(self, workflow_id: int, version: Optional[int]) -> Workflow:
        """The workflow at `version` (None: its newest), with that version's
        steps (a version's steps are only appended to, so reading them second
        shows it as it was at one moment after the first statement)."""
        conn = self._connection()
        values: tuple[int, ...] = (workflow_id,)
        if version is None:
            where = f"{rows.WORKFLOW_FROM} WHERE w.id = ?"
        else:
            where = f"{rows.VERSIONS_FROM} WHERE v.workflow_id = ? AND v.version = ?"
            values = (workflow_id, version)
        row = conn.execute(f"SELECT {rows.WORKFLOW_COLUMNS} FROM {where}", values).fetchone()
        if row is None:
            if version is not None and self._exists(conn, workflow_id):
                raise errors.NotFound(f"Workflow {workflow_id} has no version {version}")
            raise errors.workflow_not_found(workflow_id)
        steps = conn.execute(
            f"SELECT {rows.STEP_COLUMNS} FROM workflow_steps WHERE workflow_id = ? "
            "AND version = ? ORDER BY step_order",
            (workflow_id, row[9]),
        ).fetchall()
        return self._remember(rows.workflow(row, tuple(rows.step(step) for step in steps)))

    @staticmethod
    def _exists(conn: sqlite3.Connection, workflow_id: int) -> bool:
        found = conn.execute("SELECT 1 FROM workflows WHERE id = ?", (workflow_id,)).fetchone()
        return found is not None

    def list_versions(
        self, workflow_id: int, after_version: Optional[int], limit: int
    ) -> Slice[Workflow]:
        conn = self._connection()
        read = conn.execute(
            f"SELECT {rows.WORKFLOW_COLUMNS} FROM {rows.VERSIONS_FROM} "
            "WHERE v.workflow_id = ? AND v.version > ? ORDER BY v.version LIMIT ?",
            (workflow_id, after_version or 0, limit + 1),
        ).fetchall()
        if not read and not self._exists(conn, workflow_id):
            raise errors.workflow_not_found(workflow_id)
        return Slice(self._with_steps(conn, read[:limit]), len(read) > limit)

    def _with_steps(
        self, conn: sqlite3.Connection, read: Sequence[tuple[object, ...]]
    ) -> tuple[Workflow, ...]:
        """The workflows of rows of WORKFLOW_COLUMNS, each with its version's
        steps, read in one statement, not one per workflow."""
        steps: dict[tuple[object, object], list[Step]] = {(row[0], row[9]): [] for row in read}
        if read:
            pairs = ", ".join("(?, ?)" for _ in steps)
            for step in conn.execute(
                f"SELECT {rows.STEP_COLUMNS}, version FROM workflow_steps "
                f"WHERE (workflow_id, version) IN (VALUES {pairs}) "
                "ORDER BY workflow_id, version, step_order",
                [value for pair in steps for value in pair],
            ):
                steps[(step[1], step[11])].append(rows.step(step))
        return tuple(rows.workflow(row, tuple(steps[(row[0], row[9])])) for row in read)

    def publish_version(self, publish: VersionPublish) -> Workflow:
        workflow_id = publish.workflow_id
        with self._write() as conn:
            first_step = next_id(conn, "workflow_steps")
            defined = publish.made(tuple(range(first_step, first_step + publish.steps)))
            workflow = defined.workflow
            # The guard: the workflow is still at the version the new one follows.
            moved = conn.execute(
                "UPDATE workflows SET version = ?, description = ?, allow_self_approval = ?, "
                "distinct_approvers = ?, reject_requires_comment = ?, input_schema = ?, "
                "max_returns = ? WHERE id = ? AND version = ?",
                (
                    workflow.version,
                    workflow.description,
                    *map(int, workflow.policy),
                    rows.document(workflow.input_schema),
                    workflow.max_returns,
                    workflow_id,
                    publish.read_version,
                ),
            ).rowcount
            if moved != 1:
                if not self._exists(conn, workflow_id):
                    raise errors.workflow_not_found(workflow_id)
                raise errors.LostWrite()  # another version was published first
            rows.insert_version(conn, workflow)
            rows.record_events(conn, defined.events)
        return self._remember(workflow)

    def set_retired(self, retirement: Retirement) -> Workflow:
        after = retirement.after
        with self._write() as conn:
            moved = conn.execute(
                "UPDATE workflows SET retired = ? WHERE id = ? AND retired = ?",
                (int(after.retired), after.id, int(retirement.before.retired)),
            ).rowcount
            if moved != 1:
                raise errors.LostWrite()
            rows.record_events(conn, retirement.events)
        return after

    def list_workflows(self, after_id: Optional[int], limit: int) -> Slice[Workflow]:
        conn = self._connection()
        read = conn.execute(
            f"SELECT {rows.WORKFLOW_COLUMNS} FROM {rows.WORKFLOW_FROM} WHERE w.id > ? "
            "ORDER BY w.id LIMIT ?",
            (after_id or 0, limit + 1),
        ).fetchall()
        # The steps of the versions read, not those of a version published since.
        return Slice(self._with_steps(conn, read[:limit]), len(read) > limit)

    def append_step(self, append: StepAppend) -> Step:
        # The write lock taken by BEGIN IMMEDIATE makes max()+1 and the insert
        # one step: no other writer can slip in between. The step goes where
        # the domain read the workflow's last, or nowhere.
        workflow_id, version = append.workflow_id, append.version
        with self._write() as conn:
            head = conn.execute(
                "SELECT version FROM workflows WHERE id = ?", (workflow_id,)
            ).fetchone()
            if head is None:
                raise errors.workflow_not_found(workflow_id)
            (max_order,) = conn.execute(
                "SELECT COALESCE(MAX(step_order), 0) FROM workflow_steps "
                "WHERE workflow_id = ? AND version = ?",
                (workflow_id, version),
            ).fetchone()
            if head[0] != version or max_order != append.after_order:
                raise errors.LostWrite()  # another append, or a publish, came first
            appended = append.made(next_id(conn, "workflow_steps"), max_order + 1)
            rows.insert_step(conn, appended.step, version)
            rows.record_events(conn, appended.events)
        step = appended.step
        known = self._known_steps.get((workflow_id, version))
        if known is not None:
            if len(known) == step.step_order - 1:
                self._known_steps[(workflow_id, version)] = (*known, step)
            else:  # another process appended meanwhile: read them again when needed
                self._known_steps.pop((workflow_id, version), None)
        return step

    def steps_after(self, workflow_id: int, after_order: int, version: int = 1) -> tuple[Step, ...]:
        """From the steps this storage knows of the workflow's version (read
        once): those known after `after_order`; a step appended after the last
        one known is checked for by the write that completes a run (record_change)."""
        steps = self._known_steps.get((workflow_id, version))
        if steps is None:
            found = (
                self._connection()
                .execute(
                    f"SELECT {rows.STEP_COLUMNS} FROM workflow_steps "
                    "WHERE workflow_id = ? AND version = ? ORDER BY step_order ASC",
                    (workflow_id, version),
                )
                .fetchall()
            )
            steps = tuple(rows.step(row) for row in found)
            if steps:
                self._remember_steps((workflow_id, version), steps)
        return tuple(step for step in steps if step.step_order > after_order)

    def _remember(self, workflow: Workflow) -> Workflow:
        """Keep the steps of `workflow`, as just read or written, for steps_after."""
        if workflow.steps:
            self._remember_steps((workflow.id, workflow.version), workflow.steps)
        return workflow

    def _remember_steps(self, version: tuple[int, int], steps: tuple[Step, ...]) -> None:
        known = self._known_steps
        if version not in known and len(known) >= KNOWN_WORKFLOWS:
            known.pop(next(iter(known)), None)
        known[version] = steps
