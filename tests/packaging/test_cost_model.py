"""The cost benchmark prices the deployment (bench/dynamodb_cost.py, benchmark 4):
the API the packaged template puts in front of the function, the memory it
gives it, the delivery it tells it, and the items an approval really writes,
counted by the benchmark's own ledger, with the relay's writes that follow.

A change to the template or to what a decision writes that the model does not
follow fails here, not silently in the figures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bench import dynamodb_cost
from bench.event_path import EventPath, priced
from tests.packaging.test_packaging import copy_of_the_project, load_script, run_package

pytestmark = pytest.mark.xdist_group("packaging")

FUNCTION = "APIHandler"
TABLE = "cost-model"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = copy_of_the_project(tmp_path_factory.mktemp("project"))
    packaged = run_package(project)
    assert packaged.returncode == 0, packaged.stderr
    expanded: dict[str, Any] = load_script("expand_template").expand(
        json.loads((project / "dist" / "sam.json").read_text())
    )
    return expanded


def present(template: dict[str, Any], name: str) -> bool:
    """Whether the resource is in a stack deployed with the parameters' defaults."""
    condition = template["Resources"][name].get("Condition")
    if condition is None:
        return True
    ((_, (ref, value)),) = template["Conditions"][condition].items()
    return str(template["Parameters"][ref["Ref"]]["Default"]) == value


def test_the_benchmark_prices_the_api_the_template_deploys(template: dict[str, Any]) -> None:
    priced = dynamodb_cost.packaged_api_type()
    assert priced == template["Parameters"]["ApiType"]["Default"]
    deployed = {
        resource["Type"]
        for name, resource in template["Resources"].items()
        if resource["Type"].startswith(("AWS::ApiGateway::", "AWS::ApiGatewayV2::"))
        and present(template, name)
    }
    if priced == "http":
        assert deployed == {
            "AWS::ApiGatewayV2::Api",
            "AWS::ApiGatewayV2::Integration",
            "AWS::ApiGatewayV2::Route",
            "AWS::ApiGatewayV2::Stage",
        }
        # One API request per call: every request reaches the function by one
        # route, no preflight or gateway answer priced apart.
        (route,) = [
            r for r in template["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Route"
        ]
        assert route["Properties"]["RouteKey"] == "$default"
    else:
        assert deployed and all(kind.startswith("AWS::ApiGateway::") for kind in deployed)
    assert dynamodb_cost.api_price(priced) == {"http": 1.00, "rest": 3.50}[priced]


def test_the_benchmark_prices_the_function_as_deployed(template: dict[str, Any]) -> None:
    function = template["Resources"][FUNCTION]["Properties"]
    # Goals 1 and 3 price and model the function's memory.
    assert function["MemorySize"] == dynamodb_cost.packaged_memory_size() == 512
    assert 512 in dynamodb_cost.MEMORY_SIZES
    assert function["Architectures"] == ["x86_64"]  # the price of a GB-second priced
    # Deployed, the stream delivers (no due index entry per event), as priced.
    assert function["Environment"]["Variables"]["WORKFLOW_EVENT_DELIVERY"] == "stream"
    table = template["Resources"]["WorkflowTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}


def test_the_relay_the_benchmark_prices_is_the_one_the_stream_feeds(
    template: dict[str, Any],
) -> None:
    """The run items whose left inbox entries the benchmark has the relay delete
    pass the relay's filter, as do the action items that carry events."""
    from moto.events.models import EventPattern

    (mapping,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and "StreamArn" in json.dumps(r["Properties"]["EventSourceArn"])
    ]
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    run_item = {"PK": {"S": "RUN#1"}, "SK": {"S": "#RUN"}, "inbox_left": {"S": "{}"}}
    action_item = {"PK": {"S": "RUN#1"}, "SK": {"S": "ACT#0000000001"}, "events": {"B": "AQ=="}}
    for name, item in (("MODIFY", run_item), ("INSERT", action_item)):
        record: Any = {
            "eventName": name,
            "dynamodb": {"Keys": {k: item[k] for k in ("PK", "SK")}, "NewImage": item},
        }
        assert any(EventPattern(None, p).matches_event(record) for p in patterns), record


@pytest.fixture
def meter(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """A table in moto, the storage as deployed, and the benchmark's meter on it."""
    from moto import mock_aws

    from chalicelib.storage.dynamodb import adapter as dynamodb
    from chalicelib.storage.dynamodb import client as dynamodb_client
    from chalicelib.storage.dynamodb import schema as dynamodb_schema

    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("WORKFLOW_EVENT_DELIVERY", "stream")
    with mock_aws():
        admin = dynamodb_client.create_client()
        dynamodb_schema.ensure_table(admin, TABLE, stream=False)
        storage = dynamodb.DynamoDBStorage(dynamodb_client.create_client(), TABLE)
        relay_client = dynamodb_client.create_client()
        sender_client = dynamodb_client.create_client()
        sender = (
            dynamodb.DynamoDBStorage(sender_client, TABLE),
            dynamodb_cost.Ledger(sender_client, admin, TABLE),
        )
        meter = dynamodb_cost.Meter(
            dynamodb_cost.Ledger(storage.client, admin, TABLE),
            dynamodb_cost.Ledger(relay_client, admin, TABLE, stream=True),
            relay_client.delete_item,
            TABLE,
            EventPath(TABLE, relay_client.delete_item, sender),
        )
        yield storage, meter


def test_the_benchmark_counts_the_items_an_approval_writes(meter: tuple[Any, Any]) -> None:
    """The model's approval: one read and one transaction of the run's update,
    its action carrying both events, the next step's inbox entry (a completion:
    a step count check instead); each under 1 KB, so two write units each; the
    relay's delete of the entry left behind, one unit; the indexes only when
    the run ends. The ledger's units are these, item for item."""
    from chalicelib import engine

    storage, metered = meter
    workflow = engine.create_workflow(storage, "Modelled", steps=["Manager", "Finance", "CFO"])
    run = engine.start_run(storage, workflow.id, "PO-1042: 12 laptops")
    engine.reject(storage, engine.start_run(storage, workflow.id, "warm").id, "w")  # id blocks
    units = []
    for approval in range(3):
        _, requests = metered.measure(
            lambda: engine.approve(
                storage, run.id, "maria.rossi@example.com", comment="Within budget"
            )
        )
        api = [r for r in requests if not r.stream]
        relayed = [r for r in requests if r.stream]
        assert [r.operation for r in api] == ["Query", "TransactWriteItems"]
        (transaction,) = [r for r in api if r.operation == "TransactWriteItems"]
        written = [
            (kind, body.get("Item", body.get("Key")))
            for entry in transaction.params["TransactItems"]
            for kind, body in entry.items()
        ]
        last = approval == 2
        assert [(kind, what(key)) for kind, key in written] == [
            ("Update", "run"),
            ("Put", "action"),
            ("ConditionCheck", "step count") if last else ("Put", "inbox entry"),
        ]
        (action,) = [item for kind, item in written if kind == "Put" and "events" in item]
        assert dynamodb_cost.item_size(action) <= 1024
        assert transaction.wcu == 2 * len(written)
        assert [r.operation for r in relayed] == ["DeleteItem"]
        assert sum(r.wcu for r in relayed) == 1
        assert transaction.index_wcu == (4 if last else 0)  # the run's status entries move
        units.append(sum(r.wcu + r.index_wcu for r in requests))
    assert units == [7, 7, 11]
    # What the benchmark reports per approval, to the unit.
    assert sum(units) / 3 == pytest.approx(25 / 3)


def what(key: dict[str, Any]) -> str:
    """The kind of item a key is (keys.py's table)."""
    pk, sk = key["PK"]["S"], key["SK"]["S"]
    if sk == "#RUN":
        return "run"
    if sk.startswith("ACT#"):
        return "action"
    if pk.startswith("INBOX#"):
        return "inbox entry"
    if sk == "#STEPS":
        return "step count"
    return f"{pk} {sk}"


def test_an_approval_fits_its_write_unit_with_what_people_write(meter: tuple[Any, Any]) -> None:
    """The benchmark's comment and title are short; the packed events leave room
    for longer ones before the action item needs a second write unit."""
    from chalicelib import engine

    storage, metered = meter
    workflow = engine.create_workflow(storage, "Wordy", steps=["Manager", "Finance"])
    run = engine.start_run(storage, workflow.id, "PO-1042: 12 laptops for the new hires in Lyon")
    comment = "Within the quarter's budget, as agreed with finance on Monday; order them now."
    _, requests = metered.measure(lambda: engine.approve(storage, run.id, "ann", comment=comment))
    (transaction,) = [r for r in requests if r.operation == "TransactWriteItems"]
    (action,) = [
        body["Item"]
        for entry in transaction.params["TransactItems"]
        for kind, body in entry.items()
        if kind == "Put" and "events" in body["Item"]
    ]
    assert dynamodb_cost.item_size(action) <= 1024


def test_the_benchmark_follows_an_approvals_events_to_the_webhook(
    meter: tuple[Any, Any],
) -> None:
    """Goal 1's way out: the relay puts the two events the action item carries,
    deletes the inbox entry left behind, and the sender delivers both, in
    order, reading the run's partition and marking the action item once; the
    approval's own requests are what they are without it."""
    from chalicelib import engine

    storage, metered = meter
    workflow = engine.create_workflow(storage, "Modelled", steps=["Manager", "Finance"])
    engine.reject(storage, engine.start_run(storage, workflow.id, "warm").id, "w")  # id blocks
    delivered: list[tuple[str, int]] = []
    metered.path.sender_storage.mark_delivered = _spy(
        metered.path.sender_storage.mark_delivered, delivered
    )
    run, _ = metered.measure(
        lambda: engine.start_run(storage, workflow.id, "PO-1042"), follow="POST /runs"
    )
    # A run's start records two event items: each marked by itself.
    assert delivered == [("approval.run.started", 1), ("approval.step.activated", 1)]
    delivered.clear()
    _, requests = metered.measure(
        lambda: engine.approve(storage, run.id, "maria.rossi@example.com"),
        follow=dynamodb_cost.APPROVE,
    )
    assert [r.operation for r in requests if not r.stream] == ["Query", "TransactWriteItems"]
    assert [r.operation for r in requests if r.stream] == ["DeleteItem"]
    (cost,) = metered.path.costs
    assert (cost.events, cost.relayed_records, cost.put_events_calls) == (2, 2, 1)
    # Both events the action item carries sent in order, then marked by one write.
    assert delivered == [("approval.step.approved", 2)]
    # One message for the run: it reads the run's first pending events (two
    # Queries: its event items and its action items), sends both, marks them,
    # and reads no more.
    assert cost.messages == cost.send_calls == 1
    assert [r.operation for r in cost.sender_requests] == ["Query", "Query", "UpdateItem"]
    assert all(r.rcu >= 1 for r in cost.sender_requests if r.operation == "Query")
    prices = priced(metered.path.costs, dynamodb_cost.PRICES, 128, 1769)
    assert prices["EventBridge"] == 2 * 1.00
    # The relay's send, the poller's receive and delete: one message.
    assert prices["SQS"] == pytest.approx(3 * 0.40)
    assert prices["sender invocations"] == pytest.approx(0.20)


def _spy(mark: Any, into: list[tuple[str, int]]) -> Any:
    def marked(pending: Any, now: str, count: int = 1) -> None:
        into.append((pending.event.type, count))
        mark(pending, now, count)

    return marked
