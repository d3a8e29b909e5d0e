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

No boto3 here: the adapter runs the Queries; these functions merge what they return.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.domain.record import Record
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
