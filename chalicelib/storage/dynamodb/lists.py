"""DynamoDB's run lists: one page merged from the shards of its list.

Every run list is an index partition split into `shards` partitions (keys.py
names them): a run lands in shard `id % shards` of each list it belongs to, so
that no list partition takes more than 1/shards of the writes of its list
(DynamoDB serves about 1,000 writes per second per partition key, an index's
included).

The indexes hold keys only: a decision that leaves a run's status as it was
changes none of its index keys, so it writes no index at all; a decision that
ends a run moves its two status entries (a delete and a put each). A page is
one Query per shard, merged newest first here, and one BatchGetItem of the
runs it shows, read consistently: rows are as GET /runs/{id} shows them at
that moment, and a run whose status no longer matches the list's (its entry
has not moved yet) is left out.

The inboxes are read the same way: one Query per inbox partition of each of
the caller's keys (keys.py), sent at once, merged in (since, run id) order, and
one consistent read of the runs of the page.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Optional

from chalicelib.domain.models import Run, Slice
from chalicelib.domain.record import Record
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import Requests
from chalicelib.storage.dynamodb.keys import Item


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


class Lists:
    """The run lists and the inboxes of the DynamoDB adapter, over its requests."""

    requests: Requests
    shards: int

    def list_runs(
        self,
        workflow_id: Optional[int],
        status: Optional[str],
        before_id: Optional[int],
        limit: int,
    ) -> Slice[Run]:
        index, shard_pks = keys.partitions(workflow_id, status, self.shards)
        read = self.requests.in_parallel(
            functools.partial(self._query_shard, index, before=before_id, limit=shard_limit(limit)),
            shard_pks,
        )
        entries, more = newest_first(read, limit)
        found = self.requests.get_items([{"PK": e["PK"], "SK": e["SK"]} for e in entries])
        runs = [items.run_of(item, ()) for item in found]
        # An entry whose run has changed status since is left out: its run shows
        # in the list of its status now, as DynamoDB moves the entry there.
        shown = tuple(run for run in runs if status is None or run.status == status)
        last = int(entries[-1]["id"]["N"]) if entries else None
        # The next page starts below the last entry read, shown or not.
        return Slice(shown, more, None if shown and shown[-1].id == last else last)

    def _query_shard(self, index: str, pk: str, before: Optional[int], limit: int) -> ShardPage:
        """Up to `limit` entries of one shard of a run list, newest first."""
        page = self.requests.query_index(index, pk, before, limit, newest_first=True)
        return ShardPage(page["Items"], "LastEvaluatedKey" in page)

    def inbox(
        self, principals: Sequence[str], after: Optional[tuple[str, int]], limit: int
    ) -> Slice[Run]:
        # One Query per inbox partition of each principal (a user's; each
        # group's and anyone's, sharded), sent at once, each in (since, run id)
        # order, merged; then the runs of the first `limit` entries in one
        # consistent read. An entry whose run has left its step since is
        # dropped, and the page is shorter.
        shards = self.shards, keys.open_inbox_shards(self.shards)
        pks = [pk for principal in principals for pk in keys.inbox_pks(principal, *shards)]
        read = self.requests.in_parallel(
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
        # An entry counts only while its run waits at its step since it says:
        # one its run left (the stream's relay deletes those a little later)
        # or one of an earlier round at the same step is not shown.
        page = tuple(
            runs[run_id]
            for sk, run_id, step_id in ordered
            if run_id in runs
            and runs[run_id].current_step_id == step_id
            and runs[run_id].current_step_since == keys.inbox_position(sk)[0]
        )
        resume = keys.inbox_position(ordered[-1][0]) if ordered else None
        return Slice(page, more and bool(ordered), resume)

    def _inbox_entries(
        self, pk: str, after: Optional[tuple[str, int]], limit: int
    ) -> tuple[list[tuple[str, int, int]], bool]:
        """Up to `limit` + 1 (sort key, run id, step id) of inbox partition `pk`
        after `after`, in order, and whether more follow them."""
        found, more = self.requests.query_after(
            pk, keys.inbox_sk(*after) if after else None, limit + 1
        )
        entries = [
            (item["SK"]["S"], int(item["run_id"]["N"]), int(item["step_id"]["N"])) for item in found
        ]
        return entries, more and bool(entries)

    def _runs_by_id(self, run_ids: set[int]) -> dict[int, Run]:
        """The runs (without actions) with these ids, read consistently."""
        found = self.requests.get_items(
            [items.key(keys.run_pk(run_id), keys.RUN_SK) for run_id in sorted(run_ids)]
        )
        return {run.id: run for run in (items.run_of(item, ()) for item in found)}
