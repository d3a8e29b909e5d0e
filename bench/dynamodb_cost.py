"""Benchmark 4: DynamoDB requests and capacity units per route, and what a million approvals cost.

Every route runs through chalice.test.Client against a moto server in its own
process on 127.0.0.1. A botocore hook records each DynamoDB request; capacity
units are computed from the sizes of the items each request reads or writes,
by AWS's documented rules (Developer Guide, "DynamoDB read and write
operations" and "DynamoDB item sizes and formats"):

  item size   sum over attributes of UTF-8 name length + value size; strings
              UTF-8 bytes, numbers 1 byte per 2 significant digits + 1, lists
              and maps 3 + 1 per element
  reads       per 4 KB, rounded up; a Query sums the sizes of all the items it
              reads, then rounds up; strongly consistent 1 unit, eventually
              consistent 1/2; at least one unit per request
  writes      per 1 KB, rounded up, per item; an update or a replacing put counts
              the larger of the item before and after; transactions count double,
              a ConditionCheck in one too (it is billed as a write)
  indexes     a write that changes what a secondary index holds of an item (its
              projection: the whole item, or its keys only) is one more write
              there, per 1 KB of the projected item; one that changes none of it
              writes no index; an item whose index key changes is a delete and a
              put there, two writes; index writes are not doubled in transactions
  batch gets  each item read rounded up to 4 KB on its own

What is priced is what the packaged stack runs (scripts/package.py; a test,
tests/packaging/test_cost_model.py, holds the two together): the API type its
template defaults to (ApiType: API Gateway's HTTP API, or its REST API), the
items each route's requests write, and, as deployed, the table's stream: the
relay's writes a decision causes (it deletes the inbox entries the decision
left behind, chalicelib/delivery/relay.py) are run here through the relay's
own code on each run item a route wrote, and counted with the route's write
units, not with its requests (the API function does not wait for them).

A second pass over fresh data, with no hook, measures the CPU time each route
takes in this process (botocore's work included, the server's not), which with
the assumptions below gives the Lambda duration.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional, cast

from bench._common import Figure, Report, offline_aws_env, quiet_access_log, scaled
from bench.event_path import WEBHOOK_WAIT_MS, EventPath, priced
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import items as dynamodb_items
from chalicelib.storage.dynamodb.adapter import DynamoDBStorage
from tests.support.stored import stored_run

CALLS = scaled(60, 6)

# us-east-1 list prices, on-demand, as AWS's pricing pages state them
# (DynamoDB's after the November 2024 cut); written down 2026-11 from copies of
# those pages, not fetched live: re-check before relying on them.
PRICES = {
    "api_gateway_rest_per_million": 3.50,  # REST API, first 333 million a month
    "api_gateway_http_per_million": 1.00,  # HTTP API, first 300 million a month
    "lambda_per_million_requests": 0.20,
    "lambda_per_gb_second": 0.0000166667,  # x86_64
    "dynamodb_per_million_wru": 0.625,  # on-demand, since the Nov 2024 cut
    "dynamodb_per_million_rru": 0.125,
    "step_functions_per_1000_transitions": 0.025,  # Standard workflows
}
PRICE_NOTE = (
    "AWS list prices for us-east-1 (API Gateway HTTP APIs $1.00 and REST APIs $3.50 per "
    "million requests; "
    "Lambda x86 $0.20 per million requests and $0.0000166667 per GB-second, billed "
    "per 1 ms; DynamoDB on-demand $0.625 per million write request units and $0.125 "
    "per million read request units; Step Functions Standard $0.025 per 1,000 state "
    "transitions; DynamoDB's after its November 2024 price cut), written down in 2026-11 from "
    "copies of AWS's pricing pages rather than fetched live, free tiers left out. "
    "List prices change: re-check them on the AWS pricing pages before relying on "
    "these figures."
)

# Assumptions of the Lambda duration model (stated in BENCHMARKS.md):
# Lambda gives a function CPU in proportion to its memory, one full vCPU at
# 1,769 MB; a DynamoDB request from Lambda in the same region takes a few ms.
FULL_VCPU_MB = 1769
LATENCY_MS = {"TransactWriteItems": 10.0}
DEFAULT_LATENCY_MS = 5.0
MEMORY_SIZES = (128, 256, 512)


# -- what the packaged stack runs ----------------------------------------------------


def packaged_api_type() -> str:
    """The API the packaged template puts in front of the function by default
    (its ApiType parameter): "http" or "rest"."""
    from scripts import package

    stack = package.read_template(package.STACK_TEMPLATE.read_text(encoding="utf-8"))
    default: str = stack["Parameters"]["ApiType"]["Default"]
    return default


def packaged_memory_size() -> int:
    """The API function's memory in MB as packaged: deploy/stack.yaml's
    MemorySize for it (chalice's default, 128, where it sets none)."""
    from scripts import package

    stack = package.read_template(package.STACK_TEMPLATE.read_text(encoding="utf-8"))
    return int(stack["Resources"]["APIHandler"]["Properties"].get("MemorySize", 128))


API_NAMES = {"http": "HTTP API", "rest": "REST API"}


def api_price(api_type: str) -> float:
    """List price of a million requests through that API type."""
    return PRICES[f"api_gateway_{api_type}_per_million"]


# -- item sizes and capacity units -------------------------------------------------


def value_size(value: dict[str, Any]) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode("utf-8"))
    if kind == "N":
        digits = data.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in data)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + value_size(v) + 1 for k, v in data.items())
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in data)
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: dict[str, dict[str, Any]] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def read_units(total_bytes: int, consistent: bool) -> float:
    units = max(1, math.ceil(total_bytes / 4096))
    return units if consistent else units / 2


def write_units(before: int, after: int) -> int:
    return max(1, math.ceil(max(before, after) / 1024))


def projected(item: Any, index: str) -> Any:
    """What `index` holds of `item` (None if the item is not in it)."""
    from chalicelib.storage.dynamodb import schema as dynamodb_schema

    key, sort = dynamodb_schema.INDEXES[index]
    if not item or key not in item or sort not in item:
        return None
    if dynamodb_schema.PROJECTIONS[index]["ProjectionType"] == "ALL":
        return item
    return {name: item[name] for name in ("PK", "SK", sort, key)}


def index_write_units(before: Any, after: Any) -> int:
    """Write units the table's secondary indexes take for one item's change."""
    from chalicelib.storage.dynamodb import schema as dynamodb_schema

    units = 0
    for index, (key, _) in dynamodb_schema.INDEXES.items():
        old, new = projected(before, index), projected(after, index)
        if old is not None and new is not None and old[key] == new[key]:
            units += write_units(item_size(old), item_size(new)) if old != new else 0
        else:
            units += (write_units(item_size(old), 0) if old is not None else 0) + (
                write_units(0, item_size(new)) if new is not None else 0
            )
    return units


@dataclass
class Request:
    operation: str
    params: dict[str, Any]
    before: list[Any] = field(default_factory=list)  # written items, before (None: absent)
    rcu: float = 0.0
    wcu: float = 0.0
    index_wcu: float = 0.0
    # Sent by the relay from the table's stream, not by the API function.
    stream: bool = False
    # The written items, after (None: absent).
    after: list[Any] = field(default_factory=list)


LEDGER_KEY = "bench.ledger.request"


class Ledger:
    """Records the service client's requests and prices each in capacity units."""

    def __init__(self, client: Any, admin: Any, table: str, stream: bool = False) -> None:
        self.admin, self.table = admin, table
        self.requests: list[Request] = []
        self.events = client.meta.events
        self.stream = stream
        # The CPU time the ledger's own hooks took (its reads of items before
        # and after a write), for callers that time the client's work.
        self.spent = 0.0
        self.attach()

    def attach(self) -> None:
        self.events.register("before-parameter-build.dynamodb", self._before)
        self.events.register("after-call.dynamodb", self._after)

    def detach(self) -> None:
        self.events.unregister("before-parameter-build.dynamodb", self._before)
        self.events.unregister("after-call.dynamodb", self._after)

    def _written_keys(self, operation: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if operation == "PutItem":
            return [{"PK": params["Item"]["PK"], "SK": params["Item"]["SK"]}]
        if operation in ("UpdateItem", "DeleteItem"):
            return [params["Key"]]
        if operation == "TransactWriteItems":
            keys = []
            for entry in params["TransactItems"]:
                ((_kind, body),) = entry.items()
                keys.append(
                    body["Key"]
                    if "Key" in body
                    else {"PK": body["Item"]["PK"], "SK": body["Item"]["SK"]}
                )
            return keys
        return []

    def _read_all(self, operation: str, params: dict[str, Any]) -> list[Any]:
        """The items a request without its filter reads (every page)."""
        params = dict(params)
        # Values only the filter names would be refused as unused.
        used = " ".join(
            str(params.get(k, "")) for k in ("KeyConditionExpression", "ProjectionExpression")
        )
        for kind in ("ExpressionAttributeValues", "ExpressionAttributeNames"):
            kept = {k: v for k, v in params.get(kind, {}).items() if k in used}
            if kept:
                params[kind] = kept
            else:
                params.pop(kind, None)
        items: list[Any] = []
        call = getattr(self.admin, "query" if operation == "Query" else "scan")
        while True:
            page = call(**params)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return items
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _fetch(self, key: dict[str, Any]) -> Any:
        return self.admin.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")

    def _before(self, params: dict[str, Any], model: Any, context: Any, **_: Any) -> None:
        start = time.process_time()
        self._record_before(params, model, context)
        self.spent += time.process_time() - start

    def _after(self, **kwargs: Any) -> None:
        start = time.process_time()
        self._record_after(**kwargs)
        self.spent += time.process_time() - start

    def _record_before(self, params: dict[str, Any], model: Any, context: Any) -> None:
        request = Request(model.name, copy.deepcopy(params), stream=self.stream)
        request.before = [self._fetch(k) for k in self._written_keys(model.name, params)]
        self.requests.append(request)
        # The request's own context: a list page's Queries run at once, on threads.
        context[LEDGER_KEY] = request

    def _record_after(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: Any, **_: Any
    ) -> None:
        request = context[LEDGER_KEY]
        params = request.params
        if model.name in ("Query", "Scan"):
            found = parsed.get("Items", [])
            if "FilterExpression" in params:
                # A filter is applied after the read: the items it drops are read too.
                unfiltered = {k: v for k, v in params.items() if k != "FilterExpression"}
                found = self._read_all(model.name, unfiltered)
            total = sum(item_size(item) for item in found)
            request.rcu = read_units(total, params.get("ConsistentRead", False))
        elif model.name == "GetItem":
            request.rcu = read_units(
                item_size(parsed.get("Item")), params.get("ConsistentRead", False)
            )
        elif model.name == "BatchGetItem":
            ((table, asked),) = params["RequestItems"].items()
            request.rcu = sum(
                read_units(item_size(item), asked.get("ConsistentRead", False))
                for item in parsed.get("Responses", {}).get(table, [])
            )
        elif model.name in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"):
            keys = self._written_keys(model.name, params)
            pairs = [
                (before, self._fetch(key))
                for before, key in zip(request.before, keys, strict=False)
            ]
            units = sum(write_units(item_size(before), item_size(after)) for before, after in pairs)
            request.wcu = units * (2 if model.name == "TransactWriteItems" else 1)
            request.index_wcu = sum(index_write_units(before, after) for before, after in pairs)
            request.after = [after for _, after in pairs]

    def take(self) -> list[Request]:
        taken, self.requests = self.requests, []
        return taken


def stream_record(item: Any, table: str) -> dict[str, Any]:
    """The record the table's stream (NEW_IMAGE) gives the relay for `item`'s write."""
    return {
        "eventName": "MODIFY",
        "eventSourceARN": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/bench",
        "dynamodb": {"Keys": {"PK": item["PK"], "SK": item["SK"]}, "NewImage": item},
    }


class Meter:
    """The API function's requests of one call, and the relay's that follow
    from its writes, each priced by its ledger."""

    def __init__(
        self, api: Ledger, stream: Ledger, delete_item: Any, table: str, path: EventPath
    ) -> None:
        self.api, self.stream, self.delete_item, self.table = api, stream, delete_item, table
        # The events' way out, followed for the calls that ask (approvals).
        self.path = path

    def attach(self) -> None:
        self.api.attach()
        self.stream.attach()

    def detach(self) -> None:
        self.api.detach()
        self.stream.detach()

    def measure(
        self, call: Callable[[], Any], follow: Optional[str] = None
    ) -> tuple[Any, list[Request]]:
        """The requests of `call`, and the relay's after it; with `follow` (the
        route's name), the events' way out too, through the relay and the sender."""
        self.api.take()
        self.stream.take()
        answer = call()
        sent = self.api.take()
        if follow:
            self.path.follow(sent, follow)
        else:
            relay_writes(sent, self.delete_item, self.table)
        return answer, sent + self.stream.take()


def relay_writes(written: list[Request], delete_item: Any, table: str) -> None:
    """What the relay writes for the run items `written` wrote, as deployed:
    the inbox entries a decision left behind, deleted through the relay's
    own code (chalicelib/delivery/relay.py) with `delete_item`."""
    from chalicelib.delivery import relay
    from chalicelib.storage.dynamodb import items as dynamodb_items

    records = [
        stream_record(item, table)
        for request in written
        for item in request.after
        if item is not None and dynamodb_items.INBOX_LEFT in item
    ]
    if records:
        relay.forget_left(records, delete_item)


# -- the workload ----------------------------------------------------------------------

JSON = {"Content-Type": "application/json"}
ROUTES = (
    "POST /workflows",
    "GET /workflows/{id}",
    "POST /workflows/{id}/steps",
    "POST /runs",
    "POST /runs/{id}/approve",
    "POST /runs/{id}/reject",
    "GET /runs/{id}",
    "GET /runs?limit=50",
    "GET /runs?status=completed&limit=50",
)
# The goals on a decision's requests and index writes.
APPROVE = "POST /runs/{id}/approve"
REQUEST_GOALS = {"POST /runs": 2, "POST /runs/{id}/approve": 2, "POST /runs/{id}/reject": 2}
INDEX_WCU_GOAL = 2


class Workload:
    """Calls every route CALLS times; `around` wraps each measured call."""

    def __init__(self, http: Any, tag: str, around: Callable[[str, Callable[[], Any]], Any]):
        self.http, self.tag, self.around = http, tag, around

    def post(self, route: str, path: str, body: dict[str, Any], status: int) -> Any:
        response = self.around(
            route, lambda: self.http.post(path, headers=JSON, body=json.dumps(body))
        )
        assert response.status_code == status, response.body
        return response.json_body

    def run(self) -> None:
        tag = self.tag
        workflows = [
            self.post(
                "POST /workflows",
                "/workflows",
                {"name": f"{tag}-{i}", "steps": ["Manager", "Finance", "CFO"]},
                201,
            )
            for i in range(CALLS)
        ]
        main = workflows[0]["id"]
        # A warm container has its blocks of run and action ids (one request per
        # 1,000): take them before measuring, as the first call would.
        warm = self.http.post(
            "/runs", headers=JSON, body=json.dumps({"workflow_id": main, "title": "warm"})
        ).json_body["id"]
        self.http.post(f"/runs/{warm}/reject", headers=JSON, body=json.dumps({"actor": "w"}))
        for i in range(CALLS):
            self.post(
                "POST /workflows/{id}/steps",
                f"/workflows/{workflows[-1]['id']}/steps",
                {"name": f"extra {i}"},
                201,
            )
        for _ in range(CALLS):
            response = self.around(
                "GET /workflows/{id}", lambda: self.http.get(f"/workflows/{main}")
            )
            assert response.status_code == 200
        runs = [
            self.post("POST /runs", "/runs", {"workflow_id": main, "title": f"PO-{i}"}, 201)["id"]
            for i in range(CALLS)
        ]
        # Three approvals complete each run: the average is that of a 3-step run's approvals.
        for _ in range(3):
            for run_id in runs:
                self.post(
                    "POST /runs/{id}/approve",
                    f"/runs/{run_id}/approve",
                    {"actor": "maria.rossi@example.com", "comment": "Within budget"},
                    200,
                )
        for run_id in runs:
            response = self.around(
                "GET /runs/{id}", functools.partial(self.http.get, f"/runs/{run_id}")
            )
            assert response.status_code == 200
        for route in ("GET /runs?limit=50", "GET /runs?status=completed&limit=50"):
            for _ in range(max(1, CALLS // 6)):
                path = route.removeprefix("GET ")
                response = self.around(route, functools.partial(self.http.get, path))
                assert response.status_code == 200 and response.json_body["items"]
        rejected = [
            self.post("POST /runs", "/runs", {"workflow_id": main, "title": "r"}, 201)["id"]
            for _ in range(CALLS)
        ]
        for run_id in rejected:
            self.post(
                "POST /runs/{id}/reject",
                f"/runs/{run_id}/reject",
                {"actor": "finn", "comment": "Over budget"},
                200,
            )


# -- history growth -----------------------------------------------------------------

HISTORY_SMALL, HISTORY_BIG = 10, 1000
HISTORY_GOAL = 1.5


class Histories:
    """Runs with a history of a given length, written straight into the table (as
    the adapter writes them, a thousand approvals being too slow on moto), on a
    workflow long enough to approve them once more. Each action carries its
    approval's two events as an approval's action item does: a copy of the
    packed events of one the workload recorded (the same bytes; their
    sequences are the history's)."""

    def __init__(self, storage: Any, admin: Any, table: str) -> None:
        from chalicelib.domain.models import Step, Workflow
        from chalicelib.storage.dynamodb import adapter as dynamodb
        from chalicelib.storage.dynamodb.workflows import STEP_COUNT_COPIES, step_count_key

        self.storage, self.admin, self.table = storage, admin, table
        self.dynamodb = dynamodb
        self.packed = self._packed_approval()
        steps = HISTORY_BIG + 2
        workflow_id = 900_000
        self.steps = tuple(
            Step(workflow_id * 10 + order, workflow_id, f"step {order}", order)
            for order in range(1, steps + 1)
        )
        workflow = Workflow(workflow_id, "long history", "", "2026-01-01T00:00:00.000Z", self.steps)
        items = [dynamodb_items.workflow_item(workflow), dynamodb_items.version_item(workflow)]
        items += [dynamodb_items.step_item(step, 1) for step in self.steps]
        items += [
            {**step_count_key(workflow_id, copy, 1), "step_count": dynamodb_client.n(steps)}
            for copy in range(STEP_COUNT_COPIES)
        ]
        self._put(items)
        self.workflow = storage.get_workflow(workflow_id)  # as a run's start reads it

    def _packed_approval(self) -> Any:
        """The packed events of an approval that moved its run to its next step."""
        from chalicelib.storage.dynamodb import carried

        pages = self.admin.get_paginator("scan").paginate(
            TableName=self.table,
            FilterExpression="attribute_exists(#events) AND #count = :two",
            ExpressionAttributeNames={"#events": carried.EVENTS, "#count": carried.COUNT},
            ExpressionAttributeValues={":two": dynamodb_client.n(2)},
        )
        for page in pages:
            for item in page["Items"]:
                return item[carried.EVENTS]
        raise RuntimeError("no approval carried its events: the workload did not run?")

    def _put(self, items: list[Any]) -> None:
        for at in range(0, len(items), 25):
            requests = [{"PutRequest": {"Item": item}} for item in items[at : at + 25]]
            self.admin.batch_write_item(RequestItems={self.table: requests})

    def run(self, actions: int) -> int:
        """A run of the long workflow with `actions` approvals recorded."""
        from chalicelib.domain.lifecycle import ActionKind
        from chalicelib.domain.models import Action

        run = stored_run(self.storage, self.workflow, "long", "2026-01-01T00:00:00.000Z")
        history = [
            Action(
                run.id * 10_000 + seq,
                run.id,
                step.id,
                step.name,
                ActionKind.APPROVE,
                "maria.rossi@example.com",
                "Within budget",
                "2026-01-01T00:00:00.000Z",
                f"{seq:064x}",
            )
            for seq, step in enumerate(self.steps[:actions], start=1)
        ]
        from chalicelib.storage.dynamodb import carried

        revision = run.revision  # its start's events: the storage's revision of the run
        assert isinstance(revision, dynamodb_items.RunRevision)
        told = revision.event_seq
        self._put(
            [
                {
                    **dynamodb_items.action_item(action, seq),
                    carried.EVENTS: self.packed,
                    carried.FROM: dynamodb_client.n(told + 2 * seq - 1),
                    carried.COUNT: dynamodb_client.n(2),
                }
                for seq, action in enumerate(history, 1)
            ]
        )
        current = self.steps[actions]
        self.admin.update_item(
            TableName=self.table,
            Key={"PK": {"S": f"RUN#{run.id}"}, "SK": {"S": "#RUN"}},
            UpdateExpression="SET seq = :seq, head_hash = :head, step_id = :id, "
            "step_name = :name, step_order = :order, event_seq = :told",
            ExpressionAttributeValues={
                ":told": dynamodb_client.n(told + 2 * actions),
                ":seq": dynamodb_client.n(actions),
                ":head": {"S": history[-1].hash or ""},
                ":id": dynamodb_client.n(current.id),
                ":name": {"S": current.name},
                ":order": dynamodb_client.n(current.step_order),
            },
        )
        return run.id


MINIMAL = "minimal"  # the decision's answer without the history (Prefer: return=minimal)
WHOLE = "whole"


def history_growth(http: Any, storage: Any, admin: Any, meter: Meter) -> dict[Any, Any]:
    """Requests, capacity units and CPU of an approve on runs with 10 and 1,000
    actions: (actions, WHOLE or MINIMAL) -> its cost."""
    histories = Histories(storage, admin, "cost")
    found: dict[Any, Any] = {}
    body = json.dumps({"actor": "maria.rossi@example.com", "comment": "Within budget"})
    for answer, headers in ((WHOLE, JSON), (MINIMAL, {**JSON, "Prefer": "return=minimal"})):
        for actions in (HISTORY_SMALL, HISTORY_BIG):
            measured = [histories.run(actions) for _ in range(3)]
            timed = [histories.run(actions) for _ in range(scaled(7, 2))]
            meter.attach()
            requests: list[Request] = []
            for run_id in measured:
                response, sent = meter.measure(
                    functools.partial(
                        http.post, f"/runs/{run_id}/approve", headers=headers, body=body
                    )
                )
                assert response.status_code == 200
                requests += sent
            meter.detach()
            cpu = []
            for run_id in timed:
                start = time.process_time()
                response = http.post(f"/runs/{run_id}/approve", headers=headers, body=body)
                cpu.append(time.process_time() - start)
                assert response.status_code == 200
            n = len(measured)
            ops: dict[str, int] = {}
            for r in requests:
                if not r.stream:
                    ops[r.operation] = ops.get(r.operation, 0) + 1
            found[actions, answer] = {
                "requests": sum(not r.stream for r in requests) / n,
                "rcu": sum(r.rcu for r in requests) / n,
                "wcu": sum(r.wcu + r.index_wcu for r in requests) / n,
                "index_wcu": sum(r.index_wcu for r in requests) / n,
                "cpu_ms": sorted(cpu)[len(cpu) // 2] * 1e3,
                "latency_ms": sum(
                    LATENCY_MS.get(op, DEFAULT_LATENCY_MS) * count for op, count in ops.items()
                )
                / n,
                "bytes": len(response.body),
            }
    return found


def dollars_per_million(cost: dict[str, float], mb: int) -> float:
    """A million calls of `cost`'s requests, units and CPU, by the model of the approval table."""
    p = PRICES
    slow = max(1.0, FULL_VCPU_MB / mb)
    duration = math.ceil(cost["cpu_ms"] * slow + cost["latency_ms"])
    compute = 1e6 * duration / 1000 * mb / 1024 * p["lambda_per_gb_second"]
    ddb = cost["rcu"] * p["dynamodb_per_million_rru"] + cost["wcu"] * p["dynamodb_per_million_wru"]
    return api_price(packaged_api_type()) + p["lambda_per_million_requests"] + compute + ddb


# -- all in: the function, its table, and the events' way out ------------------------

ALL_IN_GOAL = 6.00


def transaction_floor(approve_requests: list[list[Request]]) -> tuple[float, int, int]:
    """Write units of the floor's one transaction: the run and its action at
    the sizes the approvals wrote them (mean), each doubled in a transaction;
    and those sizes."""
    runs, actions = [], []
    for requests in approve_requests:
        for request in requests:
            if request.operation != "TransactWriteItems":
                continue
            for item in request.after:
                if item is None:
                    continue
                sort_key = item["SK"]["S"]
                if sort_key == "#RUN":
                    runs.append(item_size(item))
                elif sort_key.startswith("ACT#"):
                    actions.append(item_size(item))
    run_bytes = round(sum(runs) / len(runs))
    action_bytes = round(sum(actions) / len(actions))
    return 2 * (write_units(0, run_bytes) + write_units(0, action_bytes)), run_bytes, action_bytes


def all_in(report: Report, approve: dict[str, float], path: EventPath, gateway: float) -> list[str]:
    """Goal 1's figure: a million approvals with everything the packaged stack
    does for them, against the floor; its table's rows."""
    p = PRICES
    memory = packaged_memory_size()
    slow = max(1.0, FULL_VCPU_MB / memory)
    duration = math.ceil(approve["cpu_ms"] * slow + approve["latency_ms"])
    compute = duration / 1000 * memory / 1024 * p["lambda_per_gb_second"] * 1e6
    ddb = (
        approve["rcu"] * p["dynamodb_per_million_rru"]
        + approve["wcu"] * p["dynamodb_per_million_wru"]
    )
    parts = {
        "HTTP API": gateway,
        "API function: invocations": p["lambda_per_million_requests"],
        f"API function: duration ({duration} ms at {memory} MB)": compute,
        "DynamoDB: the approval and the relay's deletes": ddb,
    }
    # The relay and the sender keep chalice's 128 MB (deploy/stack.yaml): they mostly wait.
    parts |= {
        f"events: {name}": price for name, price in priced(path.costs, p, 128, FULL_VCPU_MB).items()
    }
    total = sum(parts.values())
    units, run_bytes, action_bytes = path.floor
    floor = (
        gateway
        + p["lambda_per_million_requests"]
        + math.ceil(LATENCY_MS["TransactWriteItems"])
        / 1000
        * memory
        / 1024
        * p["lambda_per_gb_second"]
        * 1e6
        + units * p["dynamodb_per_million_wru"]
    )
    costs = path.costs
    events = sum(c.events for c in costs) / len(costs)
    sender = [r for c in costs for r in c.sender_requests]
    sender_mix: dict[str, int] = {}
    for r in sender:
        sender_mix[r.operation] = sender_mix.get(r.operation, 0) + 1
    mix = ", ".join(f"{op} {n / len(costs):.2f}" for op, n in sorted(sender_mix.items()))
    report.add(
        Figure(
            "all-in cost per 1M approvals",
            total,
            "$",
            goal=f"<= ${ALL_IN_GOAL:.2f}",
            met=total <= ALL_IN_GOAL,
            note=f"at {memory} MB; floor ${floor:.2f} ({total / floor:.2f}x): the HTTP API, one "
            f"call, one transaction of the run ({run_bytes} B) and its action ({action_bytes} B)",
        )
    )
    report.add(Figure("all-in / floor", total / floor, "x", note=f"floor ${floor:.2f}"))
    rows = [
        f"**All in** (goal 1: the packaged stack at its defaults, {memory} MB, the events' way "
        f"out to one webhook included; bench/event_path.py). Per approval {events:.2f} events "
        f"({sum(c.event_bytes for c in costs) / len(costs):,.0f} bytes), "
        f"{sum(c.relayed_records for c in costs) / len(costs):.2f} stream records past the "
        f"relay's filter, {sum(c.messages for c in costs) / len(costs):.2f} messages to the "
        f"webhook queue; the sender's DynamoDB requests per approval: {mix}. Priced at one relay "
        "invocation per approval and one sender invocation per message (quiet traffic: batches "
        f"of one), the webhook answering in {WEBHOOK_WAIT_MS:.0f} ms.",
        "",
        "| part | $ per 1M approvals |",
        "|---|---|",
        *(f"| {name} | ${price:.2f} |" for name, price in parts.items()),
        f"| **total** | **${total:.2f}** |",
        f"| floor: the HTTP API, one call ({LATENCY_MS['TransactWriteItems']:.0f} ms), one transaction "
        f"of {units} write units | ${floor:.2f} |",
    ]
    return rows


# -- main ----------------------------------------------------------------------------


def main() -> None:
    from bench.moto_process import MotoProcess

    os.environ.clear()
    os.environ.update(offline_aws_env())
    with MotoProcess() as moto:
        os.environ.update(
            WORKFLOW_STORAGE="dynamodb",
            WORKFLOW_TABLE="cost",
            AWS_ENDPOINT_URL_DYNAMODB=moto.endpoint,
            # As deployed: the table's stream delivers the events.
            WORKFLOW_EVENT_DELIVERY="stream",
        )
        import app as service

        quiet_access_log(service)
        from chalice.test import Client

        from chalicelib.storage.dynamodb import schema as dynamodb_schema

        admin = dynamodb_client.create_client()
        dynamodb_schema.ensure_table(admin, "cost")
        table = admin.describe_table(TableName="cost")["Table"]
        indexes = len(table.get("GlobalSecondaryIndexes", [])) + len(
            table.get("LocalSecondaryIndexes", [])
        )
        http = Client(service.app).http

        # Pass 1: requests and capacity units per route, and the relay's writes
        # that follow from them (with a client of its own, as the relay has).
        storage = cast(DynamoDBStorage, service.get_storage())
        relay_client = dynamodb_client.create_client()
        # The webhook sender: a storage on a client of its own, as its function has.
        sender_client = dynamodb_client.create_client()
        sender = (DynamoDBStorage(sender_client, "cost"), Ledger(sender_client, admin, "cost"))
        relay_ledger = Ledger(relay_client, admin, "cost", stream=True)
        path = EventPath("cost", relay_client.delete_item, sender, relay_ledger)
        meter = Meter(
            Ledger(storage.client, admin, "cost"),
            relay_ledger,
            relay_client.delete_item,
            "cost",
            path,
        )
        per_route: dict[str, list[list[Request]]] = {route: [] for route in ROUTES}

        def account(route: str, call: Callable[[], Any]) -> Any:
            answer, requests = meter.measure(call, follow=route)
            per_route[route].append(requests)
            return answer

        Workload(http, "units", account).run()
        meter.detach()
        path.floor = transaction_floor(per_route[APPROVE])

        # Pass 2: CPU time per route in this process, no hook.
        cpu: dict[str, list[float]] = {route: [] for route in ROUTES}

        def timed(route: str, call: Callable[[], Any]) -> Any:
            start = time.process_time()
            answer = call()
            cpu[route].append(time.process_time() - start)
            return answer

        Workload(http, "warmup", lambda route, call: call()).run()
        Workload(http, "cpu", timed).run()
        # Last: its long histories make moto's transactions slow (it copies the
        # whole table for each item of one).
        histories = history_growth(http, storage, admin, meter)

        # One boto3 call, warm, for the Lambda functions of the Step Functions pattern.
        key = {"PK": {"S": "COUNTER"}, "SK": {"S": "#ID"}}
        for _ in range(20):
            admin.get_item(TableName="cost", Key=key)
        start = time.process_time()
        for _ in range(200):
            admin.get_item(TableName="cost", Key=key)
        one_call_cpu = (time.process_time() - start) / 200

    report = Report("dynamodb_cost", "4. DynamoDB cost (requests, capacity units, list prices)")
    rows = []
    costs: dict[str, dict[str, float]] = {}
    for route in ROUTES:
        calls = per_route[route]
        n = len(calls)
        ops: dict[str, int] = {}
        relayed: dict[str, int] = {}
        for requests in calls:
            for r in requests:
                into = relayed if r.stream else ops
                into[r.operation] = into.get(r.operation, 0) + 1
        reqs = sum(not r.stream for c in calls for r in c) / n
        stream_wcu = sum(r.wcu + r.index_wcu for c in calls for r in c if r.stream) / n
        rcu = sum(r.rcu for c in calls for r in c) / n
        index_wcu = sum(r.index_wcu for c in calls for r in c) / n
        wcu = sum(r.wcu for c in calls for r in c) / n + index_wcu
        cpu_ms = sorted(cpu[route])[len(cpu[route]) // 2] * 1e3
        latency = (
            sum(LATENCY_MS.get(op, DEFAULT_LATENCY_MS) * count for op, count in ops.items()) / n
        )
        costs[route] = {
            "requests": reqs,
            "rcu": rcu,
            "wcu": wcu,
            "index_wcu": index_wcu,
            "stream_wcu": stream_wcu,
            "cpu_ms": cpu_ms,
            "latency_ms": latency,
        }
        mix = ", ".join(f"{op} {count / n:.2f}" for op, count in sorted(ops.items()))
        if relayed:
            mix += "; the relay: " + ", ".join(
                f"{op} {count / n:.2f}" for op, count in sorted(relayed.items())
            )
        rows.append(
            f"| `{route}` | {reqs:.2f} | {mix} | {rcu:.2f} | {wcu:.2f} "
            f"({index_wcu:.2f} in indexes, {stream_wcu:.2f} by the relay) | "
            f"{cpu_ms:.2f} | {1e6 * (rcu * PRICES['dynamodb_per_million_rru'] + wcu * PRICES['dynamodb_per_million_wru']) / 1e6:.2f} |"
        )
        goal = REQUEST_GOALS.get(route)
        report.add(
            Figure(
                f"{route}: DynamoDB requests per call",
                reqs,
                "",
                goal=f"<= {goal}" if goal else "",
                met=round(reqs, 2) <= goal if goal else None,
                note=f"RCU {rcu:.2f}, WCU {wcu:.2f} ({index_wcu:.2f} in indexes, "
                f"{stream_wcu:.2f} by the relay), CPU {cpu_ms:.2f} ms; {mix}",
            )
        )

    approve = costs["POST /runs/{id}/approve"]
    service_rows, sfn_rows = [], []
    service_total: dict[int, float] = {}
    sfn_total: dict[int, float] = {}
    p = PRICES
    # The API the packaged template deploys by default, for both designs alike.
    api_type = packaged_api_type()
    gateway = api_price(api_type)
    ddb = (
        approve["rcu"] * p["dynamodb_per_million_rru"]
        + approve["wcu"] * p["dynamodb_per_million_wru"]
    )
    for mb in MEMORY_SIZES:
        slow = max(1.0, FULL_VCPU_MB / mb)
        duration = math.ceil(approve["cpu_ms"] * slow + approve["latency_ms"])
        compute = 1e6 * duration / 1000 * mb / 1024 * p["lambda_per_gb_second"]
        total = gateway + p["lambda_per_million_requests"] + compute + ddb
        service_total[mb] = total
        service_rows.append(
            f"| {mb} MB | {approve['cpu_ms']:.2f} ms x {slow:.2f} + {approve['latency_ms']:.0f} ms "
            f"= {duration} ms billed | ${gateway:.2f} | "
            f"${p['lambda_per_million_requests']:.2f} | 1M x {duration} ms x {mb}/1024 GB x "
            f"${p['lambda_per_gb_second']} = ${compute:.2f} | ${ddb:.2f} | **${total:.2f}** |"
        )
        # Step Functions: per approval, the task-token state and the Choice state
        # after it (2 transitions) plus the Succeed state once per 3-step run;
        # two Lambda invocations (one hands the token to the approver, one
        # takes the approver's click from API Gateway and calls SendTaskSuccess),
        # each one AWS call.
        sfn_duration = math.ceil(one_call_cpu * 1e3 * slow + DEFAULT_LATENCY_MS)
        transitions = 2 + 1 / 3
        sfn_states = transitions * 1e6 / 1000 * p["step_functions_per_1000_transitions"]
        sfn_lambda = 2 * (
            p["lambda_per_million_requests"]
            + 1e6 * sfn_duration / 1000 * mb / 1024 * p["lambda_per_gb_second"]
        )
        sfn = sfn_states + gateway + sfn_lambda
        sfn_total[mb] = sfn
        sfn_rows.append(
            f"| {mb} MB | {transitions:.2f} x 1M / 1,000 x ${p['step_functions_per_1000_transitions']}"
            f" = ${sfn_states:.2f} | ${gateway:.2f} | 2 x ($0.20 + 1M x "
            f"{sfn_duration} ms x {mb}/1024 GB x ${p['lambda_per_gb_second']}) = ${sfn_lambda:.2f} "
            f"| **${sfn:.2f}** |"
        )
    for mb in MEMORY_SIZES:
        # No goal since issue 43: the all-in figure below is the goal.
        report.add(
            Figure(
                f"1M approvals, API function and its table only, {mb} MB",
                service_total[mb],
                "$",
                note=f"Step Functions pattern ${sfn_total[mb]:,.2f}: "
                f"{sfn_total[mb] / service_total[mb]:.1f}x the service",
            )
        )
    index_wcu = costs["POST /runs/{id}/approve"]["index_wcu"]
    report.add(
        Figure(
            "index write units per approval (in WCU above)",
            index_wcu,
            "",
            goal=f"<= {INDEX_WCU_GOAL}",
            met=index_wcu <= INDEX_WCU_GOAL,
            note=f"{indexes} secondary indexes",
        )
    )

    all_in_rows = all_in(report, approve, path, gateway)

    history_rows = []
    for (actions, answer), cost in histories.items():
        report.add(
            Figure(
                f"approve, {actions:,} actions, {answer} answer: $ per 1M at 128 MB",
                dollars_per_million(cost, 128),
                "$",
                note=f"{cost['requests']:.0f} requests, RCU {cost['rcu']:.1f}, "
                f"WCU {cost['wcu']:.2f}, CPU {cost['cpu_ms']:.1f} ms; "
                f"the answer {cost['bytes']:,} bytes",
            )
        )
        history_rows.append(
            f"| {actions:,} | {answer} | {cost['requests']:.2f} | {cost['rcu']:.1f} | "
            f"{cost['wcu']:.2f} | {cost['cpu_ms']:.1f} | {cost['bytes']:,} | "
            f"${dollars_per_million(cost, 128):.2f} |"
        )
    for answer in (MINIMAL, WHOLE):
        small, big = histories[HISTORY_SMALL, answer], histories[HISTORY_BIG, answer]
        growth = dollars_per_million(big, 128) / dollars_per_million(small, 128)
        goal = answer == MINIMAL
        report.add(
            Figure(
                f"approve: {HISTORY_BIG:,} / {HISTORY_SMALL} actions, {answer} answer, $ per 1M",
                growth,
                "x",
                goal=f"<= {HISTORY_GOAL}" if goal else "",
                met=growth <= HISTORY_GOAL if goal else None,
                note=f"requests {small['requests']:.0f} and {big['requests']:.0f}; WCU "
                f"{small['wcu']:.2f} and {big['wcu']:.2f}; RCU {small['rcu']:.1f} and "
                f"{big['rcu']:.1f}"
                + (
                    " (Prefer: return=minimal: the decision reads the run item alone)"
                    if goal
                    else " (the answer holds the whole history, so the read grows with it)"
                ),
            )
        )
    report.markdown = "\n".join(
        [
            f"{CALLS} calls per route (approvals: the three of {CALLS} 3-step runs), on a moto "
            "server; capacity units from item sizes by AWS's rounding rules (see the script's "
            "docstring). `$ per 1M` is the DynamoDB on-demand cost of a million calls. CPU is "
            "the median per call in this process (service, Chalice and botocore; the server "
            "excluded).",
            "",
            "| route | requests | of which | RCU | WCU | CPU ms | DynamoDB $ per 1M |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"The table has {indexes} secondary indexes (the list pages, and the due index of "
            "deadlines to apply): workflows whole, runs by their keys only, so that a write writes an index only where it changes what "
            "the index holds of the item; WCU includes those writes. Every read of the table is "
            "strongly consistent (a decision must see the latest state), so it costs one unit "
            "per 4 KB, not half; index reads are eventually consistent. A run page is one Query "
            "per shard of its list and one BatchGetItem of the runs it shows.",
            "",
            f"**One million approvals, this service** (API Gateway's {API_NAMES[api_type]}, the "
            "packaged template's default, + Lambda + DynamoDB on-demand). Lambda duration = CPU "
            "per approval measured here, stretched by "
            f"1,769 MB / memory (Lambda's CPU share below one vCPU), plus {DEFAULT_LATENCY_MS:.0f} ms "
            f"per DynamoDB request ({LATENCY_MS['TransactWriteItems']:.0f} ms per transaction) of "
            "waiting; billed per 1 ms. DynamoDB per approval: "
            f"{approve['rcu']:.2f} RRU x $0.125/M + {approve['wcu']:.2f} WRU x $0.625/M = "
            f"${ddb:.2f} per million; the WRU include the {approve['stream_wcu']:.2f} the relay "
            "writes from the table's stream for it (the inbox entries the approval left "
            "behind). The relay's own invocations, and the events' way to webhooks (EventBridge, "
            "SQS, the webhook sender), are not in this price: the Step Functions pattern below "
            "has no events to send either.",
            "",
            "| memory | Lambda duration | API Gateway | Lambda requests | Lambda compute | "
            "DynamoDB | total |",
            "|---|---|---|---|---|---|---|",
            *service_rows,
            "",
            *all_in_rows,
            "",
            "**The same approvals with the AWS Step Functions human-approval pattern** (Standard "
            "workflow; each step a `.waitForTaskToken` task whose Lambda hands the token to the "
            "approver, then a Choice state on the answer; the approver's click goes through the "
            "same API Gateway API as the service's to a Lambda that calls `SendTaskSuccess`). "
            "Per approval: 2 state "
            "transitions, plus the final Succeed state once per 3-step run (1/3 per approval); "
            "one API Gateway request; two Lambda invocations of one AWS call each (duration "
            f"modelled as above from the measured CPU of one warm boto3 call, "
            f"{one_call_cpu * 1e3:.2f} ms, plus {DEFAULT_LATENCY_MS:.0f} ms). Run history is kept "
            "by Step Functions at no charge, so no DynamoDB.",
            "",
            "| memory | state transitions | API Gateway | Lambda | total |",
            "|---|---|---|---|---|",
            *sfn_rows,
            "",
            "**History growth.** An approve on a run of a long workflow whose history holds "
            f"{HISTORY_SMALL} or {HISTORY_BIG:,} actions (written straight into the table), "
            "priced as above at 128 MB, with the whole run as the answer (the default: as GET "
            "/runs/{id}, history included, so the decision reads the run's whole partition) and "
            "with `Prefer: return=minimal` (the run without its history: the decision reads the "
            "run item alone). Either way one read and one transaction.",
            "",
            "| actions | answer | requests | RCU | WCU | CPU ms | answer bytes | $ per 1M |",
            "|---|---|---|---|---|---|---|---|",
            *history_rows,
            "",
            PRICE_NOTE,
        ]
    )
    report.finish()


if __name__ == "__main__":
    main()
