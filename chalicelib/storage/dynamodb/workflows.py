"""DynamoDB storage of workflows: the workflow item (its newest version), an
item per version with its steps, the step items and step counts, and the
workflow's events (keys.py has the keys and the access patterns). A run's
store (adapter.py) is this one too: it reads the steps a run moves to from
the version items, and writes events as these writes do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import EventDraft, Slice, Step, Workflow
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.ids import Counters
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.outbox import TABLE_DELIVERY
from chalicelib.storage.dynamodb.schema import ALL_INDEX

if TYPE_CHECKING:
    from chalicelib.domain.changes import (
        Retirement,
        StepAppend,
        VersionPublish,
        WorkflowDefinition,
    )

# A version's step count once it has been appended to, kept in this many items
# of their own, which every append sets: a change that completes a run checks
# the one its run id picks, so that a busy workflow's completions spread over
# all of them.
STEP_COUNT_COPIES = 16
# Versions of workflows whose steps a storage keeps in memory (a version's
# steps are only appended, so what it knows stays true); past this many it
# forgets the oldest.
KNOWN_WORKFLOWS = 1024


class WorkflowItems:
    """The workflows of the table, at each of their versions, and the events
    every write records (the adapter's runs' too)."""

    requests: Requests
    counters: Counters
    delivery: str
    # (workflow id, version) -> its steps, as last read or written.
    _known_steps: dict[tuple[int, int], tuple[Step, ...]]

    # -- workflows -------------------------------------------------------

    def create_workflow(self, definition: WorkflowDefinition) -> Workflow:
        (workflow_id,) = self.counters.take("workflow")
        step_ids = self.counters.take("step", definition.steps) if definition.steps else []
        defined = definition.made(workflow_id, tuple(step_ids))
        workflow, told = defined.workflow, defined.events
        put = self.requests.put_new
        writes = [
            put(
                {
                    **items.key(keys.name_pk(workflow.name), keys.NAME_SK),
                    "workflow_id": n(workflow_id),
                }
            ),
            put({**items.workflow_item(workflow), "event_seq": n(len(told))}),
            put(items.version_item(workflow)),
            *(put(items.step_item(step, workflow.version)) for step in workflow.steps),
            *self._event_puts(told, 0),
        ]
        if self.requests.transact(writes) and not self._applied(told, 0):
            raise errors.Conflict(f"A workflow named {workflow.name!r} already exists")
        return self._remember(workflow)

    def get_workflow(self, workflow_id: int) -> Workflow:
        # The workflow item carries its steps: the step items need not be read.
        item = self.requests.read_item(s(keys.workflow_pk(workflow_id)), s(keys.WORKFLOW_SK))
        if item is None:
            raise errors.workflow_not_found(workflow_id)
        return self._remember(items.workflow_of(item))

    def append_step(self, append: StepAppend) -> Step:
        workflow_id, version = append.workflow_id, append.version
        # The workflow item: its newest version, its steps and the sequence of
        # its stream's last event, which the write is conditional on.
        read = self.requests.read_item(s(keys.workflow_pk(workflow_id)), s(keys.WORKFLOW_SK))
        if read is None:
            raise errors.workflow_not_found(workflow_id)
        known = items.workflow_of(read)
        order = known.steps[-1].step_order + 1 if known.steps else 1
        if known.version != version or order != append.after_order + 1:
            raise errors.LostWrite()  # another append, or a publish, came first
        event_seq = items.event_seq(read)
        (step_id,) = self.counters.take("step")
        appended = append.made(step_id, order)
        step, told = appended.step, appended.events
        # The step's put takes its order only if it is free, and the workflow
        # item's update only while its stream is as read: one append at a time.
        reasons = self.requests.transact(
            [
                self.requests.put_new(items.step_item(step, version)),
                self._listed_step(step, keys.WORKFLOW_SK, event_seq, len(told)),
                self._listed_step(step, keys.version_sk(version)),
                *self._counted_step(step, version),
                *self._event_puts(told, event_seq),
            ]
        )
        # Written, or refused because an earlier attempt of it was applied.
        if not reasons or self._applied(told, event_seq):
            self._remember(known._replace(steps=(*known.steps, step)))
            return step
        raise errors.LostWrite()  # the order, or the stream, was taken meanwhile

    def _listed_step(
        self, step: Step, sk: str, event_seq: Optional[int] = None, told: int = 0
    ) -> dict[str, Any]:
        """The update that appends `step` to the steps the workflow's item `sk`
        carries (the workflow item, or its version's); on the workflow item,
        with the sequence of its stream's last event as read (`event_seq`)
        moved on by the `told` events of the append."""
        update: dict[str, Any] = {
            "TableName": self.requests.table,
            "Key": items.key(keys.workflow_pk(step.workflow_id), sk),
            "UpdateExpression": "SET #steps = list_append(#steps, :step)",
            "ConditionExpression": "attribute_exists(PK)",
            "ExpressionAttributeNames": {"#steps": "steps"},
            "ExpressionAttributeValues": {":step": {"L": [items.step_entry(step)]}},
        }
        if event_seq is not None:
            update["UpdateExpression"] += ", event_seq = :told"
            update["ConditionExpression"] = "event_seq = :read_seq"
            update["ExpressionAttributeValues"].update(
                {":told": n(event_seq + told), ":read_seq": n(event_seq)}
            )
        return {"Update": update}

    def _counted_step(self, step: Step, version: int) -> list[dict[str, Any]]:
        """The updates that raise the step count copies of the workflow's
        `version` to `step`'s order."""
        return [
            {
                "Update": {
                    "TableName": self.requests.table,
                    "Key": step_count_key(step.workflow_id, copy, version),
                    "UpdateExpression": "SET step_count = :order",
                    # A workflow's first append makes them.
                    "ConditionExpression": (
                        "attribute_not_exists(step_count) OR step_count < :order"
                    ),
                    "ExpressionAttributeValues": {":order": n(step.step_order)},
                }
            }
            for copy in range(STEP_COUNT_COPIES)
        ]

    def list_workflows(self, after_id: Optional[int], limit: int) -> Slice[Workflow]:
        found, more = self.requests.list_page(ALL_INDEX, keys.WORKFLOWS_PK, after_id, limit)
        return Slice(tuple(items.workflow_of(item) for item in found), more)

    def steps_after(self, workflow_id: int, after_order: int, version: int = 1) -> tuple[Step, ...]:
        """From the steps this storage knows of the workflow's version (read
        once): those known after `after_order`; a step appended after the last
        one known is checked for by the write that completes a run (it fails,
        and the steps are read again)."""
        steps = self._known_steps.get((workflow_id, version))
        if steps is None:
            steps = self._read_steps(workflow_id, version)
        return tuple(step for step in steps if step.step_order > after_order)

    def _read_steps(self, workflow_id: int, version: int) -> tuple[Step, ...]:
        """The steps of the workflow's version, read now and kept for steps_after.
        Unavailable where the version is not stored: "no steps" would complete
        a run past steps it never saw (a table not yet upgraded to versions)."""
        try:
            return self.get_version(workflow_id, version).steps
        except errors.NotFound:
            raise errors.Unavailable(
                f"Workflow {workflow_id}'s version {version} is not in table "
                f"{self.requests.table!r}: "
                "a table written before versions needs "
                "`python -m chalicelib.storage.dynamodb.versions_upgrade` (docs/deploy.md); "
                "nothing was recorded"
            ) from None

    def _remember(self, workflow: Workflow) -> Workflow:
        """Keep the steps of `workflow`, as just read or written, for steps_after."""
        known = self._known_steps
        version = (workflow.id, workflow.version)
        if version not in known and len(known) >= KNOWN_WORKFLOWS:
            known.pop(next(iter(known)), None)
        known[version] = workflow.steps
        return workflow

    def publish_version(self, publish: VersionPublish) -> Workflow:
        workflow_id = publish.workflow_id
        read = self.requests.read_item(s(keys.workflow_pk(workflow_id)), s(keys.WORKFLOW_SK))
        if read is None:
            raise errors.workflow_not_found(workflow_id)
        if items.version_of(read) != publish.read_version:
            raise errors.LostWrite()  # another version was published first
        event_seq = items.event_seq(read)
        step_ids = self.counters.take("step", publish.steps) if publish.steps else []
        defined = publish.made(tuple(step_ids))
        workflow, told = defined.workflow, defined.events
        # The version's item and its steps' take their keys only if free, and
        # the workflow item moves to it only from the version read: numbers
        # stay gap-free, and two publishes never both follow one version.
        head = {
            **items.version_attrs(workflow),
            "steps": items.version_item(workflow)["steps"],
            "event_seq": n(event_seq + len(told)),
        }
        reasons = self.requests.transact(
            [
                self.requests.put_new(items.version_item(workflow)),
                *(
                    self.requests.put_new(items.step_item(st, workflow.version))
                    for st in workflow.steps
                ),
                self._workflow_update(workflow_id, head, "version", read),
                *self._event_puts(told, event_seq),
            ]
        )
        if reasons and not self._applied(told, event_seq):
            raise errors.LostWrite()
        return self._remember(workflow)

    def _workflow_update(
        self, workflow_id: int, moved: Item, guard: str, read: Item
    ) -> dict[str, Any]:
        """The update of the workflow item to `moved`, only while its `guard`
        attribute and its stream (event_seq) are as `read` (the guard absent, as
        on an item written before versions, where `read` has none)."""
        names = {f"#{name}": name for name in {*moved, guard, "event_seq"}}
        values = {f":{name}": value for name, value in moved.items()}
        if guard in read:
            values[":read_guard"] = read[guard]
            guarded = f"#{guard} = :read_guard"
        else:
            guarded = f"attribute_not_exists(#{guard})"
        return {
            "Update": {
                "TableName": self.requests.table,
                "Key": items.key(keys.workflow_pk(workflow_id), keys.WORKFLOW_SK),
                "UpdateExpression": "SET " + ", ".join(f"#{name} = :{name}" for name in moved),
                "ConditionExpression": f"{guarded} AND #event_seq = :read_seq",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**values, ":read_seq": read["event_seq"]},
            }
        }

    def set_retired(self, retirement: Retirement) -> Workflow:
        workflow_id = retirement.after.id
        read = self.requests.read_item(s(keys.workflow_pk(workflow_id)), s(keys.WORKFLOW_SK))
        if read is None:
            raise errors.workflow_not_found(workflow_id)
        if items.retired_of(read) != retirement.before.retired:
            raise errors.LostWrite()
        event_seq, told = items.event_seq(read), retirement.events
        moved: Item = {
            "retired": {"BOOL": retirement.after.retired},
            "event_seq": n(event_seq + len(told)),
        }
        writes = [self._workflow_update(workflow_id, moved, "retired", read)]
        reasons = self.requests.transact([*writes, *self._event_puts(told, event_seq)])
        if reasons and not self._applied(told, event_seq):
            raise errors.LostWrite()
        return items.workflow_of(read)._replace(retired=retirement.after.retired)

    def get_workflow_version(self, workflow_id: int, version: int) -> Workflow:
        head, item = self.requests.in_parallel(
            lambda sk: self.requests.read_item(s(keys.workflow_pk(workflow_id)), s(sk)),
            [keys.WORKFLOW_SK, keys.version_sk(version)],
        )
        if head is None:
            raise errors.workflow_not_found(workflow_id)
        if item is None:
            raise errors.NotFound(f"Workflow {workflow_id} has no version {version}")
        return self._remember(items.workflow_of(item, items.retired_of(head)))

    def get_version(self, workflow_id: int, version: int) -> Workflow:
        item = self.requests.read_item(
            s(keys.workflow_pk(workflow_id)), s(keys.version_sk(version))
        )
        if item is None:
            raise errors.NotFound(f"Workflow {workflow_id} has no version {version}")
        return self._remember(items.workflow_of(item, False))

    def list_versions(
        self, workflow_id: int, after_version: Optional[int], limit: int
    ) -> Slice[Workflow]:
        head = self.requests.read_item(s(keys.workflow_pk(workflow_id)), s(keys.WORKFLOW_SK))
        if head is None:
            raise errors.workflow_not_found(workflow_id)
        first, last = (after_version or 0) + 1, items.version_of(head)
        if first > last:
            return Slice((), False)
        found, more = self.requests.query_between(
            keys.workflow_pk(workflow_id), keys.version_sk(first), keys.version_sk(last), limit
        )
        retired = items.retired_of(head)
        return Slice(tuple(items.workflow_of(item, retired) for item in found), more)

    def _applied(
        self,
        drafts: Sequence[EventDraft],
        after: int,
        run_id: Optional[int] = None,
        carrier: Optional[str] = None,
    ) -> bool:
        """Whether a refused transaction, whose events are `drafts` numbered from
        `after` + 1, was in fact applied: by an earlier attempt of itself, which
        botocore retried after a timeout, and whose own writes the retry's
        conditions then saw. Such a change is done, not lost, and must not be made
        again. Every change records an event, whose id is this attempt's alone:
        its event standing at its place says so. DynamoDB answers such a retry
        from its ClientRequestToken; not every endpoint does (moto). Where the
        change's action item `carrier` (its sort key, of run `run_id`) carries
        its events, that item says so."""
        first = drafts[0]
        if carrier is not None:
            assert run_id is not None
            item = self.requests.read_item(s(keys.run_pk(run_id)), s(carrier))
            told = items.carried_events(item, first.subject) if item is not None else []
            return bool(told) and told[0].sequence == after + 1 and told[0].id == first.id
        item = self.requests.read_item(s(keys.event_pk(first.subject)), s(keys.event_sk(after + 1)))
        return item is not None and item["event_id"]["S"] == first.id

    def _event_puts(self, drafts: Sequence[EventDraft], after: int) -> list[dict[str, Any]]:
        """The puts of `drafts` as event items numbered from `after` + 1, each only
        if its number is free, for the transaction of the transition they tell."""
        in_due_index = self.delivery == TABLE_DELIVERY
        return [
            self.requests.put_new(
                items.event_item(draft.numbered(after + number), draft.time, in_due_index)
            )
            for number, draft in enumerate(drafts, start=1)
        ]


def step_count_key(workflow_id: int, copy: int, version: int) -> Item:
    return items.key(keys.step_count_pk(workflow_id, copy, version), keys.STEP_COUNT_SK)
