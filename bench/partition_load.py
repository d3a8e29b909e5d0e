"""Benchmark 5: partition load, replaying a synthetic workload through the DynamoDB adapter.

Runs of many workflows are started and decided through DynamoDBStorage (and the
engine) against moto in this process. Every write the adapter sends is
recorded by the partition it lands on: the table's partition key of each item
written (a ConditionCheck counts: DynamoDB bills it as a write), and the
partition key of each index entry the write puts, changes or deletes (what the
index holds of the item: whole workflows, runs' keys only). Capacity units as
bench/dynamodb_cost.py counts them: per 1 KB, doubled in a transaction,
index writes not doubled.

The replay gives each shared partition's share of the writes per decision
(approve or reject); at 10,000 decisions per second it takes that share times
the writes per second of the whole workload. Shared partitions are those that
all traffic can reach: every index partition, the id counters, the step count
copies. A run's own partition (RUN#<id>: the run and its history) and a
workflow's (WF#<id>, WFNAME#<name>) take a bounded number of writes over the
entity's life (a run's: one per decision, plus its start), paced by its
approvers rather than by the service's traffic, and are reported as such.
DynamoDB serves about 1,000 write units per second per partition key (an
index's included); the goal is the busiest shared partition under that.
Every step names one of 12 groups as its approvers and has a deadline (a
reminder after a day), so every decision moves inbox entries and the due
index as well as the run lists; events are delivered by the table's stream,
as deployed (WORKFLOW_EVENT_DELIVERY=stream), so the inbox entries a decision
leaves are the relay's to delete: its deletes are run after each decision
(through the relay's code, bench/dynamodb_cost.py's relay_writes) and
counted with the decision's. Four workloads:

  spread       40 workflows of 1 to 5 steps, runs spread evenly; 1 in 10
               runs is rejected at a random step
  one busy     the same, 90% of the runs on one workflow of 3 steps
  single step  every workflow one step: each decision ends a run and a run
               starts for it, the most list writes per decision there is
  open steps   as spread, but no step names approvers (anyone may decide:
               the seed's default), so every inbox entry is in the open
               steps' inbox

Two of moto's slow paths are shortcut (bench/moto_process.py, speed_up_moto):
its copy of the table per transaction item and its sort of the whole table
per Query.
"""

from __future__ import annotations

import collections
import os
import random
from collections.abc import Iterator
from typing import Any, NamedTuple

from bench import moto_process
from bench._common import Figure, Report, offline_aws_env, scaled
from bench.dynamodb_cost import item_size, projected, write_units
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import keys as dynamodb_keys

RATE = 10_000  # decisions per second, service-wide
PARTITION_LIMIT = 1_000  # write units per second per partition key
DECISIONS = scaled(1_500, 200)
PENDING = "bench.partition_load.pending"


GROUPS = tuple(f"team-{n}" for n in range(12))
DEADLINE_SECONDS = 86_400
EVERY_GROUP = frozenset(GROUPS)  # the deciders may decide every step


class Workload(NamedTuple):
    name: str
    steps: tuple[int, ...]  # steps of each workflow
    busy_share: float  # share of the runs on workflow 0 (0: spread evenly)
    reject_share: float
    named: bool = True  # steps name a group as approvers (else anyone may decide)


WORKLOADS = (
    Workload("spread", (1, 2, 3, 4, 5) * 8, 0.0, 0.1),
    Workload("one busy", (3,) + (1, 2, 3, 4, 5) * 8, 0.9, 0.1),
    Workload("single step", (1,) * 40, 0.0, 0.1),
    Workload("open steps", (1, 2, 3, 4, 5) * 8, 0.0, 0.1, named=False),
)


def step_rules(workload: Workload, workflow: int, steps: int) -> list[Any]:
    """The steps of one workflow of `workload`: each with a deadline, and
    (named) a group as its approvers, groups taken in turn across workflows."""
    from chalicelib.domain.lifecycle import OnDeadline
    from chalicelib.domain.models import Deadline, StepRule

    return [
        StepRule(
            f"s{i}",
            (f"group:{GROUPS[(workflow + i) % len(GROUPS)]}",) if workload.named else (),
            deadline=Deadline(DEADLINE_SECONDS, OnDeadline.REMIND),
        )
        for i in range(steps)
    ]


class Load:
    """Writes and write units per partition, from the requests a client sends."""

    def __init__(self, client: Any, admin: Any, table: str) -> None:
        self.admin, self.table = admin, table
        self.writes: collections.Counter[str] = collections.Counter()
        self.units: collections.Counter[str] = collections.Counter()
        self.decisions = 0
        self.recording = False
        self.watch(client)

    def watch(self, client: Any) -> None:
        """Record the writes `client` sends too (the relay's)."""
        client.meta.events.register("before-parameter-build.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after)

    def _fetch(self, key: dict[str, Any]) -> Any:
        return self.admin.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")

    def _written(self, operation: str, params: dict[str, Any]) -> Iterator[tuple[dict, float]]:
        """Each item `operation` writes: its key, and the multiplier of its units."""
        if operation == "PutItem":
            yield {"PK": params["Item"]["PK"], "SK": params["Item"]["SK"]}, 1
        elif operation in ("UpdateItem", "DeleteItem"):
            yield params["Key"], 1
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((_, body),) = entry.items()
                key = body.get("Key") or {"PK": body["Item"]["PK"], "SK": body["Item"]["SK"]}
                yield key, 2

    def _before(self, params: dict[str, Any], model: Any, context: Any, **_: Any) -> None:
        if not self.recording:
            return
        # Kept in the request's own context: a list page's Queries run on threads.
        context[PENDING] = [
            (key, self._fetch(key), factor) for key, factor in self._written(model.name, params)
        ]

    def _after(self, http_response: Any, model: Any, context: Any, **_: Any) -> None:
        from chalicelib.storage.dynamodb import schema as dynamodb_schema

        pending = context.get(PENDING, [])
        if http_response.status_code != 200:
            return
        for key, before, factor in pending:
            after = self._fetch(key)
            table_pk = f"table {key['PK']['S']}"
            self.writes[table_pk] += 1
            self.units[table_pk] += factor * write_units(item_size(before), item_size(after))
            for index, (attribute, _sort) in dynamodb_schema.INDEXES.items():
                old, new = projected(before, index), projected(after, index)
                if old is not None and new is not None and old[attribute] == new[attribute]:
                    if old != new:
                        self._index(index, new[attribute]["S"], old, new)
                    continue
                if old is not None:
                    self._index(index, old[attribute]["S"], old, None)
                if new is not None:
                    self._index(index, new[attribute]["S"], None, new)

    def _index(self, index: str, pk: str, old: Any, new: Any) -> None:
        name = f"{index} {pk}"
        self.writes[name] += 1
        self.units[name] += write_units(item_size(old), item_size(new))

    def per_second(self, counter: collections.Counter[str], name: str) -> float:
        """What partition `name` takes per second at RATE decisions per second."""
        return counter[name] / self.decisions * RATE


def relayed(storage: Any, admin: Any, run_id: int, delete_item: Any) -> None:
    """What the relay writes when it reads the stream record of the run's
    last change: the inbox entries that change left behind, deleted."""
    from bench.dynamodb_cost import Request, relay_writes
    from chalicelib.storage.dynamodb import items as dynamodb_items

    key = dynamodb_items.key(dynamodb_keys.run_pk(run_id), dynamodb_keys.RUN_SK)
    item = admin.get_item(TableName=storage.table, Key=key, ConsistentRead=True).get("Item")
    relay_writes([Request("UpdateItem", {}, after=[item])], delete_item, storage.table)


def replay(
    workload: Workload,
    storage: Any,
    load: Load,
    rng: random.Random,
    admin: Any = None,
    delete_item: Any = None,
) -> None:
    """Start and decide runs until DECISIONS decisions are recorded (and, with
    `delete_item`, what the relay writes for each)."""
    from chalicelib import engine

    workflows = [
        engine.create_workflow(storage, f"{workload.name} {n}", "", step_rules(workload, n, steps))
        for n, steps in enumerate(workload.steps)
    ]
    # A warm container has its blocks of run and action ids: take them first.
    warm = engine.start_run(storage, workflows[0].id, "warm")
    engine.reject(storage, warm.id, "finn", groups=EVERY_GROUP)
    load.recording = True
    in_progress: list[tuple[int, int]] = []  # (run id, decisions left before a rejection)
    while load.decisions < DECISIONS:
        if not in_progress or rng.random() < 0.3:
            if workload.busy_share and rng.random() < workload.busy_share:
                workflow = workflows[0]
            else:
                workflow = rng.choice(workflows[1:] if workload.busy_share else workflows)
            run = engine.start_run(storage, workflow.id, "synthetic")
            rejected_at = (
                rng.randrange(len(workflow.steps)) if rng.random() < workload.reject_share else -1
            )
            in_progress.append((run.id, rejected_at))
            continue
        at = rng.randrange(len(in_progress))
        run_id, rejected_at = in_progress[at]
        if rejected_at == 0:
            run = engine.reject(storage, run_id, "finn", groups=EVERY_GROUP)
        else:
            run = engine.approve(storage, run_id, "maria", groups=EVERY_GROUP)
        if delete_item is not None:
            relayed(storage, admin, run_id, delete_item)
        load.decisions += 1
        if run.current_step is None:
            in_progress.pop(at)
        else:
            in_progress[at] = (run_id, rejected_at - 1)


def shared(name: str) -> bool:
    """Whether partition `name` takes writes from all traffic (see the docstring):
    the indexes', the id counters, the step count copies and the inboxes."""
    where, _, pk = name.partition(" ")
    return where != "table" or pk.startswith(("COUNTER", "INBOX#")) or "#STEPS#" in pk


def kind(name: str) -> str:
    """The kind of partition `name` is: the table's by key prefix, or the index."""
    where, _, pk = name.partition(" ")
    if where != "table":
        return f"index {where}"
    prefix = pk.split("#", 1)[0]
    if "#STEPS#" in pk:
        return "table WF#<id>#STEPS#<n> (step count copies)"
    if pk.startswith("INBOX#"):
        return "table INBOX#... (inboxes)"
    return f"table {prefix}#..." if "#" in pk else f"table {pk}"


def main() -> None:
    os.environ.update(offline_aws_env())
    # As deployed: the table's stream delivers the events, the due index holds deadlines only.
    os.environ["WORKFLOW_EVENT_DELIVERY"] = "stream"
    from moto import mock_aws

    from chalicelib.storage.dynamodb import adapter as dynamodb
    from chalicelib.storage.dynamodb import schema as dynamodb_schema

    moto_process.speed_up_moto()
    report = Report("partition_load", "5. Partition load at 10,000 decisions per second (DynamoDB)")
    tables: list[str] = []
    shards = dynamodb_keys.configured_shards()
    for workload in WORKLOADS:
        with mock_aws():
            client = dynamodb_client.create_client()
            admin = dynamodb_client.create_client()
            dynamodb_schema.ensure_table(admin, "load")
            storage = dynamodb.DynamoDBStorage(client, "load", shards=shards)
            load = Load(client, admin, "load")
            relay_client = dynamodb_client.create_client()
            load.watch(relay_client)
            replay(workload, storage, load, random.Random(15), admin, relay_client.delete_item)
            pages, page_shards = first_page_queries(storage)
        total_writes = sum(load.writes.values())
        total_units = sum(load.units.values())
        busiest = max(filter(shared, load.units), key=lambda name: load.units[name])
        at_rate = load.per_second(load.units, busiest)
        share = load.units[busiest] / total_units
        report.add(
            Figure(
                f"{workload.name}: busiest partition, write units/s",
                at_rate,
                "/s",
                goal=f"<= {PARTITION_LIMIT:,}",
                met=at_rate <= PARTITION_LIMIT,
                note=f"{busiest}: {share:.1%} of all write units; "
                f"{load.per_second(load.writes, busiest):,.0f} writes/s",
            )
        )
        if at_rate > PARTITION_LIMIT:
            needed = int(shards * at_rate / PARTITION_LIMIT) + 1
            report.figures[-1].note += f"; WORKFLOW_LIST_SHARDS={needed} would keep it under"
        tables.append(describe(workload, load, total_writes, total_units, pages))
    report.add(
        Figure(
            "first page of a filtered run list: Queries",
            max(pages.values()),
            "",
            goal=f"<= {max(page_shards.values())} (the list's shards)",
            met=all(pages[name] <= page_shards[name] for name in pages),
            note="and one BatchGetItem; "
            + ", ".join(f"{name} {count}" for name, count in pages.items())
            + " (the in-progress lists over twice the shards)",
        )
    )
    report.markdown = "\n\n".join(
        [
            f"{DECISIONS:,} decisions per workload replayed through the adapter (engine "
            f"functions on DynamoDBStorage, {shards} list shards: the in-progress lists over "
            f"{dynamodb_keys.status_shards('in_progress', shards)}, the open steps' inbox over "
            f"{dynamodb_keys.open_inbox_shards(shards)}) against moto; every key written "
            "recorded, table and index; per-second figures scale each shared partition's share of the "
            f"writes per decision to {RATE:,} decisions per second. Write units as in benchmark "
            "4 (per 1 KB, doubled in transactions). DynamoDB serves about 1,000 write units per "
            "second per partition key. The five busiest shared partitions of each workload, and "
            "the busiest of each kind:",
            *tables,
        ]
    )
    report.finish()


def first_page_queries(storage: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Queries of the first page of each run list, by filter, and the shards
    of each list."""
    counts: dict[str, int] = {}
    lists: dict[str, int] = {}
    seen: collections.Counter[str] = collections.Counter()

    def count(model: Any, **_: Any) -> None:
        seen[model.name] += 1

    storage.client.meta.events.register("before-call.dynamodb", count)
    for name, workflow_id, status in (
        ("all", None, None),
        ("status", None, "in_progress"),
        ("workflow", 1, None),
        ("workflow+status", 1, "completed"),
    ):
        seen.clear()
        storage.list_runs(workflow_id, status, None, 50)
        counts[name] = seen["Query"]
        lists[name] = len(dynamodb_keys.partitions(workflow_id, status, storage.shards)[1])
    storage.client.meta.events.unregister("before-call.dynamodb", count)
    return counts, lists


def describe(
    workload: Workload, load: Load, total_writes: int, total_units: float, pages: dict[str, int]
) -> str:
    def row(name: str) -> str:
        return (
            f"| {name} | {load.units[name] / total_units:.2%} | "
            f"{load.per_second(load.writes, name):,.0f} | {load.per_second(load.units, name):,.0f} |"
        )

    top = sorted(filter(shared, load.units), key=lambda name: -load.units[name])
    by_kind: dict[str, str] = {}
    for name in top:
        by_kind.setdefault(kind(name), name)
    own = [name for name in load.writes if not shared(name)]
    most_run = max((load.writes[name] for name in own if name.startswith("table RUN#")), default=0)
    steps = sum(workload.steps) / len(workload.steps)
    lines = [
        f"**{workload.name}** ({len(workload.steps)} workflows, {steps:.1f} steps on average"
        + (f", {workload.busy_share:.0%} of runs on one" if workload.busy_share else "")
        + f"): {total_writes / load.decisions:.2f} writes and "
        f"{total_units / load.decisions:.2f} write units per decision; the busiest run's own "
        f"partition took {most_run} writes in the whole replay (its start and decisions).",
        "",
        "| partition | share of write units | writes/s | write units/s |",
        "|---|---|---|---|",
        *(row(name) for name in top[:5]),
        *(row(name) for kind_name, name in sorted(by_kind.items()) if name not in top[:5]),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
