"""DynamoDB storage: one table, every mutation one conditional write.

Key schema (PK, SK are strings):

    item         PK                 SK                    holds
    workflow     WF#<id>            #WORKFLOW             name, description, created_at,
                                                          steps (a copy of its step items)
    step         WF#<workflow id>   STEP#<order, 10 digits>  id, name, step_order
    step count   WF#<id>#STEPS#<n>  #STEPS                step_count (n = 0..15, 16 copies)
    name guard   WFNAME#<name>      #WFNAME               workflow_id (makes names unique)
    run          RUN#<id>           #RUN                  status, current step, seq,
                                                          head_hash, list keys
    action       RUN#<run id>       ACT#<seq, 10 digits>  the decision, step name, hash
    id counter   COUNTER#<kind>     #ID                   next id block of that kind
    event        EVT#<subject>      <sequence, 10 digits> the CloudEvent as delivered
                 (EVT#runs/<id>, EVT#workflows/<id>)      (chalicelib/domain/events.py)
    idempotency  IDEM#<key>         #IDEM                 request fingerprint, claim,
                                                          lease, response; expires_at (TTL)
    inbox entry  INBOX#user:<id>    <since>#<run id, 16 digits>  run_id, step_id: the run
                 INBOX#<shard>#group:<name>, INBOX#<shard>#*  waits for this principal
                 (* : steps open to anyone)

A workflow item carries its steps, so GET /workflows/{id} is one Query and a
page of workflows needs no read per workflow; the step items make (workflow,
step_order) unique. Appending a step writes both, and sets the step count
copies, in one transaction. A run and its history share a partition, so GET
/runs/{id} is one Query; an action's key makes one action per position in a
run's history.

A decision is one Query (the run and its history, which the answer shows) and
one transaction. The step it moves to comes from the steps the storage knows
of the workflow: read with the workflow (starting a run reads it), kept in
memory, right forever because steps are only appended. Only "no step after
this one" can go stale, so a decision that completes a run also checks, in
its transaction, that a step count copy still says so (a ConditionCheck); if
a step was appended since, nothing is written, the steps are read again and
the decision goes to the new step. Appends keep the copies: a workflow never
appended to has none, and its steps are those it was created with. The
copies are 16 so that a busy workflow's completions spread over 16
partitions. Workflows appended to before the copies existed get them from
scripts/migrate_list_indexes.py.

The audit chain (chalicelib/domain/audit.py): a decision's transaction puts the
action with its hash and sets the run's head_hash to it, computed from the run
as read; its condition on the run's seq lets one decision only extend a given
head, so the chain cannot fork. The run item carrying head_hash costs nothing
(the same update) and lets lists show it without reading actions. History
recorded before the chain gets its hashes from scripts/backfill_audit_chain.py,
once (see `unchained_run_ids`), not on read: were a missing hash computed on
read, removing one would launder any edit.

Lists: global secondary indexes sorted by `id` (a number). Workflows are in
`all` (partition WORKFLOWS, whole items: a page is one Query; workflows are
written rarely). Runs are in four key-only indexes, each list sharded over
WORKFLOW_LIST_SHARDS partitions (dynamodb_lists.py has the keys and the
merge): a page is one Query per shard and one BatchGetItem of its runs, read
consistently. A decision that leaves a run's status as it was writes no index;
one that ends a run moves its two status entries. Index reads are eventually
consistent: a run just started may show up in a list a moment later, and one
whose status changed leaves its old status's list at once (its row is read
current and left out) but enters the new one's a moment later. Tables from
before the sharded lists move to them with scripts/migrate_list_indexes.py.

The inbox: a run at a step has an entry in the inbox of each principal that
may decide it (its approvers, those a deadline escalated it to, or ANYONE's
for a step that names none), written and deleted in the transaction that
moves the run. A user's inbox is one partition; a group's and ANYONE's, which
all traffic can reach, are spread over the same WORKFLOW_LIST_SHARDS shards as
the run lists (dynamodb_lists.py), so an inbox page is one Query per partition
of each principal the caller is, sent at once, and one BatchGetItem of its
runs. The due index spreads runs whose deadline is still to apply over
DEADLINE#<shard>, four times as many shards (the sweeper reads every one, and
the unsharded DEADLINE of older tables). Event items are in it (DELIVERY) only
where this service sends them from the table (`make run-dynamodb`); deployed,
the stream carries them (WORKFLOW_EVENT_DELIVERY=stream) and they stay out.

The trade-offs, chosen knowingly:

- List reads for write headroom. With 16 shards no list partition takes more
  than 1/16 of its list's writes, so a list takes 16,000 writes per second
  before any partition of it reaches DynamoDB's 1,000: 10,000 decisions per
  second of runs of two or more steps (bench/partition_load.py replays it);
  more shards lift it further. A page costs one Query per shard (sent at once,
  keys only, half a read unit each) and a read unit per run shown, where one
  Query of whole items did.
- Write cost. Starting a run writes four index entries of its keys; a
  decision in the middle of a run none; one that ends it four (two moves).
  Appending a step rewrites the whole workflow item, in the table and in `all`,
  and the 16 copies of its step count.
- Item size. A workflow item, its steps included, must stay under 400 KB:
  about 1,700 steps with 200-character ASCII names (460 with 4-byte
  characters, thousands with short names). Past that, appending answers 409;
  SQLite has no such limit.
- Query size. A Query reads at most 1 MB, so a page of big workflows may hold
  fewer than `limit` items; next_cursor is still set exactly when more follow.

Events (the outbox): each transition's TransactWriteItems puts its event
items beside its own changes, each conditional on its key being free, so a
transition and its events are written together or not at all, and two
writers can never number two events alike. The run item (and a workflow's
last item: its workflow item or its last step) keeps `event_seq`, the
sequence of its stream's last event, so that the next ones are numbered
without a read; a subject's events are one partition, so GET
/runs/{id}/events is one Query. The table's stream carries the event items
to the relay (app.on_dynamodb_record), filtered to EVT# inserts. Creating
a run is a transaction now (the run and its two events): twice the write
cost of the single put it was.

An Idempotency-Key is claimed with one conditional put (see CLAIM_CONDITION);
DynamoDB's TTL deletes it some time after expires_at, so the condition checks
expiry itself.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional, TypeVar, cast

from chalicelib.delivery.dispatch import Pending
from chalicelib.domain import audit, errors, events, idempotency
from chalicelib.domain.idempotency import IdempotencyClaim, IdempotencyRecord, StoredResponse
from chalicelib.domain.models import (
    COMPLETED,
    DEFAULT_POLICY,
    IN_PROGRESS,
    Action,
    Deadline,
    Decision,
    Event,
    Policy,
    Run,
    Slice,
    Step,
    StepRule,
    Workflow,
)
from chalicelib.storage.dynamodb import lists as dynamodb_lists
from chalicelib.storage.dynamodb.lists import ANYONE, INBOX_PREFIX
from chalicelib.storage.dynamodb.schema import (
    ALL_INDEX,
    DELIVERY_DUE,
    DUE_AT,
    DUE_INDEX,
    DUE_KEY,
    INDEX_KEYS,
    TTL_ATTRIBUTE,
)
from chalicelib.storage.failures import unavailable

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, dict[str, Any]]
Read = TypeVar("Read")

WORKFLOW_SK = "#WORKFLOW"
NAME_SK = "#WFNAME"
RUN_SK = "#RUN"
STEP_PREFIX = "STEP#"
ACTION_PREFIX = "ACT#"
EVENT_PREFIX = "EVT#"
# How recorded events leave: see configured_delivery.
DELIVERY_VARIABLE = "WORKFLOW_EVENT_DELIVERY"
TABLE_DELIVERY = "table"
STREAM_DELIVERY = "stream"
# DynamoDB's limit of items per TransactWriteItems.
MAX_TRANSACTION_ITEMS = 100
# Each kind of record counts its ids from 1, on a counter item of its own, as
# SQLite's tables do. Tables made when one counter served every kind start
# the kinds' counters above it (LEGACY_COUNTER_KEY), so no id comes twice.
ID_KINDS = ("workflow", "step", "run", "action")
LEGACY_COUNTER_KEY = {"PK": {"S": "COUNTER"}, "SK": {"S": "#ID"}}
# The partition of the `all` index that lists workflows.
WORKFLOWS_PK = "WORKFLOWS"
# A workflow's step count once it has been appended to, kept in this many items
# of their own (WF#<id>#STEPS#<n>), which every append sets: a decision that
# completes a run checks the one its run id picks (see record_decision).
STEP_COUNT_COPIES = 16
STEP_COUNT_SK = "#STEPS"
# Workflows whose steps a storage keeps in memory (steps are only appended, so
# what it knows stays true); past this many it forgets the oldest.
KNOWN_WORKFLOWS = 1024
# A page's BatchGetItem, retried while DynamoDB leaves keys unprocessed.
BATCH_GET_ATTEMPTS = 6
# Threads that Query the partitions of a page (a run list's, an inbox's, the deadlines') at once.
MAX_PARALLEL_QUERIES = 16
IDEMPOTENCY_SK = "#IDEM"
PART_PREFIX = "#IDEM#PART#"
# Kept response bodies longer than this are stored zlib-compressed (binary): a
# run's answer holds its whole history and may outgrow a 400 KB item.
INLINE_BODY_LIMIT = 64 * 1024
# A compressed body longer than this is kept in part items beside the key's
# item (PART_PREFIX + number), written in the same transaction that marks the
# key answered: each part stays well under DynamoDB's 400 KB per item.
PART_BYTES = 300 * 1024
# idempotency.may_claim, as DynamoDB evaluates it against the stored item: a
# key is answered once its body (inline or in parts) is there.
CLAIM_CONDITION = (
    "attribute_not_exists(PK) OR #expires_at <= :now OR (fingerprint = :fingerprint "
    "AND attribute_not_exists(response_body) AND attribute_not_exists(response_parts) "
    "AND (lease_until <= :now OR claim_token = :token))"
)

# Ids come from the counter item in blocks: one counter write per block, so
# the counter stays far from its partition's write limit however many
# containers run, and ids stay unique across them.
ID_BLOCK = 1000
# Attempts per request, the first included, under botocore's standard retry
# mode (throttling, 5xx, connection errors): four keep the worst-case backoff
# far inside API Gateway's 29 s limit.
MAX_ATTEMPTS = 4
# Lost races on a transaction (TransactionConflict) are retried this often.
CONFLICT_RETRIES = 5
# Orders an append tries before it gives up (503): each lost one was taken by
# another append to the same workflow in the meantime.
APPEND_ATTEMPTS = 50


def _wf_key(workflow_id: int) -> str:
    return f"WF#{workflow_id}"


def _run_key(run_id: int) -> str:
    return f"RUN#{run_id}"


def _step_sk(order: int) -> str:
    return f"{STEP_PREFIX}{order:010d}"


def _action_sk(seq: int) -> str:
    return f"{ACTION_PREFIX}{seq:010d}"


def _event_pk(subject: str) -> str:
    return f"{EVENT_PREFIX}{subject}"


def _event_sk(sequence: int) -> str:
    return f"{sequence:010d}"


def _step_count_key(workflow_id: int, copy: int) -> Item:
    return {"PK": _s(f"{_wf_key(workflow_id)}#STEPS#{copy}"), "SK": _s(STEP_COUNT_SK)}


class _TransactionConflict(Exception):
    """A write met another transaction on the same item; DynamoDB wrote nothing."""


def _back_off(attempt: int) -> None:
    """Wait before retry `attempt` (from 0): jittered, doubling from 20 ms."""
    time.sleep(random.uniform(0, 0.02 * 2**attempt))


class ItemTooLarge(errors.Conflict):
    """DynamoDB refused a write that would grow an item past 400 KB."""


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


class IdBlocks:
    """Hands out integer ids from blocks reserved on the counter item."""

    def __init__(self, reserve: Any, block: int = ID_BLOCK) -> None:
        self._reserve = reserve
        self._block = block
        self._lock = threading.Lock()
        self._next = 0
        self._end = 0  # exclusive

    def take(self, count: int = 1) -> list[int]:
        with self._lock:
            ids: list[int] = []
            while len(ids) < count:
                if self._next >= self._end:
                    size = max(self._block, count - len(ids))
                    top = self._reserve(size)
                    self._next, self._end = top - size + 1, top + 1
                grab = min(count - len(ids), self._end - self._next)
                ids.extend(range(self._next, self._next + grab))
                self._next += grab
            return ids


def configured_delivery() -> str:
    """WORKFLOW_EVENT_DELIVERY: `table` (default), where this service sends the
    events it records from the table (the due index finds them), or `stream`
    (deployed), where the table's stream carries them to the relay and the
    index would be written for nothing. Unavailable, logged, if it is neither."""
    raw = os.environ.get(DELIVERY_VARIABLE, "").strip().lower() or TABLE_DELIVERY
    if raw not in (TABLE_DELIVERY, STREAM_DELIVERY):
        raise unavailable(
            f"{DELIVERY_VARIABLE} is {raw!r}: set it to {TABLE_DELIVERY!r} "
            f"(the default) or {STREAM_DELIVERY!r}"
        )
    return raw


class DynamoDBStorage:
    """Storage in one DynamoDB table (see the module docstring for its keys)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        id_block: int = ID_BLOCK,
        shards: Optional[int] = None,
    ) -> None:
        self.client = client
        self.table = table
        self._ids = {
            kind: IdBlocks(functools.partial(self._reserve_ids, kind), id_block)
            for kind in ID_KINDS
        }
        self._legacy_top: Optional[int] = None
        # Shards of each shared list (dynamodb_lists.py).
        self.shards = shards if shards is not None else dynamodb_lists.configured_shards()
        self.delivery = configured_delivery()
        # The threads that Query a list's shards at once (made at the first page).
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pool_lock = threading.Lock()
        # workflow id -> its steps, as last read: only ever appended to, so
        # every step known is right, and a step after the last known one is
        # checked for by the write that completes a run.
        self._known_steps: dict[int, tuple[Step, ...]] = {}

    # -- workflows -------------------------------------------------------

    def create_workflow(
        self,
        name: str,
        description: str,
        steps: Sequence[StepRule],
        now: str,
        policy: Policy = DEFAULT_POLICY,
    ) -> Workflow:
        (workflow_id,) = self._ids["workflow"].take()
        step_ids = self._ids["step"].take(len(steps)) if steps else []
        stored = tuple(
            rule.stored(step_id, workflow_id, order)
            for order, (step_id, rule) in enumerate(zip(step_ids, steps, strict=True), start=1)
        )
        workflow = Workflow(workflow_id, name, description, now, stored, policy)
        created = events.workflow_created(workflow)
        items: list[dict[str, Any]] = [
            self._put_new(
                {"PK": _s(f"WFNAME#{name}"), "SK": _s(NAME_SK), "workflow_id": _n(workflow_id)}
            ),
            self._put_new({**_workflow_item(workflow), "event_seq": _n(len(created))}),
        ]
        items += [
            self._put_new({**_step_item(step), "event_seq": _n(len(created))}) for step in stored
        ]
        reasons = self._transact(items + self._event_puts(created, 0))
        if reasons:
            raise errors.Conflict(f"A workflow named {name!r} already exists")
        return self._remember(workflow)

    def get_workflow(self, workflow_id: int) -> Workflow:
        # The workflow item carries its steps: the step items need not be read.
        item = self._read_item(_s(_wf_key(workflow_id)), _s(WORKFLOW_SK))
        if item is None:
            raise errors.workflow_not_found(workflow_id)
        return self._remember(_workflow(item))

    def append_step(self, workflow_id: int, rule: StepRule, now: str) -> Step:
        # The partition sorts the workflow item before its steps, so the last
        # item is the highest step (or the workflow item when it has none);
        # it holds the sequence of the workflow's last event.
        last = self._call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": _s(_wf_key(workflow_id))},
            ScanIndexForward=False,
            Limit=1,
        )["Items"]
        if not last:
            raise errors.workflow_not_found(workflow_id)
        order = int(last[0]["step_order"]["N"]) + 1 if "step_order" in last[0] else 1
        event_seq = _event_seq(last[0])
        (step_id,) = self._ids["step"].take()
        # A lost race means `order` is taken: the next free one is right after
        # it, so orders stay consecutive without reading again. A transaction
        # that adds step n + 1 to the workflow's list runs only after the one
        # that wrote step n, so the list stays in step order. Each append is
        # one event of the workflow's stream: its sequence moves with the order.
        for _ in range(APPEND_ATTEMPTS):
            step = rule.stored(step_id, workflow_id, order)
            added = events.step_added(step, now)
            item = {**_step_item(step), "event_seq": _n(event_seq + len(added))}
            try:
                reasons = self._transact(
                    [
                        self._put_new(item),
                        self._listed_step(step),
                        *self._counted_step(step),
                        *self._event_puts(added, event_seq),
                    ]
                )
            except ItemTooLarge as exc:
                raise ItemTooLarge(
                    f"Workflow {workflow_id} cannot take another step: its steps fill the "
                    "400 KB that DynamoDB stores per workflow"
                ) from exc
            # Written, or refused because an earlier attempt of it was applied.
            if not reasons or self._holds_own(_wf_key(workflow_id), _step_sk(order), step.id):
                known = self._known_steps.get(workflow_id)
                if known is not None and len(known) == order - 1:
                    self._known_steps[workflow_id] = (*known, step)
                return step
            if reasons[1] == "ConditionalCheckFailed":
                raise errors.workflow_not_found(workflow_id)
            order += 1
            event_seq += len(added)
        raise errors.Unavailable("Too many steps are being appended at once; retry shortly")

    def _listed_step(self, step: Step) -> dict[str, Any]:
        """The update that appends `step` to the steps its workflow item carries."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": {"PK": _s(_wf_key(step.workflow_id)), "SK": _s(WORKFLOW_SK)},
                "UpdateExpression": "SET #steps = list_append(#steps, :step)",
                "ConditionExpression": "attribute_exists(PK)",
                "ExpressionAttributeNames": {"#steps": "steps"},
                "ExpressionAttributeValues": {":step": {"L": [_step_entry(step)]}},
            }
        }

    def _counted_step(self, step: Step) -> list[dict[str, Any]]:
        """The updates that raise the workflow's step count copies to `step`'s order."""
        return [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _step_count_key(step.workflow_id, copy),
                    "UpdateExpression": "SET step_count = :order",
                    # A workflow's first append makes them.
                    "ConditionExpression": (
                        "attribute_not_exists(step_count) OR step_count < :order"
                    ),
                    "ExpressionAttributeValues": {":order": _n(step.step_order)},
                }
            }
            for copy in range(STEP_COUNT_COPIES)
        ]

    def list_workflows(self, after_id: Optional[int], limit: int) -> Slice[Workflow]:
        items, more = self._list_page(ALL_INDEX, WORKFLOWS_PK, after_id, limit)
        return Slice(tuple(_workflow(item) for item in items), more)

    def next_step(self, workflow_id: int, after_order: int) -> Optional[Step]:
        """From the steps this storage knows of the workflow (read once): None
        after the last one known, which the decision's write then checks (a
        step appended since makes it fail, and the steps are read again)."""
        steps = self._known_steps.get(workflow_id)
        if steps is None:
            steps = self._read_steps(workflow_id)
        return next((step for step in steps if step.step_order > after_order), None)

    def _read_steps(self, workflow_id: int) -> tuple[Step, ...]:
        """The workflow's steps, read now and kept for next_step."""
        item = self._read_item(_s(_wf_key(workflow_id)), _s(WORKFLOW_SK))
        return self._remember(_workflow(item)).steps if item is not None else ()

    def _remember(self, workflow: Workflow) -> Workflow:
        """Keep the steps of `workflow`, as just read or written, for next_step."""
        known = self._known_steps
        if workflow.id not in known and len(known) >= KNOWN_WORKFLOWS:
            known.pop(next(iter(known)), None)
        known[workflow.id] = workflow.steps
        return workflow

    # -- runs ------------------------------------------------------------

    def create_run(
        self, workflow: Workflow, title: str, now: str, requested_by: Optional[str] = None
    ) -> Run:
        (run_id,) = self._ids["run"].take()
        first = workflow.steps[0]
        run = Run.started(run_id, workflow, title, now, requested_by)
        run = run._replace(head_hash=audit.genesis_hash(audit.genesis_of(run)))
        started = events.run_started(run)
        item: Item = {
            "PK": _s(_run_key(run_id)),
            "SK": _s(RUN_SK),
            "id": _n(run_id),
            "workflow_id": _n(workflow.id),
            "title": _s(title),
            "status": _s(IN_PROGRESS),
            "created_at": _s(now),
            "updated_at": _s(now),
            "seq": _n(0),
            "head_hash": _s(run.head_hash or ""),
            "policy": {"M": {flag: {"BOOL": on} for flag, on in workflow.policy.to_dict().items()}},
            "event_seq": _n(len(started)),
            **_current_step_state(run, self.shards)[0],
            "approvers": {"L": []},
            **dynamodb_lists.run_keys(run_id, workflow.id, IN_PROGRESS, self.shards),
        }
        if requested_by is not None:
            item["requested_by"] = _s(requested_by)
        # The run, its events and its first step's inbox entries, at once.
        if self._transact(
            [
                self._put_new(item),
                *self._event_puts(started, 0),
                *self._inbox_puts(run_id, first, now),
            ]
        ):
            raise unavailable(
                f"Run id {run_id} is already taken in table {self.table!r}: a counter item "
                "was changed by hand, or the table holds runs of another service",
            )
        return run._replace(event_seq=len(started))

    def get_run(self, run_id: int, history: bool = True) -> Run:
        if not history:
            head = self._read_item(_s(_run_key(run_id)), _s(RUN_SK))
            if head is None:
                raise errors.run_not_found(run_id)
            # A run whose history is not chained yet chains the next action to
            # the head its history gives (audit.next_hash): that needs it read.
            if head.get("head_hash", {}).get("S"):
                return _run(head, ())._replace(action_count=int(head["seq"]["N"]))
        items = list(self._query_partition(_run_key(run_id)))
        head = next((item for item in items if item["SK"]["S"] == RUN_SK), None)
        if head is None:
            raise errors.run_not_found(run_id)
        actions = tuple(
            _action(item, run_id) for item in items if item["SK"]["S"].startswith(ACTION_PREFIX)
        )
        return _run(head, actions)

    def record_decision(self, run: Run, decision: Decision) -> Run:
        step = run.current_step
        assert step is not None, "only a run in progress has a decision to record"
        seq = run.history_length + 1
        (action_id,) = self._ids["action"].take()
        chained = audit.next_hash(run, decision)
        action = Action.recording(action_id, run, decision, chained)
        decided = run.decided(decision, action, chained)
        told = events.decided(run, decision, decided)
        moved = {
            "updated_at": _s(decision.at),
            "seq": _n(seq),
            "head_hash": _s(chained),
            "approvers": _strings(decided.approvers),
            "event_seq": _n(run.event_seq + len(told)),
        }
        if decided.status != run.status:
            # Only then: a run's list entries stay put while its status does.
            moved.update(
                {
                    "status": _s(decided.status),
                    **dynamodb_lists.status_keys(
                        run.id, run.workflow_id, decided.status, self.shards
                    ),
                }
            )
        current, removed = _current_step_state(decided, self.shards)
        moved.update(current)
        remove = f" REMOVE {', '.join(removed)}" if removed else ""
        sets = ", ".join(f"#{name} = :{name}" for name in moved)
        update = {
            "Update": {
                "TableName": self.table,
                "Key": {"PK": _s(_run_key(run.id)), "SK": _s(RUN_SK)},
                "UpdateExpression": f"SET {sets}{remove}",
                "ConditionExpression": "#status = :in_progress AND step_id = :step AND seq = :prev",
                "ExpressionAttributeNames": {
                    "#status": "status",
                    **{f"#{name}": name for name in moved},
                },
                "ExpressionAttributeValues": {
                    **{f":{name}": value for name, value in moved.items()},
                    ":in_progress": _s(IN_PROGRESS),
                    ":step": _n(step.id),
                    ":prev": _n(seq - 1),
                },
            }
        }
        # An event put refused means another writer numbered its events first
        # (a deadline's reminder): the run moved on, as for a lost decision.
        items = [
            update,
            self._put_new(_action_item(action, seq)),
            *self._event_puts(told, run.event_seq),
        ]
        # A run completes only if the step decided is still its workflow's last
        # (next_step answered from the steps this storage knows).
        completes = decided.status == COMPLETED
        if completes:
            items.append(self._no_step_after(run, step))
        checked = len(items) - 1
        # The inbox follows the run: the step it leaves loses its entries, the
        # one it reaches gets them. What does not fit in the transaction is
        # deleted right after it; an entry left behind meanwhile (or by a
        # crash) is one the inbox drops, as its run is no longer at its step.
        stale: list[dict[str, Any]] = []
        if not decision.stays:
            puts = (
                self._inbox_puts(run.id, decision.next_step, decision.at)
                if decision.next_step is not None
                else []
            )
            # A step reached in the millisecond the last one was: the put
            # replaces the entry that would be deleted (one operation per item).
            taken = {_key_of(put["Put"]["Item"]) for put in puts}
            items += puts
            deletes = [
                delete
                for delete in self._inbox_deletes(run)
                if _key_of(delete["Delete"]["Key"]) not in taken
            ]
            room = MAX_TRANSACTION_ITEMS - len(items)
            items, stale = items + deletes[:room], deletes[room:]
        reasons = self._transact(items)
        if reasons and not self._holds_own(_run_key(run.id), _action_sk(seq), action.id):
            if completes and reasons[checked] == "ConditionalCheckFailed":
                # The workflow has a step after this one now: know it for the retry.
                self._steps_grew(run)
            raise errors.StaleRun()
        for delete in stale:
            self._call("delete_item", **delete["Delete"])
        return decided._replace(event_seq=run.event_seq + len(told))

    def _holds_own(self, pk: str, sk: str, own_id: int) -> bool:
        """Whether the item at (pk, sk) carries `own_id`, the id this attempt of a
        write gave it (unique to the attempt): a transaction refused because it
        had already been applied (botocore retried it after a timeout, and the
        retry's conditions saw its own writes) is done, not lost, and must not be
        made again. DynamoDB answers such a retry from its ClientRequestToken;
        not every endpoint does (moto). An equal write of another attempt has
        another id."""
        item = self._read_item(_s(pk), _s(sk))
        return item is not None and int(item["id"]["N"]) == own_id

    def _inbox_puts(
        self, run_id: int, step: Step, since: str, principals: Optional[Sequence[str]] = None
    ) -> list[dict[str, Any]]:
        """The inbox entries of a run that reaches `step` at `since`: one per
        principal that may decide it (one in ANYONE's inbox if it names none),
        or per one of `principals` (those a passed deadline escalated it to)."""
        return [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {
                        "PK": _s(dynamodb_lists.inbox_pk(principal, run_id, self.shards)),
                        "SK": _s(_inbox_sk(since, run_id)),
                        "run_id": _n(run_id),
                        "step_id": _n(step.id),
                    },
                }
            }
            for principal in (_waiting_for(step) if principals is None else principals)
        ]

    def _inbox_deletes(self, run: Run) -> list[dict[str, Any]]:
        """The deletes of the inbox entries of the step `run` is at (of nothing,
        harmlessly, for a run from before the inbox, which has none)."""
        step = run.current_step
        if step is None or run.current_step_since is None:
            return []
        sk = _s(_inbox_sk(run.current_step_since, run.id))
        return [
            {
                "Delete": {
                    "TableName": self.table,
                    "Key": {
                        "PK": _s(dynamodb_lists.inbox_pk(principal, run.id, self.shards)),
                        "SK": sk,
                    },
                }
            }
            for principal in _waiting_for(step, run.current_step_escalated_to)
        ]

    def inbox(
        self,
        actor: str,
        groups: frozenset[str],
        after: Optional[tuple[str, int]],
        limit: int,
    ) -> Slice[Run]:
        # One Query per inbox partition of each principal the caller is (their
        # user; each group and anyone, sharded), sent at once, each in (since,
        # run id) order, merged; then the runs of the first `limit` entries in
        # one consistent BatchGetItem. An entry whose run has left its step
        # since is dropped, and the page is shorter.
        principals = [f"user:{actor}", *(f"group:{group}" for group in sorted(groups)), ANYONE]
        pks = [
            pk
            for principal in principals
            for pk in dynamodb_lists.inbox_pks(principal, self.shards)
        ]
        read = self._in_parallel(
            functools.partial(self._inbox_entries, after=after, limit=limit), pks
        )
        entries: set[tuple[str, int, int]] = set()
        # The page may not reach past any Query's last entry while it has more.
        bound: Optional[str] = None
        for found, more in read:
            entries.update(found)
            if more and (bound is None or found[-1][0] < bound):
                bound = found[-1][0]
        ordered = sorted(entry for entry in entries if bound is None or entry[0] <= bound)
        more = bound is not None or len(ordered) > limit
        ordered = ordered[:limit]
        runs = self._runs_by_id({run_id for _, run_id, _ in ordered})
        page = tuple(
            runs[run_id]
            for _, run_id, step_id in ordered
            if run_id in runs and runs[run_id].current_step_id == step_id
        )
        resume = _inbox_position(ordered[-1][0]) if ordered else None
        return Slice(page, more and bool(ordered), resume)

    def _inbox_entries(
        self, pk: str, after: Optional[tuple[str, int]], limit: int
    ) -> tuple[list[tuple[str, int, int]], bool]:
        """Up to `limit` + 1 (sort key, run id, step id) of inbox partition `pk`
        after `after`, in order, and whether more follow them."""
        items, more = self._query_after(pk, _inbox_sk(*after) if after else None, limit + 1)
        found = [
            (item["SK"]["S"], int(item["run_id"]["N"]), int(item["step_id"]["N"])) for item in items
        ]
        return found, more and bool(found)

    def _runs_by_id(self, run_ids: set[int]) -> dict[int, Run]:
        """The runs (without actions) with these ids, read consistently; one
        BatchGetItem for up to 100 of them, again for any DynamoDB left unread."""
        keys = [{"PK": _s(_run_key(run_id)), "SK": _s(RUN_SK)} for run_id in sorted(run_ids)]
        runs: dict[int, Run] = {}
        attempt = 0
        while keys:
            answer = self._call(
                "batch_get_item",
                RequestItems={self.table: {"Keys": keys, "ConsistentRead": True}},
            )
            for item in answer["Responses"].get(self.table, []):
                run = _run(item, ())
                runs[run.id] = run
            keys = answer.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if keys:
                if attempt == CONFLICT_RETRIES:
                    raise errors.Unavailable("DynamoDB is busy; retry shortly")
                _back_off(attempt)
                attempt += 1
        return runs

    def _no_step_after(self, run: Run, step: Step) -> dict[str, Any]:
        """The check that `step` is still its workflow's last: on one of the
        workflow's step count copies, picked by the run's id so that a busy
        workflow's completions spread over all of them."""
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": _step_count_key(run.workflow_id, run.id % STEP_COUNT_COPIES),
                # No copy: no step was ever appended, so the steps known are all.
                "ConditionExpression": "attribute_not_exists(step_count) OR step_count = :order",
                "ExpressionAttributeValues": {":order": _n(step.step_order)},
            }
        }

    def _steps_grew(self, run: Run) -> None:
        """After _no_step_after failed: the workflow has a step after the one
        decided; read its steps again, for the retry."""
        self._read_steps(run.workflow_id)

    def raise_step_count(self, workflow_id: int, count: int, copies: Sequence[int]) -> int:
        """Set the workflow's step count copies `copies` to `count` where they are
        lower or missing (never lower one: an append may have raised it since
        `count` was read); how many it set. For workflows appended to before the
        copies existed (scripts/migrate_list_indexes.py)."""
        from botocore.exceptions import ClientError

        raised = 0
        for copy in copies:
            try:
                self._call(
                    "update_item",
                    TableName=self.table,
                    Key=_step_count_key(workflow_id, copy),
                    UpdateExpression="SET step_count = :count",
                    ConditionExpression="attribute_not_exists(step_count) OR step_count < :count",
                    ExpressionAttributeValues={":count": _n(count)},
                )
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                continue
            raised += 1
        return raised

    def list_runs(
        self,
        workflow_id: Optional[int],
        status: Optional[str],
        before_id: Optional[int],
        limit: int,
    ) -> Slice[Run]:
        index, shard_pks = dynamodb_lists.partitions(workflow_id, status, self.shards)
        read = self._in_parallel(
            functools.partial(
                self._query_shard, index, before=before_id, limit=dynamodb_lists.shard_limit(limit)
            ),
            shard_pks,
        )
        entries, more = dynamodb_lists.newest_first(read, limit)
        runs = [_run(item, ()) for item in self._get_items(entries)]
        # An entry whose run has changed status since is left out: its run shows
        # in the list of its status now, as DynamoDB moves the entry there.
        shown = tuple(run for run in runs if status is None or run.status == status)
        last = int(entries[-1]["id"]["N"]) if entries else None
        # The next page starts below the last entry read, shown or not.
        return Slice(shown, more, None if shown and shown[-1].id == last else last)

    def _in_parallel(self, call: Callable[[str], Read], args: Sequence[str]) -> list[Read]:
        """call(arg) for each of `args`, at once on a pool of threads (a page's
        Queries, one per shard: their latencies overlap instead of adding up)."""
        if len(args) < 2:
            return [call(arg) for arg in args]
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            with self._pool_lock:
                if self._pool is None:
                    # Threads start as calls need them, up to the most any
                    # page sends at once: not sized by the first caller's count.
                    self._pool = ThreadPoolExecutor(
                        max_workers=MAX_PARALLEL_QUERIES, thread_name_prefix="shards"
                    )
        return list(self._pool.map(call, args))

    def _query_shard(
        self, index: str, pk: str, before: Optional[int], limit: int
    ) -> dynamodb_lists.ShardPage:
        """Up to `limit` entries of one shard of a run list, newest first."""
        page = self._query_index(index, pk, before, limit, newest_first=True)
        return dynamodb_lists.ShardPage(page["Items"], "LastEvaluatedKey" in page)

    def _get_items(self, entries: Sequence[Item]) -> list[Item]:
        """The table's items of index entries (at most 100), read consistently,
        in the entries' order; one BatchGetItem (more if DynamoDB leaves keys
        unprocessed)."""
        if not entries:
            return []
        keys = [{"PK": entry["PK"], "SK": entry["SK"]} for entry in entries]
        found: dict[str, Item] = {}
        pending = keys
        for attempt in range(BATCH_GET_ATTEMPTS):
            answer = self._call(
                "batch_get_item",
                RequestItems={self.table: {"Keys": pending, "ConsistentRead": True}},
            )
            for item in answer["Responses"].get(self.table, []):
                found[item["PK"]["S"]] = item
            pending = answer.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if not pending:
                return [found[key["PK"]["S"]] for key in keys if key["PK"]["S"] in found]
            _back_off(attempt)
        raise unavailable(
            f"DynamoDB left keys of a BatchGetItem on table {self.table!r} unprocessed "
            f"{BATCH_GET_ATTEMPTS} times",
            transient=True,
        )

    # -- deadlines ---------------------------------------------------------

    def due_runs(self, now: str, limit: int) -> list[int]:
        # The sparse due index's deadline partitions (only runs whose deadline is
        # still to apply carry its key), one Query each, sent at once; the
        # soonest due first.
        def soonest(pk: str) -> list[Item]:
            return list(itertools.islice(self._due(pk, now, limit), limit))

        read = self._in_parallel(soonest, dynamodb_lists.deadline_pks(self.shards))
        due = sorted(
            (item[DUE_AT]["S"], int(item["PK"]["S"].removeprefix("RUN#")))
            for found in read
            for item in found
        )
        return [run_id for _, run_id in due[:limit]]

    def _due(self, kind: str, now: str, page: int) -> Iterator[Item]:
        """The keys of the items of due index partition `kind` due by `now`,
        soonest first, `page` per Query."""
        return self._query_all(
            {
                "TableName": self.table,
                "IndexName": DUE_INDEX,
                "KeyConditionExpression": "#kind = :kind AND #at <= :now",
                "ExpressionAttributeNames": {"#kind": DUE_KEY, "#at": DUE_AT},
                "ExpressionAttributeValues": {":kind": _s(kind), ":now": _s(now)},
                "Limit": page,
            }
        )

    def record_deadline(self, run: Run, at: str) -> Run:
        step = run.current_step
        assert step is not None, "only a run in progress has a deadline"
        after = run._replace(deadline_passed=True)
        told = events.deadline_passed(run, after, at)
        update = {
            "Update": {
                "TableName": self.table,
                "Key": {"PK": _s(_run_key(run.id)), "SK": _s(RUN_SK)},
                "UpdateExpression": (
                    f"SET deadline_passed = :passed, event_seq = :event_seq "
                    f"REMOVE {DUE_KEY}, {DUE_AT}"
                ),
                # The condition of a decision, and that the deadline is still to apply.
                "ConditionExpression": "#status = :in_progress AND step_id = :step AND seq = :seq "
                "AND (attribute_not_exists(deadline_passed) OR deadline_passed = :pending)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":passed": {"BOOL": True},
                    ":pending": {"BOOL": False},
                    ":event_seq": _n(run.event_seq + len(told)),
                    ":in_progress": _s(IN_PROGRESS),
                    ":step": _n(step.id),
                    ":seq": _n(run.history_length),
                },
            }
        }
        # Those a passed deadline escalates the step to find it in their inboxes.
        escalated = [
            principal
            for principal in after.current_step_escalated_to
            if step.approvers and principal not in step.approvers
        ]
        entries = (
            self._inbox_puts(run.id, step, run.current_step_since, escalated)
            if escalated and run.current_step_since
            else []
        )
        if self._transact([update, *self._event_puts(told, run.event_seq), *entries]):
            raise errors.StaleRun()
        return after._replace(event_seq=run.event_seq + len(told))

    # -- events ------------------------------------------------------------

    def _event_puts(self, drafts: Sequence[events.Draft], after: int) -> list[dict[str, Any]]:
        """The puts of `drafts` as event items numbered from `after` + 1, each only
        if its number is free, for the transaction of the transition they tell."""
        return [
            self._put_new(
                _event_item(events.recorded(draft, after + number), draft.time, self.delivery)
            )
            for number, draft in enumerate(drafts, start=1)
        ]

    def list_events(self, subject: str, after_sequence: Optional[int], limit: int) -> Slice[Event]:
        items, _ = self._query_after(_event_pk(subject), _event_sk(after_sequence or 0), limit + 1)
        return Slice(tuple(_event(item) for item in items[:limit]), len(items) > limit)

    # -- delivery (chalicelib/delivery/dispatch.py) -------------------------------------

    def pending_subjects(self, now: str, limit: int) -> list[str]:
        # The due index holds every event not delivered yet.
        subjects: dict[str, None] = {}
        for item in self._due(DELIVERY_DUE, now, 1000):
            subjects[item["PK"]["S"].removeprefix(EVENT_PREFIX)] = None
            if len(subjects) == limit:
                break
        return list(subjects)

    def first_pending(self, subject: str) -> Optional[Pending]:
        pending = self._query_all(
            {
                "TableName": self.table,
                "ConsistentRead": True,
                "KeyConditionExpression": "PK = :pk",
                "FilterExpression": "attribute_not_exists(delivered_at)",
                "ExpressionAttributeValues": {":pk": _s(_event_pk(subject))},
            }
        )
        item = next(pending, None)
        if item is None:
            return None
        attempts = int(item["attempts"]["N"]) if "attempts" in item else 0
        retry = item.get("next_attempt_at")
        return Pending(_event(item), attempts, retry["S"] if retry else None)

    def mark_delivered(self, pending: Pending, now: str) -> None:
        self._update_pending(
            pending, f"SET delivered_at = :now REMOVE {DUE_KEY}, {DUE_AT}", {":now": _s(now)}
        )

    def mark_failed(self, pending: Pending, next_attempt_at: str) -> None:
        self._update_pending(
            pending,
            f"SET attempts = if_not_exists(attempts, :zero) + :one, next_attempt_at = :at, "
            f"{DUE_AT} = :at",
            {":zero": _n(0), ":one": _n(1), ":at": _s(next_attempt_at)},
        )

    def _update_pending(self, pending: Pending, update: str, values: Item) -> None:
        """Change an event's delivery state while it is not delivered; else nothing."""
        from botocore.exceptions import ClientError

        event = pending.event
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key={"PK": _s(_event_pk(event.subject)), "SK": _s(_event_sk(event.sequence))},
                UpdateExpression=update,
                ConditionExpression="attribute_exists(PK) AND attribute_not_exists(delivered_at)",
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # Another sender delivered it meanwhile.

    # -- the audit chain of history recorded before it -----------------------

    def unchained_run_ids(self) -> Iterator[int]:
        """The runs with history from before the audit chain (a run without its
        head_hash, or an action without its hash), each once. One Scan of the
        whole table: for scripts/backfill_audit_chain.py, never for a request."""
        return self._scan_run_ids(
            "(SK = :run AND attribute_not_exists(head_hash)) "
            "OR (begins_with(SK, :action) AND attribute_not_exists(#hash))",
            {"#hash": "hash"},
            {":run": _s(RUN_SK), ":action": _s(ACTION_PREFIX)},
        )

    def _scan_run_ids(self, condition: str, names: dict[str, str], values: Item) -> Iterator[int]:
        """The ids of the runs with an item that meets `condition`, each once:
        one Scan of the whole table, for the scripts that upgrade a table."""
        params: dict[str, Any] = {
            "TableName": self.table,
            "ProjectionExpression": "PK",
            "FilterExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        seen: set[int] = set()
        while True:
            page = self._call("scan", **params)
            for item in page["Items"]:
                run_id = int(item["PK"]["S"].removeprefix("RUN#"))
                if run_id not in seen:
                    seen.add(run_id)
                    yield run_id
            if "LastEvaluatedKey" not in page:
                return
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def chain_recorded_history(self, run_id: int) -> int:
        """Store the hashes that the run's history lacks, computed from its stored
        values in history order (audit.recomputed); how many were stored.

        Conflict, and nothing written, if a hash it has already is not the one
        its values give: that history changed after it was chained, and stays as
        it is for GET /runs/{id}/audit to show. Every write is conditional, so a
        decision recorded meanwhile (which chains itself) is never overwritten."""
        items = list(self._query_partition(_run_key(run_id)))
        head = next((item for item in items if item["SK"]["S"] == RUN_SK), None)
        if head is None:
            raise errors.run_not_found(run_id)
        recorded = [item for item in items if item["SK"]["S"].startswith(ACTION_PREFIX)]
        run = _run(head, tuple(_action(item, run_id) for item in recorded))
        genesis, *hashes = audit.recomputed(run)
        for seq, (action, expected) in enumerate(zip(run.actions, hashes, strict=True), start=1):
            if action.hash not in (None, expected):
                raise errors.Conflict(
                    f"Run {run_id}: the stored hash of seq {seq} is not that of its values"
                )
        stored = 0
        for item, action, expected in zip(recorded, run.actions, hashes, strict=True):
            if action.hash is None:
                stored += self._set_if_absent(item, "hash", expected)
        if run.head_hash is None:
            # Only while no decision moved the run since it was read: one that
            # did set its own head.
            stored += self._set_if_absent(head, "head_hash", (hashes or [genesis])[-1], head["seq"])
        return stored

    def _set_if_absent(
        self, item: Item, name: str, value: str, seq: Optional[dict[str, str]] = None
    ) -> int:
        """Set attribute `name` of `item` to `value` unless it has one (or, with
        `seq`, unless the item's seq has moved on); 1 if it did, else 0."""
        from botocore.exceptions import ClientError

        condition = "attribute_not_exists(#name)"
        values: Item = {":value": _s(value)}
        if seq is not None:
            condition += " AND seq = :seq"
            values[":seq"] = seq
        try:
            self._call(
                "update_item",
                TableName=self.table,
                Key={"PK": item["PK"], "SK": item["SK"]},
                UpdateExpression="SET #name = :value",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#name": name},
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return 0
        return 1

    # -- the inbox of runs from before it -----------------------------------

    def unindexed_run_ids(self) -> Iterator[int]:
        """The runs in progress from before the inbox (no current_step_since, so
        no inbox entries). One Scan: for scripts/backfill_inbox.py, never for a
        request."""
        return self._scan_run_ids(
            "SK = :run AND #status = :in_progress AND attribute_not_exists(current_step_since)",
            {"#status": "status"},
            {":run": _s(RUN_SK), ":in_progress": _s(IN_PROGRESS)},
        )

    def index_waiting_run(self, run_id: int) -> bool:
        """Give a run from before the inbox its entries and current_step_since
        (its last update: before quorums, it reached its step with its last
        decision), in one transaction conditional on the run not having moved
        since it was read; False if it had (a decision indexes it itself)."""
        item = self._read_item(_s(_run_key(run_id)), _s(RUN_SK))
        if item is None or "current_step_since" in item or item["status"]["S"] != IN_PROGRESS:
            return False
        run = _run(item, ())
        assert run.current_step is not None and run.current_step_since is not None
        update = {
            "Update": {
                "TableName": self.table,
                "Key": {"PK": item["PK"], "SK": item["SK"]},
                "UpdateExpression": "SET current_step_since = :since",
                "ConditionExpression": "seq = :seq AND attribute_not_exists(current_step_since)",
                "ExpressionAttributeValues": {
                    ":since": _s(run.current_step_since),
                    ":seq": item["seq"],
                },
            }
        }
        puts = self._inbox_puts(run_id, run.current_step, run.current_step_since)
        return not self._transact([update, *puts])

    def legacy_inbox_entries(self) -> Iterator[Item]:
        """The inbox entries of groups and of open steps still in the one
        partition each had before those were sharded (INBOX#group:<name>,
        INBOX#*). One Scan: for scripts/backfill_inbox.py, never for a request."""
        params: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "begins_with(PK, :group) OR PK = :anyone",
            "ExpressionAttributeValues": {
                ":group": _s(INBOX_PREFIX + "group:"),
                ":anyone": _s(INBOX_PREFIX + ANYONE),
            },
        }
        while True:
            page = self._call("scan", **params)
            yield from page["Items"]
            if "LastEvaluatedKey" not in page:
                return
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def move_legacy_inbox_entry(self, entry: Item) -> bool:
        """Move an entry of legacy_inbox_entries into its shard, in one
        transaction conditional on its run still waiting at its step; True if
        moved, False if its run has moved on (the entry is then only deleted)."""
        principal = entry["PK"]["S"].removeprefix(INBOX_PREFIX)
        run_id = int(entry["run_id"]["N"])
        sharded = {**entry, "PK": _s(dynamodb_lists.inbox_pk(principal, run_id, self.shards))}
        legacy = {"PK": entry["PK"], "SK": entry["SK"]}
        still_waiting = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": {"PK": _s(_run_key(run_id)), "SK": _s(RUN_SK)},
                "ConditionExpression": "#status = :in_progress AND step_id = :step",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":in_progress": _s(IN_PROGRESS),
                    ":step": entry["step_id"],
                },
            }
        }
        moved = not self._transact(
            [
                still_waiting,
                {"Put": {"TableName": self.table, "Item": sharded}},
                {"Delete": {"TableName": self.table, "Key": legacy}},
            ]
        )
        if not moved:
            self._call("delete_item", TableName=self.table, Key=legacy)
        return moved

    # -- idempotency keys --------------------------------------------------

    def claim_idempotency_key(self, claim: IdempotencyClaim) -> Optional[StoredResponse]:
        from botocore.exceptions import ClientError

        item = {
            **_idempotency_key(claim.key),
            "fingerprint": _s(claim.fingerprint),
            "claim_token": _s(claim.token),
            "lease_until": _number(claim.lease_until),
            TTL_ATTRIBUTE: _n(claim.expires_at),
        }
        try:
            # One write decides; on refusal DynamoDB returns the item that refused
            # it, so no read follows (and none could race with the write).
            self._call(
                "put_item",
                TableName=self.table,
                Item=item,
                ConditionExpression=CLAIM_CONDITION,
                ExpressionAttributeNames={"#expires_at": TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":now": _number(claim.now),
                    ":fingerprint": _s(claim.fingerprint),
                    ":token": _s(claim.token),
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            held = cast(Optional[Item], exc.response.get("Item"))
            record = self._idempotency_record(held) if held else None
            if record is None or idempotency.may_claim(record, claim):
                # Only an endpoint that does not return the refusing item gets
                # here; do nothing rather than guess.
                raise errors.RequestInProgress() from exc
            return idempotency.replay(record, claim)
        return None

    def save_idempotent_response(self, claim: IdempotencyClaim, response: StoredResponse) -> None:
        body = _body_value(response.body)
        parts = _parts(body["B"]) if "B" in body and len(body["B"]) > PART_BYTES else []
        values: Item = {":status": _n(response.status), ":token": _s(claim.token)}
        if parts:
            sets = "response_status = :status, response_parts = :parts"
            values[":parts"] = _n(len(parts))
        else:
            sets = "response_status = :status, response_body = :body"
            values[":body"] = body
        if response.location is not None:
            sets += ", response_location = :location"
            values[":location"] = _s(response.location)
        answered = {"UpdateExpression": f"SET {sets}", "ExpressionAttributeValues": values}
        if not parts:
            self._write_if_claimed("update_item", claim=claim, **answered)
            return
        # The parts and the mark that the key is answered, all or nothing; a
        # refused condition means a retry took the key over: it is its key now.
        self._transact(
            [
                {"Put": {"TableName": self.table, "Item": self._part_item(claim, number, part)}}
                for number, part in enumerate(parts, start=1)
            ]
            + [{"Update": {**self._claimed_key(claim), **answered}}]
        )

    def _part_item(self, claim: IdempotencyClaim, number: int, part: bytes) -> Item:
        return {
            "PK": _s(f"IDEM#{claim.key}"),
            "SK": _s(f"{PART_PREFIX}{number:04d}"),
            "part": {"B": part},
            TTL_ATTRIBUTE: _n(claim.expires_at),
        }

    def _idempotency_record(self, item: Item) -> IdempotencyRecord:
        """The key's record; a body kept in parts is read from them."""
        body = item.get("response_body")
        if body is None and "response_parts" in item:
            parts = [
                part["part"]["B"] for part in self._query_partition(item["PK"]["S"], PART_PREFIX)
            ][: int(item["response_parts"]["N"])]
            if len(parts) == int(item["response_parts"]["N"]):
                body = {"B": b"".join(parts)}
        return _idempotency_record(item, body)

    def release_idempotency_key(self, claim: IdempotencyClaim) -> None:
        self._write_if_claimed(
            "delete_item", ExpressionAttributeValues={":token": _s(claim.token)}, claim=claim
        )

    def _claimed_key(self, claim: IdempotencyClaim) -> dict[str, Any]:
        """Where claim's key item is, and the condition that the claim still holds it."""
        return {
            "TableName": self.table,
            "Key": _idempotency_key(claim.key),
            "ConditionExpression": "claim_token = :token",
        }

    def _write_if_claimed(self, operation: str, claim: IdempotencyClaim, **params: Any) -> None:
        """Update or delete claim's key item while the claim holds it; else nothing."""
        from botocore.exceptions import ClientError

        try:
            self._call(operation, **self._claimed_key(claim), **params)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # A retry took the key over after the lease ended: it is its key now.

    # -- requests --------------------------------------------------------

    def _list_page(
        self, index: str, pk: str, after: Optional[int], limit: int
    ) -> tuple[list[Item], bool]:
        """One Query of `index`: up to `limit` items of partition `pk` past id
        `after`, by id, and whether any follow."""
        page = self._query_index(index, pk, after, limit + 1, newest_first=False)
        items: list[Item] = page["Items"]
        if len(items) > limit:
            return items[:limit], True
        if "LastEvaluatedKey" in page and len(items) > 1:
            # Stopped at DynamoDB's 1 MB per Query, not at our Limit: the last
            # item read proves that one follows, so return the ones before it.
            return items[:-1], True
        return items, "LastEvaluatedKey" in page and bool(items)

    def _query_index(
        self, index: str, pk: str, past: Optional[int], limit: int, newest_first: bool
    ) -> Any:
        """One Query of partition `pk` of `index`: up to `limit` entries by id,
        past id `past` (below it newest first, above it otherwise)."""
        condition = "#pk = :pk"
        names = {"#pk": INDEX_KEYS[index]}
        values: Item = {":pk": _s(pk)}
        if past is not None:
            condition += f" AND #id {'<' if newest_first else '>'} :past"
            names["#id"] = "id"
            values[":past"] = _n(past)
        return self._call(
            "query",
            TableName=self.table,
            IndexName=index,
            KeyConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ScanIndexForward=not newest_first,
            Limit=limit,
        )

    def _call(self, operation: str, **params: Any) -> Any:
        """The client's `operation`; a single-item write that collides with a
        transaction in flight (TransactionConflictException, which botocore
        does not retry) is retried with jittered backoff, then answers 503."""
        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                return self._send(operation, **params)
            except _TransactionConflict as exc:
                if attempt == CONFLICT_RETRIES:
                    raise unavailable(
                        f"DynamoDB {operation} on table {self.table!r} met a transaction in "
                        f"flight {CONFLICT_RETRIES + 1} times (TransactionConflictException)",
                        transient=True,
                    ) from exc
                _back_off(attempt)
        raise AssertionError("unreachable")

    def _send(self, operation: str, **params: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, operation)(**params)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                raise
            if code == "TransactionConflictException":
                raise _TransactionConflict() from exc
            if code == "ValidationException" and "size" in exc.response["Error"].get("Message", ""):
                raise ItemTooLarge("The item would exceed DynamoDB's 400 KB") from exc
            raise _refused(self.client, self.table, exc) from exc
        except BotoCoreError as exc:
            raise _not_answered(self.client, self.table, operation, exc) from exc

    def _query_partition(self, pk: str, sk_prefix: str = "") -> Iterator[Item]:
        """Every item of partition `pk` (whose sort key starts with `sk_prefix`)."""
        params: dict[str, Any] = {
            "TableName": self.table,
            "ConsistentRead": True,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": _s(pk)},
        }
        if sk_prefix:
            params["KeyConditionExpression"] += " AND begins_with(SK, :prefix)"
            params["ExpressionAttributeValues"][":prefix"] = _s(sk_prefix)
        return self._query_all(params)

    def _query_after(self, pk: str, after_sk: Optional[str], limit: int) -> tuple[list[Item], bool]:
        """One consistent Query: up to `limit` items of partition `pk` whose sort
        key follows `after_sk` (None: from the first), and whether it stopped
        before the partition's end."""
        condition = "PK = :pk"
        values: Item = {":pk": _s(pk)}
        if after_sk is not None:
            condition += " AND SK > :after"
            values[":after"] = _s(after_sk)
        page = self._call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            Limit=limit,
        )
        return page["Items"], "LastEvaluatedKey" in page

    def _query_all(self, params: dict[str, Any]) -> Iterator[Item]:
        """Every item the Query `params` finds, one page after the other, as read."""
        while True:
            page = self._call("query", **params)
            yield from page["Items"]
            if "LastEvaluatedKey" not in page:
                return
            params = {**params, "ExclusiveStartKey": page["LastEvaluatedKey"]}

    def _put_new(self, item: Item) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }

    def _transact(self, items: list[dict[str, Any]]) -> list[str]:
        """Write all items or none; the codes of failed conditions, [] on success."""
        from botocore.exceptions import ClientError

        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                self._call("transact_write_items", TransactItems=items)
                return []
            except ClientError as exc:
                reasons = [
                    reason.get("Code", "None")
                    for reason in exc.response.get("CancellationReasons", [])
                ]
                if "ConditionalCheckFailed" in reasons:
                    return reasons
                if "ValidationError" in reasons:
                    # Our requests are well formed: what the transaction's
                    # changes can break is an item's 400 KB limit.
                    raise ItemTooLarge("The item would exceed DynamoDB's 400 KB") from exc
                if attempt < CONFLICT_RETRIES and "TransactionConflict" in reasons:
                    _back_off(attempt)
                    continue
                raise unavailable(
                    f"DynamoDB refused a transaction on table {self.table!r} "
                    f"({', '.join(reasons) or exc.response['Error']['Code']})",
                    transient=True,
                ) from exc
        raise AssertionError("unreachable")

    def _reserve_ids(self, kind: str, count: int) -> int:
        """Reserve `count` ids of `kind` on its counter; the highest of them."""
        answer = self._call(
            "update_item",
            TableName=self.table,
            Key={"PK": _s(f"COUNTER#{kind}"), "SK": _s("#ID")},
            UpdateExpression="SET next_id = if_not_exists(next_id, :start) + :n",
            ExpressionAttributeValues={":n": _n(count), ":start": _n(self._legacy_ids())},
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["next_id"]["N"])

    def _legacy_ids(self) -> int:
        """The last id of the one counter older tables have (0 if none): read
        once per storage, at its first block."""
        if self._legacy_top is None:
            item = self._read_item(LEGACY_COUNTER_KEY["PK"], LEGACY_COUNTER_KEY["SK"])
            self._legacy_top = int(item["next_id"]["N"]) if item else 0
        return self._legacy_top

    def _read_item(self, pk: dict[str, str], sk: dict[str, str]) -> Optional[Item]:
        """One item by its key, read consistently; a Query, as the role may only
        Query (no GetItem grant)."""
        items: list[Item] = self._call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="PK = :pk AND SK = :sk",
            ExpressionAttributeValues={":pk": pk, ":sk": sk},
        )["Items"]
        return items[0] if items else None


# -- items <-> models ----------------------------------------------------------


def _waiting_for(step: Step, escalated_to: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The inbox partitions a run waiting at `step` is in: its approvers and
    those it was escalated to, or ANYONE's when it names no approvers."""
    if not step.approvers:
        return (ANYONE,)
    return tuple(dict.fromkeys((*step.approvers, *escalated_to)))


def _inbox_sk(since: str, run_id: int) -> str:
    """An inbox entry's sort key: when its run reached the step, then the run's
    id, zero-padded so that text order is (since, id) order."""
    return f"{since}#{run_id:016d}"


def _key_of(item: Item) -> tuple[str, str]:
    return item["PK"]["S"], item["SK"]["S"]


def _inbox_position(sk: str) -> tuple[str, int]:
    since, run_id = sk.rsplit("#", 1)
    return since, int(run_id)


def _strings(values: Sequence[str]) -> dict[str, Any]:
    return {"L": [_s(value) for value in values]}


def _texts(item: Item, name: str) -> tuple[str, ...]:
    return tuple(value["S"] for value in item[name]["L"]) if name in item else ()


def _step_item(step: Step) -> Item:
    return {
        "PK": _s(_wf_key(step.workflow_id)),
        "SK": _s(_step_sk(step.step_order)),
        "id": _n(step.id),
        "name": _s(step.name),
        "step_order": _n(step.step_order),
        **_rule_attrs(step),
    }


def _rule_attrs(step: Step) -> Item:
    """Who may decide a step, its quorum and its deadline, as its items keep them."""
    return {
        "approvers": _strings(step.approvers),
        "required_approvals": _n(step.required_approvals),
        **_deadline_attrs(step, "deadline"),
    }


def _deadline_attrs(step: Step, name: str) -> Item:
    """The step's deadline as attribute `name` (none without a deadline)."""
    deadline = step.deadline
    if deadline is None:
        return {}
    escalate_to = {"L": [_s(principal) for principal in deadline.escalate_to]}
    value = {
        "seconds": _n(deadline.seconds),
        "action": _s(deadline.action),
        "escalate_to": escalate_to,
    }
    return {name: {"M": value}}


def _deadline(item: Item, name: str) -> Optional[Deadline]:
    if name not in item:
        return None
    value = item[name]["M"]
    return Deadline(
        int(value["seconds"]["N"]),
        value["action"]["S"],
        tuple(principal["S"] for principal in value["escalate_to"]["L"]),
    )


def _workflow_item(workflow: Workflow) -> Item:
    return {
        "PK": _s(_wf_key(workflow.id)),
        "SK": _s(WORKFLOW_SK),
        "id": _n(workflow.id),
        "name": _s(workflow.name),
        "description": _s(workflow.description),
        "created_at": _s(workflow.created_at),
        "steps": {"L": [_step_entry(step) for step in workflow.steps]},
        "all_pk": _s(WORKFLOWS_PK),
        **{flag: {"BOOL": on} for flag, on in workflow.policy.to_dict().items()},
    }


def _workflow(item: Item) -> Workflow:
    workflow_id = int(item["id"]["N"])
    steps = (_step(entry["M"], workflow_id) for entry in item["steps"]["L"])
    return Workflow(
        workflow_id,
        item["name"]["S"],
        item["description"]["S"],
        item["created_at"]["S"],
        tuple(sorted(steps, key=lambda step: step.step_order)),
        _policy(item),
    )


def _policy(item: Item) -> Policy:
    """The policy flags an item holds (none, on a workflow from before them)."""
    return Policy(*(item.get(flag, {}).get("BOOL", False) for flag in Policy._fields))


def _step_entry(step: Step) -> dict[str, Item]:
    """A step as its workflow item lists it."""
    return {
        "M": {
            "id": _n(step.id),
            "name": _s(step.name),
            "step_order": _n(step.step_order),
            **_rule_attrs(step),
        }
    }


# A step's attributes: in its own item, and as a run item's current step.
_STEP_ATTRIBUTES = ("id", "name", "step_order", "approvers", "required_approvals", "deadline")
_CURRENT_STEP_ATTRIBUTES = (
    "step_id",
    "step_name",
    "step_order",
    "step_approvers",
    "step_required",
    "step_deadline",
)


def _step(item: Item, workflow_id: int, names: tuple[str, ...] = _STEP_ATTRIBUTES) -> Step:
    """The step `item` holds under `names` (items from before quorums: one approval)."""
    step_id, name, order, approvers, required, deadline = names
    return Step(
        int(item[step_id]["N"]),
        workflow_id,
        item[name]["S"],
        int(item[order]["N"]),
        _texts(item, approvers),
        int(item[required]["N"]) if required in item else 1,
        _deadline(item, deadline),
    )


def _current_step_state(run: Run, shards: int) -> tuple[Item, list[str]]:
    """The run item's attributes for where it waits: its current step with that
    step's rules and deadline (in the due index while it is still to apply),
    since when, who approved it so far; and the attributes it must drop."""
    sets: Item = {
        "deadline_passed": {"BOOL": run.deadline_passed},
        "approved_by": _strings(run.current_step_approved_by),
    }
    removed: list[str] = []
    step = run.current_step
    if step is None:
        removed += [
            "step_id",
            "step_name",
            "step_order",
            "step_approvers",
            "step_required",
            "current_step_since",
        ]
    else:
        sets.update(
            step_id=_n(step.id),
            step_name=_s(step.name),
            step_order=_n(step.step_order),
            step_approvers=_strings(step.approvers),
            step_required=_n(step.required_approvals),
            current_step_since=_s(run.current_step_since or ""),
        )
    deadline = _deadline_attrs(step, "step_deadline") if step else {}
    sets.update(deadline)
    removed += [] if deadline else ["step_deadline"]
    if run.current_step_due_at is None:
        removed += ["current_step_due_at", DUE_KEY, DUE_AT]
    else:
        sets["current_step_due_at"] = _s(run.current_step_due_at)
        if not run.deadline_passed:
            sets.update(
                {
                    DUE_KEY: _s(dynamodb_lists.deadline_pk(run.id, shards)),
                    DUE_AT: _s(run.current_step_due_at),
                }
            )
        else:
            removed += [DUE_KEY, DUE_AT]
    return sets, removed


def _run(item: Item, actions: tuple[Action, ...]) -> Run:
    workflow_id = int(item["workflow_id"]["N"])
    current = _step(item, workflow_id, _CURRENT_STEP_ATTRIBUTES) if "step_id" in item else None
    # A run from before quorums reached its step with its last decision.
    since = item.get("current_step_since", item["updated_at"])["S"] if current else None
    return Run(
        int(item["id"]["N"]),
        workflow_id,
        item["title"]["S"],
        item["status"]["S"],
        current,
        item["created_at"]["S"],
        item["updated_at"]["S"],
        actions,
        item["requested_by"]["S"] if "requested_by" in item else None,
        item["head_hash"]["S"] if "head_hash" in item else None,
        _texts(item, "approved_by"),
        since,
        _policy(item.get("policy", {}).get("M", {})),
        _texts(item, "approvers"),
        _event_seq(item),
        item["current_step_due_at"]["S"] if "current_step_due_at" in item else None,
        item.get("deadline_passed", {}).get("BOOL", False),
    )


def _action_item(action: Action, seq: int) -> Item:
    item = {
        "PK": _s(_run_key(action.run_id)),
        "SK": _s(_action_sk(seq)),
        "id": _n(action.id),
        "step_id": _n(action.step_id),
        "step_name": _s(action.step_name),
        "action": _s(action.action),
        "actor": _s(action.actor),
        "comment": _s(action.comment),
        "created_at": _s(action.created_at),
    }
    if action.hash is not None:
        item["hash"] = _s(action.hash)
    return item


def _action(item: Item, run_id: int) -> Action:
    return Action(
        int(item["id"]["N"]),
        run_id,
        int(item["step_id"]["N"]),
        item["step_name"]["S"],
        item["action"]["S"],
        item["actor"]["S"],
        item["comment"]["S"],
        item["created_at"]["S"],
        item["hash"]["S"] if "hash" in item else None,
    )


def _event_seq(item: Item) -> int:
    """The sequence of the last event of the stream whose counter `item` keeps
    (0 for items written before events were)."""
    return int(item["event_seq"]["N"]) if "event_seq" in item else 0


def _event_item(event: Event, time: str, delivery: str) -> Item:
    """An event as recorded: pending delivery; in the due index from its time on
    where this service sends it from the table (not where the stream carries it)."""
    due = {DUE_KEY: _s(DELIVERY_DUE), DUE_AT: _s(time)} if delivery == TABLE_DELIVERY else {}
    return {
        "PK": _s(_event_pk(event.subject)),
        "SK": _s(_event_sk(event.sequence)),
        "event_id": _s(event.id),
        "sequence": _n(event.sequence),
        "type": _s(event.type),
        "event": _s(event.body),
        **due,
    }


def _event(item: Item) -> Event:
    return Event(
        item["event_id"]["S"],
        item["PK"]["S"].removeprefix(EVENT_PREFIX),
        int(item["sequence"]["N"]),
        item["type"]["S"],
        item["event"]["S"],
    )


def _idempotency_key(key: str) -> Item:
    return {"PK": _s(f"IDEM#{key}"), "SK": _s(IDEMPOTENCY_SK)}


def _number(value: float) -> dict[str, str]:
    return {"N": repr(float(value))}


def _body_value(body: str) -> dict[str, Any]:
    encoded = body.encode("utf-8")
    if len(encoded) <= INLINE_BODY_LIMIT:
        return _s(body)
    import zlib

    return {"B": zlib.compress(encoded)}


def _body_text(value: dict[str, Any]) -> str:
    if "S" in value:
        return str(value["S"])
    import zlib

    return zlib.decompress(value["B"]).decode("utf-8")


def _parts(compressed: bytes) -> list[bytes]:
    return [compressed[at : at + PART_BYTES] for at in range(0, len(compressed), PART_BYTES)]


def _idempotency_record(item: Item, body: Optional[dict[str, Any]]) -> IdempotencyRecord:
    """A key's record from its item and its body; without a whole body (or
    status) the key is still in flight, whatever else the item holds."""
    response = None
    if "response_status" in item and body is not None:
        location = item.get("response_location")
        response = StoredResponse(
            int(item["response_status"]["N"]),
            _body_text(body),
            location["S"] if location else None,
        )
    return IdempotencyRecord(
        item["fingerprint"]["S"],
        item["claim_token"]["S"],
        float(item["lease_until"]["N"]),
        int(item[TTL_ATTRIBUTE]["N"]),
        response,
    )


def create_client(session: Optional[boto3.session.Session] = None) -> DynamoDBClient:
    """A DynamoDB client configured the boto3 way (region, profile, endpoint);
    Unavailable, with the log saying what to set, when that configuration is wrong.

    A new session parses botocore's service models (0.3 to 0.6 s), a client from
    an existing one takes about 0.03 s: callers that need several clients pass
    one session. Clients are thread-safe; sessions are not."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    config = Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=3,
        read_timeout=10,
        tcp_keepalive=True,
    )
    try:
        session = session or boto3.session.Session()
        # Lambda and some tools set only AWS_REGION, which botocore does not read.
        region = session.region_name or os.environ.get("AWS_REGION")
        if not region:
            raise unavailable(
                "No AWS region is configured for DynamoDB: set AWS_REGION or "
                "AWS_DEFAULT_REGION (or a region in the AWS_PROFILE's config)"
            )
        return session.client("dynamodb", region_name=region, config=config)
    except (BotoCoreError, ValueError) as exc:
        # AWS_PROFILE naming no profile (ProfileNotFound), an
        # AWS_ENDPOINT_URL_DYNAMODB that is no URL (ValueError), ...
        raise unavailable(
            f"The DynamoDB client cannot be created: {exc}. Check AWS_PROFILE, "
            "AWS_REGION and AWS_ENDPOINT_URL_DYNAMODB"
        ) from exc


def table_name() -> str:
    name = os.environ.get("WORKFLOW_TABLE", "").strip()
    if not name:
        raise unavailable(
            "WORKFLOW_TABLE is not set: set it to the DynamoDB table's name "
            "(`make dynamodb-table` creates one)"
        )
    return name


# What the log tells the operator to do about a request DynamoDB refused, by
# error code; any other code is a passing fault (throttling, a server error)
# that outlasted the retries.
_CREDENTIALS_FIX = (
    "check the AWS credentials and region (AWS_PROFILE, AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION)"
)
_FIXES = {
    "ResourceNotFoundException": (
        "the table does not exist there: create it with `make dynamodb-table`, "
        "or set WORKFLOW_TABLE to a table that exists"
    ),
    "AccessDeniedException": (
        "the credentials may not do this: grant the actions that docs/deploy.md lists"
    ),
    "UnrecognizedClientException": _CREDENTIALS_FIX,
    "InvalidSignatureException": _CREDENTIALS_FIX,
    "IncompleteSignature": _CREDENTIALS_FIX,
    "MissingAuthenticationToken": _CREDENTIALS_FIX,
    "ExpiredTokenException": _CREDENTIALS_FIX,
}


def _not_answered(
    client: DynamoDBClient, table: str, operation: str, exc: BotoCoreError
) -> errors.Unavailable:
    """The 503 for a request that got no answer from DynamoDB, logged with why."""
    from botocore.exceptions import NoCredentialsError

    if isinstance(exc, NoCredentialsError):
        return unavailable(
            f"DynamoDB {operation} on table {table!r} was not sent: no AWS credentials "
            "were found. Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    # Unreachable after the retries, a timeout, a partial set of credentials, ...
    return unavailable(
        f"DynamoDB {operation} on table {table!r} at {client.meta.endpoint_url} failed: {exc}",
        transient=True,
    )


def _refused(client: DynamoDBClient, table: str, exc: ClientError) -> errors.Unavailable:
    """The 503 for a request DynamoDB refused, logged with its code and what to do."""
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    fix = _FIXES.get(code)
    return unavailable(
        f"DynamoDB refused {exc.operation_name} on table {table!r} at "
        f"{client.meta.endpoint_url} ({code}: {error.get('Message', '')}): "
        + (fix or "retries ran out; retry later, or raise the table's capacity if it persists"),
        transient=fix is None,
    )
