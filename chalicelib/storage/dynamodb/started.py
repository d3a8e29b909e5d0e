"""DynamoDB: the runs of a workflow started in a window, with their histories
(the figures of GET /workflows/{id}/stats, chalicelib/domain/stats.py).

Bounded reads, no Scan:

1. one Query per shard of the workflow's partitions of the index
   runs_by_workflow_started (keys only, sorted by created_at), sent at once,
   each for at most `max_runs` + 1 entries of the window; merged by
   (created_at, id), the first `max_runs` kept;
2. their run items, by their keys (BatchGetItem, 100 keys each): each says
   how long its history is (`seq`);
3. the action items of the first runs whose histories fit in `max_actions`,
   by their keys (ACT#1 .. ACT#<seq>; BatchGetItem, 100 keys each).

So an answer costs at most 16 Queries and 10 + 100 BatchGetItems. Each run's
history is read up to the length its item said: a decision written meanwhile
is not half seen. The index is eventually consistent: a run started a moment
ago may be missing from it.
"""

from __future__ import annotations

import functools
from typing import Any

from chalicelib.domain.models import Action, Run, Slice
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import Requests, s
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.schema import CREATED_AT, INDEX_KEYS, RUNS_STARTED_INDEX


class StartedRuns:
    """The runs read for a workflow's figures, over the adapter's requests."""

    requests: Requests
    shards: int

    def runs_started_between(
        self, workflow_id: int, start: str, end: str, max_runs: int, max_actions: int
    ) -> Slice[Run]:
        read = self.requests.in_parallel(
            functools.partial(self._started_in, start=start, end=end, limit=max_runs + 1),
            keys.workflow_run_pks(workflow_id, self.shards),
        )
        entries = sorted(
            (entry for shard in read for entry in shard),
            key=lambda entry: (entry[CREATED_AT]["S"], keys.run_id_of(entry["PK"]["S"])),
        )
        heads = self.requests.get_items(
            [items.key(entry["PK"]["S"], keys.RUN_SK) for entry in entries[:max_runs]]
        )
        chosen: list[Item] = []
        actions = 0
        for head in heads:
            actions += int(head["seq"]["N"])
            if actions > max_actions:
                break
            chosen.append(head)
        histories = self._histories(chosen)
        runs = tuple(items.run_of(head, histories[head["PK"]["S"]]) for head in chosen)
        return Slice(runs, len(entries) > len(chosen))

    def _started_in(self, pk: str, start: str, end: str, limit: int) -> list[Item]:
        """Up to `limit` entries of one shard started from `start` to before `end`."""
        found: list[Item] = []
        params: dict[str, Any] = {
            "TableName": self.requests.table,
            "IndexName": RUNS_STARTED_INDEX,
            # BETWEEN includes `end`: the entries at it, the shard's last, are dropped.
            "KeyConditionExpression": "#pk = :pk AND #at BETWEEN :start AND :end",
            "ExpressionAttributeNames": {"#pk": INDEX_KEYS["runs_by_workflow"], "#at": CREATED_AT},
            "ExpressionAttributeValues": {":pk": s(pk), ":start": s(start), ":end": s(end)},
            "Limit": limit,
        }
        for entry in self.requests.query_all(params):
            if entry[CREATED_AT]["S"] >= end:
                break
            found.append(entry)
            if len(found) == limit:
                break
        return found

    def _histories(self, heads: list[Item]) -> dict[str, tuple[Action, ...]]:
        """Each run's actions (by its PK), read by their keys up to its item's `seq`."""
        wanted = [
            items.key(head["PK"]["S"], keys.action_sk(seq))
            for head in heads
            for seq in range(1, int(head["seq"]["N"]) + 1)
        ]
        found: dict[str, list[Action]] = {head["PK"]["S"]: [] for head in heads}
        for item in self.requests.get_items(wanted):
            run_id = keys.run_id_of(item["PK"]["S"])
            found[item["PK"]["S"]].append(items.action_of(item, run_id))
        return {pk: tuple(actions) for pk, actions in found.items()}
