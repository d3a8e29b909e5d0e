"""Counting the requests a DynamoDB adapter sends, by operation."""

from __future__ import annotations

import collections
from typing import Any

from chalicelib.storage.dynamodb import adapter as dynamodb


class RequestLog:
    """Counts the DynamoDB operations the client sends, by name."""

    def __init__(self, storage: dynamodb.DynamoDBStorage) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        storage.client.meta.events.register("before-call.dynamodb", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1

    def reset(self) -> None:
        self.counts.clear()

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class QueryLog(RequestLog):
    """A RequestLog that also keeps the parameters of each request."""

    def __init__(self, storage: dynamodb.DynamoDBStorage) -> None:
        super().__init__(storage)
        self.params: list[tuple[str, dict[str, Any]]] = []
        storage.client.meta.events.register("provide-client-params.dynamodb.*", self._keep)

    def _keep(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.params.append((model.name, dict(params)))

    def reset(self) -> None:
        super().reset()
        self.params.clear()
