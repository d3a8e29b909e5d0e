"""Ids as the store allocates them: each kind of record counts from 1, on a
counter item of its own (COUNTER#<kind>), as SQLite's tables do.

Ids come from the counter in blocks: one counter write per block, so the
counter stays far from its partition's write limit however many containers
run, and ids stay unique across them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from chalicelib.storage.dynamodb import keys
from chalicelib.storage.dynamodb.client import Requests, n, s

ID_KINDS = ("workflow", "step", "run", "action", "delegation")
ID_BLOCK = 1000


class IdBlocks:
    """Hands out integer ids from blocks reserved on the counter item."""

    def __init__(self, reserve: Callable[[int], int], block: int = ID_BLOCK) -> None:
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


class Counters:
    """The id blocks of every kind, reserved on one table's counters."""

    def __init__(self, requests: Requests, block: int = ID_BLOCK) -> None:
        self.requests = requests
        self.blocks = {
            kind: IdBlocks(functools.partial(self.reserve, kind), block) for kind in ID_KINDS
        }

    def take(self, kind: str, count: int = 1) -> list[int]:
        """`count` new ids of `kind`."""
        return self.blocks[kind].take(count)

    def reserve(self, kind: str, count: int) -> int:
        """Reserve `count` ids of `kind` on its counter; the highest of them."""
        answer = self.requests.call(
            "update_item",
            TableName=self.requests.table,
            Key={"PK": s(keys.counter_pk(kind)), "SK": s(keys.COUNTER_SK)},
            UpdateExpression="ADD next_id :n",
            ExpressionAttributeValues={":n": n(count)},
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["next_id"]["N"])
