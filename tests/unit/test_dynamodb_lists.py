"""Run lists merged from their shards (chalicelib/storage/dynamodb/lists.py): pure."""

from __future__ import annotations

from typing import Optional

import pytest

from chalicelib.storage.dynamodb import keys as dynamodb_keys
from chalicelib.storage.dynamodb import lists as dynamodb_lists
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.lists import ShardPage


def _entry(run_id: int) -> Item:
    return {"id": {"N": str(run_id)}}


def _shards(ids: list[int], shards: int) -> dict[str, list[int]]:
    return {
        f"s{n}": sorted((i for i in ids if i % shards == n), reverse=True) for n in range(shards)
    }


def _query(stored: dict[str, list[int]], cut_at: Optional[int] = None):
    """A shard Query over `stored`; with `cut_at`, each reads at most that many
    entries however many are asked for (as DynamoDB stops a Query at 1 MB)."""

    def query(pk: str, before: Optional[int], limit: int) -> ShardPage:
        below = [i for i in stored[pk] if before is None or i < before]
        take = min(limit, cut_at) if cut_at else limit
        return ShardPage([_entry(i) for i in below[:take]], len(below) > take)

    return query


def _walk(
    stored: dict[str, list[int]], limit: int, cut_at: Optional[int] = None
) -> list[list[int]]:
    pages: list[list[int]] = []
    before = None
    while True:
        query = _query(stored, cut_at)
        read = [query(pk, before, dynamodb_lists.shard_limit(limit)) for pk in stored]
        entries, more = dynamodb_lists.newest_first(read, limit)
        pages.append([int(entry["id"]["N"]) for entry in entries])
        if not more:
            return pages
        before = pages[-1][-1]
        assert len(pages) < 1000


@pytest.mark.parametrize("shards", [1, 3, 8])
@pytest.mark.parametrize("limit", [1, 2, 5, 50])
def test_pages_merge_the_shards_newest_first_each_run_once(shards: int, limit: int) -> None:
    ids = [1, 2, 3, 5, 8, 13, 21, 34, 35, 36, 37, 40, 41, 99, 100, 101]
    pages = _walk(_shards(ids, shards), limit)

    assert [i for page in pages for i in page] == sorted(ids, reverse=True)
    assert all(len(page) == limit for page in pages[:-1])


@pytest.mark.parametrize("cut_at", [1, 2, 3])
def test_a_shard_cut_short_ends_the_page_where_its_unread_runs_begin(cut_at: int) -> None:
    ids = list(range(1, 40))
    pages = _walk(_shards(ids, 4), 10, cut_at)

    assert [i for page in pages for i in page] == sorted(ids, reverse=True)
    assert all(page for page in pages)


def test_an_empty_list_is_one_empty_page() -> None:
    assert _walk(_shards([], 4), 10) == [[]]


def test_a_run_keeps_its_shard_in_every_list_and_its_status_keys_follow_its_status() -> None:
    keys = dynamodb_keys.run_keys(42, 7, "in_progress", 8)
    # In progress, over twice the shards (a run enters and leaves those lists).
    assert {name: value["S"] for name, value in keys.items()} == {
        "runs_pk": "RUNS#2",
        "workflow_runs_pk": "WF#7#2",
        "status_runs_pk": "in_progress#10",
        "workflow_status_runs_pk": "WF#7#in_progress#10",
    }
    ended = dynamodb_keys.status_keys(42, 7, "completed", 8)
    assert {name: value["S"] for name, value in ended.items()} == {
        "status_runs_pk": "completed#2",
        "workflow_status_runs_pk": "WF#7#completed#2",
    }
    assert dynamodb_keys.partitions(7, "completed", 3) == (
        "runs_by_workflow_status",
        ["WF#7#completed#0", "WF#7#completed#1", "WF#7#completed#2"],
    )
    assert dynamodb_keys.partitions(None, "in_progress", 2) == (
        "runs_by_status",
        ["in_progress#0", "in_progress#1", "in_progress#2", "in_progress#3"],
    )
    assert dynamodb_keys.partitions(None, None, 2) == ("runs", ["RUNS#0", "RUNS#1"])


def test_the_open_steps_inbox_takes_three_times_a_group_s_shards() -> None:
    assert dynamodb_keys.inbox_pk("*", 42, 8, 24) == "INBOX#18#*"
    assert dynamodb_keys.inbox_pk("group:ops", 42, 8, 24) == "INBOX#2#group:ops"
    assert dynamodb_keys.inbox_pk("user:ann", 42, 8, 24) == "INBOX#user:ann"
    assert len(dynamodb_keys.inbox_pks("*", 8, dynamodb_keys.open_inbox_shards(8))) == 24
    assert dynamodb_keys.inbox_pks("group:ops", 2, 6) == ["INBOX#0#group:ops", "INBOX#1#group:ops"]
