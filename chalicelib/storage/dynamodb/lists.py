"""DynamoDB's shared lists: which partitions a run is in (the run lists, the
inboxes, the deadlines to apply), and one page of a run list merged from its
shards.

Every run list is an index partition split into `shards` partitions: a run
lands in shard `id % shards` of each list it belongs to, so that no list
partition takes more than 1/shards of the writes of its list (DynamoDB serves
about 1,000 writes per second per partition key, an index's included):

    index                    partition key              value
    runs                     runs_pk                    RUNS#<shard>
    runs_by_workflow         workflow_runs_pk           WF#<workflow id>#<shard>
    runs_by_status           status_runs_pk             <status>#<shard>
    runs_by_workflow_status  workflow_status_runs_pk    WF#<workflow id>#<status>#<shard>

The indexes hold keys only: a decision that leaves a run's status as it was
changes none of its index keys, so it writes no index at all; a decision that
ends a run moves its two status entries (a delete and a put each). A page is
one Query per shard, merged newest first, and one BatchGetItem of the runs it
shows, read consistently: rows are as GET /runs/{id} shows them at that
moment, and a run whose status no longer matches the list's (its entry has not
moved yet) is left out.

The inboxes (table partitions, read consistently) are spread the same way
where all traffic can reach them: a group's inbox and that of the steps open
to anyone (ANYONE) are `shards` partitions, INBOX#<shard>#<principal>; a
user's is one, INBOX#<principal>, as what lands in it is paced by what one
person can be asked to decide. The sparse due index spreads the runs whose
deadline is still to apply over DEADLINE#<shard>, four times as many shards
(the sweeper alone reads them, once a minute).

`shards` comes from WORKFLOW_LIST_SHARDS (default 16), the same for every
container of a service. It may be raised at any time: a run keeps the shard it
was written to, and a list reads every shard below the setting. Lowering it
would hide the runs in the shards above it.

No boto3 here: the adapter runs the Queries; these functions say which, and
merge what they return.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Optional

from chalicelib.domain.record import Record
from chalicelib.storage.dynamodb.schema import (
    DEADLINE_DUE,
    RUNS_BY_STATUS_INDEX,
    RUNS_BY_WORKFLOW_INDEX,
    RUNS_BY_WORKFLOW_STATUS_INDEX,
    RUNS_INDEX,
)
from chalicelib.storage.failures import unavailable

Item = dict[str, dict[str, Any]]

SHARDS_VARIABLE = "WORKFLOW_LIST_SHARDS"
DEFAULT_SHARDS = 16
# BatchGetItem reads at most 100 keys; pages hold at most 100 runs.
MAX_SHARDS = 100


def configured_shards() -> int:
    """WORKFLOW_LIST_SHARDS (default 16); Unavailable, logged, if it is no count."""
    raw = os.environ.get(SHARDS_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_SHARDS
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_SHARDS:
        raise unavailable(
            f"{SHARDS_VARIABLE} is {raw!r}: set it to a whole number from 1 to {MAX_SHARDS} "
            f"(default {DEFAULT_SHARDS}), never lower than it has been for the table"
        )
    return int(raw)


INBOX_PREFIX = "INBOX#"
# The inbox of steps that name no approvers: anyone may decide them.
ANYONE = "*"


def inbox_pk(principal: str, run_id: int, shards: int) -> str:
    """The partition of `principal`'s inbox that holds run `run_id`'s entries."""
    if principal.startswith("user:"):
        return INBOX_PREFIX + principal
    return f"{INBOX_PREFIX}{run_id % shards}#{principal}"


def inbox_pks(principal: str, shards: int) -> list[str]:
    """Every partition of `principal`'s inbox. A principal never starts with a
    digit, so a shard's key cannot be mistaken for another principal's."""
    if principal.startswith("user:"):
        return [INBOX_PREFIX + principal]
    return [f"{INBOX_PREFIX}{shard}#{principal}" for shard in range(shards)]


# Deadlines take this many shards per list shard: every step change of a run
# with a deadline moves its entry (a delete and a put), and only the sweeper,
# once a minute, reads them all.
DEADLINE_SHARDS_PER_SHARD = 4


def deadline_pk(run_id: int, shards: int) -> str:
    """The due index partition of a run whose deadline is still to apply."""
    return f"{DEADLINE_DUE}#{run_id % (shards * DEADLINE_SHARDS_PER_SHARD)}"


def deadline_pks(shards: int) -> list[str]:
    """Every due index partition of deadlines; the first, unsharded, holds those
    of tables from before the shards."""
    count = shards * DEADLINE_SHARDS_PER_SHARD
    return [DEADLINE_DUE, *(f"{DEADLINE_DUE}#{shard}" for shard in range(count))]


def _workflow_part(workflow_id: int) -> str:
    return f"WF#{workflow_id}"


def status_keys(run_id: int, workflow_id: int, status: str, shards: int) -> Item:
    """A run's index keys that follow its status."""
    shard = run_id % shards
    return {
        "status_runs_pk": {"S": f"{status}#{shard}"},
        "workflow_status_runs_pk": {"S": f"{_workflow_part(workflow_id)}#{status}#{shard}"},
    }


def run_keys(run_id: int, workflow_id: int, status: str, shards: int) -> Item:
    """Every index key of a run: what puts it into each of the four run lists."""
    shard = run_id % shards
    return {
        "runs_pk": {"S": f"RUNS#{shard}"},
        "workflow_runs_pk": {"S": f"{_workflow_part(workflow_id)}#{shard}"},
        **status_keys(run_id, workflow_id, status, shards),
    }


def partitions(
    workflow_id: Optional[int], status: Optional[str], shards: int
) -> tuple[str, list[str]]:
    """The index and its partitions (one per shard) that list the runs of
    `workflow_id` and `status` (None: any)."""
    if workflow_id is not None and status is not None:
        index, prefix = RUNS_BY_WORKFLOW_STATUS_INDEX, f"{_workflow_part(workflow_id)}#{status}"
    elif workflow_id is not None:
        index, prefix = RUNS_BY_WORKFLOW_INDEX, _workflow_part(workflow_id)
    elif status is not None:
        index, prefix = RUNS_BY_STATUS_INDEX, status
    else:
        index, prefix = RUNS_INDEX, "RUNS"
    return index, [f"{prefix}#{shard}" for shard in range(shards)]


class ShardPage(Record):
    """What one Query of one shard read: its entries (newest first), and whether
    the shard may hold more below the last of them."""

    entries: list[Item]
    more: bool


def shard_limit(limit: int) -> int:
    """The entries to ask each shard for, for a page of `limit`: one shard may
    hold the whole page, and one more entry tells whether any follow."""
    return limit + 1


def newest_first(read: Sequence[ShardPage], limit: int) -> tuple[list[Item], bool]:
    """The page of up to `limit` entries merged from the shards' Queries (each
    asked for shard_limit(limit) entries below the same id), newest first, and
    whether any follow.

    Should a shard stop short (DynamoDB's 1 MB per Query), its last entry bounds
    the page: entries below it may still be unread in that shard, so the page
    ends there and the next continues below its last entry."""
    entries = [entry for page in read for entry in page.entries]
    unread_below = [_id(page.entries[-1]) for page in read if page.more and page.entries]
    if unread_below:
        floor = max(unread_below)
        entries = [entry for entry in entries if _id(entry) >= floor]
    entries.sort(key=_id, reverse=True)
    more = len(entries) > limit or any(page.more for page in read)
    return entries[:limit], more


def _id(entry: Item) -> int:
    return int(entry["id"]["N"])
