"""One-time upgrades of a DynamoDB table written before a feature, for the
scripts that run them (scripts/backfill_audit_chain.py, scripts/backfill_inbox.py,
scripts/migrate_list_indexes.py), never for a request: each Scans the whole table.

Where an upgrade stores what the rules compute (the audit chain's hashes, the
inbox keys of a waiting run), the script hands it the rules' function: this
module stores what it computes. Every write is conditional on the item being
as it was read, so a decision recorded meanwhile is never overwritten, and
running an upgrade twice finds nothing to do the second time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import IN_PROGRESS, Run
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.keys import Item


def unchained_run_ids(requests: Requests) -> Iterator[int]:
    """The runs with history from before the audit chain (a run without its
    head_hash, or an action without its hash), each once. One Scan of the
    whole table: for scripts/backfill_audit_chain.py, never for a request."""
    return _scan_run_ids(
        requests,
        "(SK = :run AND attribute_not_exists(head_hash)) "
        "OR (begins_with(SK, :action) AND attribute_not_exists(#hash))",
        {"#hash": "hash"},
        {":run": s(keys.RUN_SK), ":action": s(keys.ACTION_PREFIX)},
    )


def _scan_run_ids(
    requests: Requests, condition: str, names: dict[str, str], values: Item
) -> Iterator[int]:
    """The ids of the runs with an item that meets `condition`, each once:
    one Scan of the whole table, for the scripts that upgrade a table."""
    params: dict[str, Any] = {
        "TableName": requests.table,
        "ProjectionExpression": "PK",
        "FilterExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    seen: set[int] = set()
    while True:
        page = requests.call("scan", **params)
        for item in page["Items"]:
            run_id = keys.run_id_of(item["PK"]["S"])
            if run_id not in seen:
                seen.add(run_id)
                yield run_id
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def chain_recorded_history(
    requests: Requests, run_id: int, chain: Callable[[Run], list[str]]
) -> int:
    """Store the hashes that the run's history lacks, computed from its stored
        values in history order by `chain` (the audit chain's recomputed: the
    rules' to compute, handed in); how many were stored.

        Conflict, and nothing written, if a hash it has already is not the one
        its values give: that history changed after it was chained, and stays as
        it is for GET /runs/{id}/audit to show. Every write is conditional, so a
        decision recorded meanwhile (which chains itself) is never overwritten."""
    stored_items = list(requests.query_partition(keys.run_pk(run_id)))
    head = next((item for item in stored_items if item["SK"]["S"] == keys.RUN_SK), None)
    if head is None:
        raise errors.run_not_found(run_id)
    recorded = [item for item in stored_items if item["SK"]["S"].startswith(keys.ACTION_PREFIX)]
    run = items.run_of(head, tuple(items.action_of(item, run_id) for item in recorded))
    genesis, *hashes = chain(run)
    for seq, (action, expected) in enumerate(zip(run.actions, hashes, strict=True), start=1):
        if action.hash not in (None, expected):
            raise errors.Conflict(
                f"Run {run_id}: the stored hash of seq {seq} is not that of its values"
            )
    stored = 0
    for item, action, expected in zip(recorded, run.actions, hashes, strict=True):
        if action.hash is None:
            stored += _set_if_absent(requests, item, "hash", expected)
    if run.head_hash is None:
        # Only while no decision moved the run since it was read: one that
        # did set its own head.
        stored += _set_if_absent(
            requests, head, "head_hash", (hashes or [genesis])[-1], head["seq"]
        )
    return stored


def _set_if_absent(
    requests: Requests, item: Item, name: str, value: str, seq: Optional[dict[str, str]] = None
) -> int:
    """Set attribute `name` of `item` to `value` unless it has one (or, with
    `seq`, unless the item's seq has moved on); 1 if it did, else 0."""
    from botocore.exceptions import ClientError

    condition = "attribute_not_exists(#name)"
    values: Item = {":value": s(value)}
    if seq is not None:
        condition += " AND seq = :seq"
        values[":seq"] = seq
    try:
        requests.call(
            "update_item",
            TableName=requests.table,
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


def unindexed_run_ids(requests: Requests) -> Iterator[int]:
    """The runs in progress from before the inbox (no current_step_since, so
    no inbox entries). One Scan: for scripts/backfill_inbox.py, never for a
    request."""
    return _scan_run_ids(
        requests,
        "SK = :run AND #status = :in_progress AND attribute_not_exists(current_step_since)",
        {"#status": "status"},
        {":run": s(keys.RUN_SK), ":in_progress": s(IN_PROGRESS)},
    )


def index_waiting_run(
    requests: Requests, run_id: int, awaited_by: Callable[[Run], tuple[str, ...]], shards: int
) -> bool:
    """Give a run from before the inbox its entries and current_step_since
    (its last update: before quorums, it reached its step with its last
    decision), in one transaction conditional on the run not having moved
    since it was read; False if it had (a decision indexes it itself)."""
    item = requests.read_item(s(keys.run_pk(run_id)), s(keys.RUN_SK))
    if item is None or "current_step_since" in item or item["status"]["S"] != IN_PROGRESS:
        return False
    run = items.run_of(item, ())
    assert run.current_step is not None and run.current_step_since is not None
    update = {
        "Update": {
            "TableName": requests.table,
            "Key": {"PK": item["PK"], "SK": item["SK"]},
            "UpdateExpression": "SET current_step_since = :since",
            "ConditionExpression": "seq = :seq AND attribute_not_exists(current_step_since)",
            "ExpressionAttributeValues": {
                ":since": s(run.current_step_since),
                ":seq": item["seq"],
            },
        }
    }
    puts = [
        {
            "Put": {
                "TableName": requests.table,
                "Item": items.inbox_item(
                    key, run_id, run.current_step.id, run.current_step_since, shards
                ),
            }
        }
        for key in awaited_by(run)
    ]
    return not requests.transact([update, *puts])


def misplaced_inbox_entries(
    requests: Requests, shards: int, rekey: Callable[[str], str]
) -> Iterator[Item]:
    """The inbox entries not in the partition the keys put them in now: a
    group's or the open steps' still in the one partition each had before
    those were sharded (INBOX#group:<name>, INBOX#*), and those whose
    principal is not the key the rules compare (`rekey`: a name as given,
    from before names were compared by their canonical key). One Scan: for
    scripts/backfill_inbox.py, never for a request."""
    params: dict[str, Any] = {
        "TableName": requests.table,
        "FilterExpression": "begins_with(PK, :inbox)",
        "ExpressionAttributeValues": {":inbox": s(keys.INBOX_PREFIX)},
    }
    while True:
        page = requests.call("scan", **params)
        for entry in page["Items"]:
            if _placed(entry, shards, rekey) != entry["PK"]["S"]:
                yield entry
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _placed(entry: Item, shards: int, rekey: Callable[[str], str]) -> str:
    """The partition an inbox entry belongs in now."""
    principal = rekey(keys.principal_of(entry["PK"]["S"]))
    return keys.inbox_pk(principal, int(entry["run_id"]["N"]), shards)


def move_inbox_entry(
    requests: Requests, entry: Item, shards: int, rekey: Callable[[str], str]
) -> bool:
    """Move an entry of misplaced_inbox_entries where it belongs, in one
    transaction conditional on its run still waiting at its step; True if
    moved, False if its run has moved on (the entry is then only deleted)."""
    run_id = int(entry["run_id"]["N"])
    placed = {**entry, "PK": s(_placed(entry, shards, rekey))}
    misplaced = {"PK": entry["PK"], "SK": entry["SK"]}
    still_waiting = {
        "ConditionCheck": {
            "TableName": requests.table,
            "Key": {"PK": s(keys.run_pk(run_id)), "SK": s(keys.RUN_SK)},
            "ConditionExpression": "#status = :in_progress AND step_id = :step",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":in_progress": s(IN_PROGRESS),
                ":step": entry["step_id"],
            },
        }
    }
    moved = not requests.transact(
        [
            still_waiting,
            {"Put": {"TableName": requests.table, "Item": placed}},
            {"Delete": {"TableName": requests.table, "Key": misplaced}},
        ]
    )
    if not moved:
        requests.call("delete_item", TableName=requests.table, Key=misplaced)
    return moved


def raise_step_count(
    requests: Requests, workflow_id: int, count: int, copies: Sequence[int]
) -> int:
    """Set the workflow's step count copies `copies` to `count` where they are
    lower or missing (never lower one: an append may have raised it since
    `count` was read); how many it set. For workflows appended to before the
    copies existed (scripts/migrate_list_indexes.py)."""
    from botocore.exceptions import ClientError

    raised = 0
    for copy in copies:
        try:
            requests.call(
                "update_item",
                TableName=requests.table,
                Key=items.key(keys.step_count_pk(workflow_id, copy), keys.STEP_COUNT_SK),
                UpdateExpression="SET step_count = :count",
                ConditionExpression="attribute_not_exists(step_count) OR step_count < :count",
                ExpressionAttributeValues={":count": n(count)},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue
        raised += 1
    return raised
