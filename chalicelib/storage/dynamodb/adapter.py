"""DynamoDB storage: one table (keys.py has its keys and access patterns), every
change one TransactWriteItems.

A change of a run is written conditional on the run item as it was read (its
history's length, `seq`, and its deadline's state) and on its new items' keys
being free; nothing else. The rules that computed it (chalicelib/domain/) are
not restated in any condition: the run item, its action, its events and its
inbox entries are written as the change says, or not at all. What the store
allocates it stamps here: ids (ids.py), the events' sequence numbers (from
the run item's event_seq, as read: the run's `revision`, which the rules
pass on untouched), a step's order.

The steps a run moves to come from the steps this storage knows of the
workflow, kept in memory and right forever because steps are only appended.
Only "no step after this one" can go stale, so a change that completes a run
also checks, in its transaction, one of the workflow's 16 step count copies
(the state it was computed from); if a step was appended since, nothing is
written, the steps are read again and the decision goes to the new step.

The design, its trade-offs and its costs: docs/architecture.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Action, Event, EventDraft, Run, Slice, Step
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import (
    MAX_TRANSACTION_ITEMS,
    Requests,
    key_of,
    n,
    s,
)
from chalicelib.storage.dynamodb.delegations import Delegations
from chalicelib.storage.dynamodb.idempotency import IdempotencyKeys
from chalicelib.storage.dynamodb.ids import ID_BLOCK, Counters
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.lists import Lists
from chalicelib.storage.dynamodb.notices import Notices
from chalicelib.storage.dynamodb.outbox import (
    STREAM_DELIVERY,
    TABLE_DELIVERY,
    OutboxState,
    configured_delivery,
)
from chalicelib.storage.dynamodb.schema import DUE_AT
from chalicelib.storage.dynamodb.started import StartedRuns
from chalicelib.storage.dynamodb.workflows import STEP_COUNT_COPIES, WorkflowItems, step_count_key
from chalicelib.storage.failures import unavailable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from chalicelib.domain.changes import (
        RunChange,
        RunStart,
    )


class DynamoDBStorage(
    WorkflowItems, Lists, StartedRuns, IdempotencyKeys, OutboxState, Delegations, Notices
):
    """Storage in one DynamoDB table: the service's runs (here), its workflows
    (workflows.py), its lists and inboxes (lists.py), its Idempotency-Keys
    (idempotency.py), its events' delivery (outbox.py), its contacts, notices
    and action links (notices.py) and the runs a window started (started.py)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        id_block: int = ID_BLOCK,
        shards: Optional[int] = None,
    ) -> None:
        self.requests = Requests(client, table)
        self.counters = Counters(self.requests, id_block)
        # Shards of each shared list (keys.py).
        self.shards = shards if shards is not None else keys.configured_shards()
        self.delivery = configured_delivery()
        # workflow id -> its steps, as last read: only ever appended to, so
        # every step known is right, and a step after the last known one is
        # checked for by the write that completes a run.
        self._known_steps: dict[tuple[int, int], tuple[Step, ...]] = {}

    @property
    def client(self) -> DynamoDBClient:
        return self.requests.client

    @property
    def table(self) -> str:
        return self.requests.table

    # -- runs ------------------------------------------------------------

    def create_run(self, start: RunStart) -> Run:
        (run_id,) = self.counters.take("run")
        started = start.made(run_id)
        run, told = started.run, started.events
        item: Item = {
            **items.key(keys.run_pk(run_id), keys.RUN_SK),
            "id": n(run_id),
            "workflow_id": n(run.workflow_id),
            "title": s(run.title),
            "status": s(run.status),
            "created_at": s(run.created_at),
            "updated_at": s(run.updated_at),
            "seq": n(len(started.actions)),
            "head_hash": s(run.head_hash or ""),
            "policy": items.policy_item(run.policy),
            "event_seq": n(len(told)),
            **items.current_step_state(run, self.shards)[0],
            "approvers": {"L": []},
            **keys.run_keys(run_id, run.workflow_id, run.status, self.shards),
            **items.input_attrs(run.input),
            "max_returns": n(run.max_returns),
            "workflow_version": n(run.workflow_version),
            items.INBOX_SHARDS: n(self.shards),
            **items.definition_attrs(run.definition_digest, run.definition_steps),
        }
        if run.requested_by is not None:
            item["requested_by"] = s(run.requested_by)
        action_ids = self.counters.take("action", len(started.actions)) if started.actions else []
        # The run, the skips it starts with, its events and its first step's
        # inbox entries, at once.
        written = [
            self.requests.put_new(item),
            *self._action_puts(started.actions, action_ids, 0),
            *self._event_puts(told, 0),
            *self._inbox_puts(run, started.enters, self._inbox_shards(self.shards)),
        ]
        if self.requests.transact(written) and not self._applied(told, 0):
            raise unavailable(
                f"Run id {run_id} is already taken in table {self.table!r}: a counter item "
                "was changed by hand, or the table holds runs of another service",
            )
        return started.recorded(action_ids)._replace(
            revision=items.RunRevision(len(told), self.shards)
        )

    def get_run(self, run_id: int, history: bool = True) -> Run:
        if not history:
            head = self.requests.read_item(s(keys.run_pk(run_id)), s(keys.RUN_SK))
            if head is None:
                raise errors.run_not_found(run_id)
            return items.run_of(head, ())._replace(unread_actions=int(head["seq"]["N"]))
        stored = list(self.requests.query_partition(keys.run_pk(run_id)))
        head = next((item for item in stored if item["SK"]["S"] == keys.RUN_SK), None)
        if head is None:
            raise errors.run_not_found(run_id)
        actions = tuple(
            items.action_of(item, run_id)
            for item in stored
            if item["SK"]["S"].startswith(keys.ACTION_PREFIX)
        )
        return items.run_of(head, actions)

    def last_actions(self, run_id: int, count: int) -> tuple[Action, ...]:
        found = self.requests.call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :action)",
            ExpressionAttributeValues={
                ":pk": s(keys.run_pk(run_id)),
                ":action": s(keys.ACTION_PREFIX),
            },
            ScanIndexForward=False,
            Limit=count,
        )["Items"]
        return tuple(items.action_of(item, run_id) for item in reversed(found))

    def record_change(self, change: RunChange) -> Run:
        before, after, told = change.before, change.after, change.events
        told_before = _events_told(before)
        seq = after.history_length
        action_ids = self.counters.take("action", len(change.actions)) if change.actions else []
        moved: Item = {"event_seq": n(told_before + len(told))}
        if change.actions:
            assert after.head_hash is not None
            moved.update(
                updated_at=s(after.updated_at),
                seq=n(seq),
                head_hash=s(after.head_hash),
                approvers=items.strings(after.approvers),
            )
        if after.status != before.status:
            # Only then: a run's list entries stay put while its status does.
            moved.update(
                {
                    "status": s(after.status),
                    **keys.status_keys(after.id, after.workflow_id, after.status, self.shards),
                }
            )
        if after.round != before.round:
            moved["round"] = n(after.round)
        if after.workflow_version != before.workflow_version:  # a move: the version's rules
            moved["workflow_version"] = n(after.workflow_version)
            moved["genesis_version"] = n(after.genesis_version or before.workflow_version)
            moved["policy"] = items.policy_item(after.policy)
            moved["max_returns"] = n(after.max_returns)
        if after.input != before.input:
            moved.update(items.input_attrs(after.input) or {"input": s("{}")})
        if after.genesis_input_digest != before.genesis_input_digest:
            moved["genesis_input_digest"] = s(after.genesis_input_digest or "")
        current, removed = items.current_step_state(after, self.shards)
        moved.update(current)
        # The entries of a step the run stays at keep the shards they were put
        # with; those of a step it reaches take the setting in force.
        read = _revision(before).inbox_shards
        stays = (before.current_step_id, before.current_step_since) == (
            after.current_step_id,
            after.current_step_since,
        )
        kept = read if stays else self.shards
        if kept != read:
            moved[items.INBOX_SHARDS] = n(self.shards)
        puts, deletes = self._inbox_moves(change, read, kept)
        if self.delivery == STREAM_DELIVERY:
            # The relay deletes the entries left behind, reading the run's
            # stream record: not in the transaction, where each is doubled.
            if deletes and before.current_step is not None:
                keys_left = [delete["Delete"]["Key"] for delete in deletes]
                moved.update(items.inbox_left(before.current_step.id, keys_left))
            else:
                removed.append(items.INBOX_LEFT)
            deletes = []
        # The last action item carries the change's events: its run's (carried.py).
        numbered = [d.numbered(told_before + i) for i, d in enumerate(told, start=1)]
        own = all(d.subject == keys.run_subject(before.id) for d in told)
        carrying = numbered if change.actions and told and own else []
        writes = [
            self._run_update(before, moved, removed),
            *self._action_puts(
                change.actions, action_ids, before.history_length, carrying, told[:1]
            ),
            *([] if carrying else self._event_puts(told, told_before)),
        ]
        checked = None
        if change.last_step_order is not None:
            checked = len(writes)
            writes.append(self._no_step_after(after, change.last_step_order))
        writes += puts
        room = MAX_TRANSACTION_ITEMS - len(writes)
        writes, stale = writes + deletes[:room], deletes[room:]
        # Another decision in flight on the run past the client's retries is
        # a lost race like a failed condition: the engine decides again.
        reasons = self.requests.transact(writes, raced=True)
        carrier = keys.action_sk(seq) if carrying else None
        if reasons and not self._applied(told, told_before, before.id, carrier):
            if checked is not None and reasons[checked] == "ConditionalCheckFailed":
                # The workflow has a step after this one now: know it for the retry.
                self._read_steps(after.workflow_id, after.workflow_version)
            raise errors.LostWrite()
        for delete in stale:
            self.requests.call("delete_item", **delete["Delete"])
        return change.recorded(action_ids)._replace(
            revision=items.RunRevision(told_before + len(told), kept)
        )

    def _action_puts(
        self,
        actions: Sequence[Action],
        ids: Sequence[int],
        after: int,
        carrying: Sequence[Event] = (),
        drafts: Sequence[EventDraft] = (),
    ) -> list[dict[str, Any]]:
        """The puts of `actions` with these ids, at their places in their run's
        history from `after` + 1, each only where the place is free; the last
        carrying the change's events `carrying` (the first of whose `drafts`
        says their time)."""
        puts = [
            self.requests.put_new(items.action_item(action._replace(id=action_id), seq))
            for seq, (action, action_id) in enumerate(zip(actions, ids, strict=True), after + 1)
        ]
        if carrying:
            due_at = drafts[0].time if self.delivery == TABLE_DELIVERY else None
            puts[-1]["Put"]["Item"].update(items.carrying(carrying, due_at))
        return puts

    def _run_update(self, before: Run, moved: Item, removed: list[str]) -> dict[str, Any]:
        """The update of the run item to `moved` (and without `removed`), on the
        guard: the run as it was read, its history's length, its deadline's
        state (a reminder or escalation leaves the history as it was), and the
        sequence of its last event (every change records one: the sequences
        this one gives its events are still free, as no event item's put
        checks where an action item carries them)."""
        remove = f" REMOVE {', '.join(removed)}" if removed else ""
        sets = ", ".join(f"#{name} = :{name}" for name in moved)
        return {
            "Update": {
                "TableName": self.table,
                "Key": items.key(keys.run_pk(before.id), keys.RUN_SK),
                "UpdateExpression": f"SET {sets}{remove}",
                "ConditionExpression": (
                    "#seq = :read_seq AND deadline_passed = :passed "
                    "AND #event_seq = :read_event_seq"
                ),
                "ExpressionAttributeNames": {
                    "#seq": "seq",
                    "#event_seq": "event_seq",
                    **{f"#{name}": name for name in moved},
                },
                "ExpressionAttributeValues": {
                    **{f":{name}": value for name, value in moved.items()},
                    ":read_seq": n(before.history_length),
                    ":passed": {"BOOL": before.deadline_passed},
                    ":read_event_seq": n(_events_told(before)),
                },
            }
        }

    def _inbox_moves(
        self, change: RunChange, read: Optional[int], kept: Optional[int]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The puts of the inbox entries the change enters (at the list shards
        `kept`), and the deletes of those it leaves (put at `read`; an entry
        left behind, by a crash or a delete that did not fit in the
        transaction, is one the inbox drops, as its run is no longer at its
        step)."""
        puts = self._inbox_puts(change.after, change.enters, self._inbox_shards(kept))
        # A step reached in the millisecond the last one was: the put replaces
        # the entry that would be deleted (one operation per item).
        taken = {key_of(put["Put"]["Item"]) for put in puts}
        deletes = [
            delete
            for delete in self._inbox_deletes(
                change.before, change.leaves, self._inbox_shards(read)
            )
            if key_of(delete["Delete"]["Key"]) not in taken
        ]
        return puts, deletes

    def _inbox_shards(self, recorded: Optional[int]) -> tuple[int, int]:
        """The shards of a group's inbox and of the open steps' that a run's
        entries put at `recorded` list shards are keyed by (None: before the
        run item kept them, by the setting in force and as many for both)."""
        if recorded is None:
            return self.shards, self.shards
        return recorded, keys.open_inbox_shards(recorded)

    def _inbox_puts(
        self, run: Run, principals: Sequence[str], shards: tuple[int, int]
    ) -> list[dict[str, Any]]:
        """The entries that put `run`, at its step since it reached it, into the
        inboxes of `principals` (over `shards`, as _inbox_shards gives them)."""
        step, since = run.current_step, run.current_step_since
        if step is None or since is None:
            return []
        return [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": items.inbox_item(principal, run.id, step.id, since, shards),
                }
            }
            for principal in principals
        ]

    def _inbox_deletes(
        self, run: Run, principals: Sequence[str], shards: tuple[int, int]
    ) -> list[dict[str, Any]]:
        """The deletes of `run`'s entries in the inboxes of `principals`, put
        over `shards` (none for a run that waits for no decision, which has none)."""
        since = run.current_step_since
        if run.current_step is None or since is None:
            return []
        return [
            {
                "Delete": {
                    "TableName": self.table,
                    "Key": items.key(
                        keys.inbox_pk(principal, run.id, *shards),
                        keys.inbox_sk(since, run.id),
                    ),
                }
            }
            for principal in principals
        ]

    def _no_step_after(self, run: Run, order: int) -> dict[str, Any]:
        """The check that step `order` is still its workflow's last: on one of
        the workflow's step count copies, picked by the run's id so that a busy
        workflow's completions spread over all of them."""
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": step_count_key(
                    run.workflow_id, run.id % STEP_COUNT_COPIES, run.workflow_version
                ),
                # No copy: no step was ever appended, so the steps known are all.
                "ConditionExpression": "attribute_not_exists(step_count) OR step_count = :order",
                "ExpressionAttributeValues": {":order": n(order)},
            }
        }

    # -- deadlines ---------------------------------------------------------

    def due_runs(self, now: str, limit: int) -> list[int]:
        # The sparse due index's deadline partitions (only runs whose deadline is
        # still to apply carry its key), one Query each, sent at once; the
        # soonest due first.
        def soonest(pk: str) -> list[Item]:
            return list(itertools.islice(self.requests.due(pk, now, limit), limit))

        read = self.requests.in_parallel(soonest, keys.deadline_pks(self.shards))
        due = sorted(
            (item[DUE_AT]["S"], keys.run_id_of(item["PK"]["S"])) for found in read for item in found
        )
        return [run_id for _, run_id in due[:limit]]

    # -- events ------------------------------------------------------------

    def list_events(self, subject: str, after_sequence: Optional[int], limit: int) -> Slice[Event]:
        # A run's events are in two places: event items (its start, its
        # deadlines' reminders) and its action items (its decisions'): a
        # Query of each, at once, merged by sequence.
        after = after_sequence or 0
        run_id = keys.run_of_subject(subject)

        def read(where: str) -> list[Event]:
            if where == "carried":
                assert run_id is not None
                found = self.requests.query_partition(keys.run_pk(run_id), keys.ACTION_PREFIX)
                told = (e for item in found for e in items.carried_events(item, subject))
                return [event for event in told if event.sequence > after]
            stored, _ = self.requests.query_after(
                keys.event_pk(subject), keys.event_sk(after), limit + 1
            )
            return [items.event_of(item) for item in stored]

        parts = self.requests.in_parallel(read, ["stored", "carried"] if run_id else ["stored"])
        merged = sorted((e for part in parts for e in part), key=lambda event: event.sequence)
        return Slice(tuple(merged[:limit]), len(merged) > limit)


def _revision(run: Run) -> items.RunRevision:
    """What this storage read of the run's item for its next write."""
    assert isinstance(run.revision, items.RunRevision), "a run this storage read"
    return run.revision


def _events_told(run: Run) -> int:
    """The sequence of the run's last event when this storage read it, which
    its next write numbers on from and is conditional on."""
    return _revision(run).event_seq
