"""What is being approved: a run's input, its workflow's input schema, and the
steps that apply only when their condition holds for it. On every backend."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage import Backend
from tests.api.test_api_audit import verify_offline
from tests.support import chain, tamper
from tests.support.api import Api
from tests.support.shapes import assert_run

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["amount"],
    "properties": {
        "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
        "supplier": {"type": "string", "minLength": 1},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["sku"],
                "properties": {"sku": {"type": "string"}},
            },
        },
    },
}
FINANCE_WHEN = {">=": [{"var": "amount"}, 1000]}
CFO_WHEN = {">": [{"var": "amount"}, 10000]}
TIERED = [
    "Manager",
    {"name": "Finance", "when": FINANCE_WHEN},
    {"name": "CFO", "when": CFO_WHEN},
]


def tiered(api: Api, steps: Any = TIERED, schema: Any = SCHEMA) -> dict[str, Any]:
    body = {"name": "Tiered purchase", "steps": steps, "input_schema": schema}
    response = api.post("/workflows", body)
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def started(api: Api, workflow_id: int, data: Any) -> dict[str, Any]:
    response = api.post("/runs", {"workflow_id": workflow_id, "title": "PO-1042", "input": data})
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def event_types(api: Api, run_id: int) -> list[tuple[str, Any]]:
    body = api.get(f"/runs/{run_id}/events?limit=100").json_body
    return [(event["type"], (event["data"]["step"] or {}).get("name")) for event in body["items"]]


def until_ended(api: Api, run: dict[str, Any]) -> tuple[dict[str, Any], int]:
    decisions = 0
    while run["status"] == "in_progress":
        run = api.approve(run["id"], actor=f"approver{decisions}")
        decisions += 1
    return run, decisions


@pytest.mark.parametrize(
    ("amount", "decided", "skipped"),
    [
        (500, ["Manager"], ["Finance", "CFO"]),
        (5000, ["Manager", "Finance"], ["CFO"]),
        (50000, ["Manager", "Finance", "CFO"], []),
    ],
)
def test_a_tiered_purchase_order_takes_one_decision_per_step_its_amount_meets(
    api: Api, amount: int, decided: list[str], skipped: list[str]
) -> None:
    workflow = tiered(api)
    run = started(api, workflow["id"], {"amount": amount, "supplier": "Acme"})

    final, decisions = until_ended(api, run)

    assert (final["status"], decisions) == ("completed", len(decided))
    stored = api.get_run(run["id"])
    assert_run(stored)
    assert [(a["step_name"], a["action"]) for a in stored["actions"]] == [
        *[(name, "approve") for name in decided],
        *[(name, "skip") for name in skipped],
    ]
    skips = [a for a in stored["actions"] if a["action"] == "skip"]
    assert {a["actor"] for a in skips} <= {"system:conditions"}
    words = {"Finance": "amount >= 1000", "CFO": "amount > 10000"}
    assert [a["comment"] for a in skips] == [words[name] for name in skipped]
    chain.assert_chained(stored)
    assert event_types(api, run["id"])[-1 - len(skipped) :] == [
        *[("approval.step.skipped", name) for name in skipped],
        ("approval.run.completed", None),
    ]


def test_a_run_whose_first_steps_do_not_apply_is_created_past_them(api: Api) -> None:
    workflow = tiered(api, [{"name": "Finance", "when": FINANCE_WHEN}, "Manager"])

    run = started(api, workflow["id"], {"amount": 10})

    assert (run["status"], run["current_step"]["name"]) == ("in_progress", "Manager")
    assert [(a["step_name"], a["action"], a["actor"]) for a in run["actions"]] == [
        ("Finance", "skip", "system:conditions")
    ]
    chain.assert_chained(run)
    assert event_types(api, run["id"]) == [
        ("approval.run.started", "Finance"),
        ("approval.step.skipped", "Finance"),
        ("approval.step.activated", "Manager"),
    ]
    inbox = api.get("/inbox?actor=anyone").json_body["items"]
    assert [item["id"] for item in inbox] == [run["id"]]
    assert api.approve(run["id"])["status"] == "completed"


def test_a_run_to_which_no_step_applies_is_created_completed(api: Api) -> None:
    workflow = tiered(
        api, [{"name": "Finance", "when": FINANCE_WHEN}, {"name": "CFO", "when": CFO_WHEN}]
    )

    run = started(api, workflow["id"], {"amount": 10})

    assert (run["status"], run["current_step"], run["current_step_since"]) == (
        "completed",
        None,
        None,
    )
    assert [a["action"] for a in run["actions"]] == ["skip", "skip"]
    chain.assert_chained(run)
    assert [kind for kind, _ in event_types(api, run["id"])] == [
        "approval.run.started",
        "approval.step.skipped",
        "approval.step.skipped",
        "approval.run.completed",
    ]
    assert api.get("/inbox?actor=anyone").json_body["items"] == []
    audit = api.get(f"/runs/{run['id']}/audit").json_body
    assert audit["valid"] and audit["state_valid"], audit
    refused = api.post(f"/runs/{run['id']}/approve", {"actor": "late"})
    assert refused.status_code == 409


def test_a_step_appended_later_is_judged_when_a_run_reaches_it(api: Api) -> None:
    workflow = tiered(api, ["Manager"])
    small = started(api, workflow["id"], {"amount": 50})
    large = started(api, workflow["id"], {"amount": 50000})

    appended = api.post(f"/workflows/{workflow['id']}/steps", {"name": "CFO", "when": CFO_WHEN})

    assert appended.status_code == 201, appended.body
    assert appended.json_body["when"] == CFO_WHEN
    assert api.approve(small["id"])["status"] == "completed"
    moved = api.approve(large["id"])
    assert (moved["status"], moved["current_step"]["name"]) == ("in_progress", "CFO")


@pytest.mark.parametrize(
    ("data", "pointer"),
    [
        ({"amount": -5}, "/amount: -5 is less than the minimum of 0"),
        ({"amount": "5000"}, "/amount: "),
        ({}, "/amount: "),
        ({"amount": 1, "supplier": ""}, "/supplier: "),
        ({"amount": 1, "lines": [{"sku": "A"}, {"qty": 2}]}, "/lines/1/sku: "),
    ],
)
def test_an_input_that_breaks_the_schema_is_422_naming_its_pointer_and_stores_nothing(
    api: Api, data: Any, pointer: str
) -> None:
    """The document cannot state a stored workflow's schema: a request valid by
    it whose input breaks that schema is 422, not 400."""
    workflow = tiered(api)

    response = api.post("/runs", {"workflow_id": workflow["id"], "title": "PO", "input": data})

    assert response.status_code == 422, response.body
    message = response.json_body["error"]
    assert f"'input' does not meet the workflow's schema at {pointer}" in message, message
    assert api.get("/runs").json_body["items"] == []


def test_a_run_started_without_input_has_an_empty_one_and_its_schema_still_applies(
    api: Api,
) -> None:
    plain = api.create_workflow(steps=["Manager"])
    run = api.start_run(plain["id"])
    assert run["input"] == {}
    assert api.get_run(run["id"])["input"] == {}

    response = api.post("/runs", {"workflow_id": tiered(api)["id"], "title": "PO"})
    assert response.status_code == 422
    assert "at /amount: " in response.json_body["error"]


def test_an_input_over_32_kib_in_its_canonical_form_is_413_and_stores_nothing(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    # {"note":"<n x's>"} is n + 11 bytes in its canonical form.
    at_limit = {"note": "x" * (32 * 1024 - 11)}
    assert started(api, workflow["id"], at_limit)["input"] == at_limit

    response = api.post(
        "/runs",
        {"workflow_id": workflow["id"], "title": "PO", "input": {"note": "x" * (33 * 1024)}},
    )

    assert response.status_code == 413, response.body
    assert response.json_body == {
        "error": "'input' is 33,803 bytes in its canonical form; at most 32,768"
    }
    assert len(api.get("/runs").json_body["items"]) == 1


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([1, 2], "'input' must be a JSON object"),
        ("amount=5", "'input' must be a JSON object"),
    ],
)
def test_an_input_that_cannot_be_one_is_400(api: Api, data: Any, says: str) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    response = api.post("/runs", {"workflow_id": workflow["id"], "title": "PO", "input": data})

    assert response.status_code == 400, response.body
    assert says in response.json_body["error"]
    assert api.get("/runs").json_body["items"] == []


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"a": json.loads("[" * 16 + "]" * 16)}, "'input' nests deeper than 16 levels"),
        ({"big": 2**60}, "'input' holds an integer beyond +-9007199254740991 at /big"),
        ({"lines": [{"qty": -(2**53)}]}, "integer beyond +-9007199254740991 at /lines/0/qty"),
    ],
)
def test_an_input_valid_by_the_document_that_breaks_a_rule_it_cannot_state_is_422(
    api: Api, data: Any, says: str
) -> None:
    """RunInput is any object: its depth and the range of the integers nested in
    it are rules no schema of the document states (422), at a start and a
    resubmit alike."""
    workflow = api.create_workflow(steps=["Manager"])

    response = api.post("/runs", {"workflow_id": workflow["id"], "title": "PO", "input": data})

    assert response.status_code == 422, response.body
    assert says in response.json_body["error"]
    assert api.get("/runs").json_body["items"] == []
    run = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "PO", "requested_by": "rita"}
    ).json_body
    returned = api.post(f"/runs/{run['id']}/return", {"actor": "mo", "comment": "more"})
    assert returned.status_code == 200, returned.body
    resubmitted = api.post(f"/runs/{run['id']}/resubmit", {"actor": "rita", "input": data})
    assert resubmitted.status_code == 422, resubmitted.body
    assert api.get_run(run["id"])["status"] == "returned"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "array"}, "must describe an object"),
        ({"type": "object", "$ref": "#/x"}, "uses '$ref'"),
        ({"type": "object", "required": "a"}, "not a valid JSON Schema"),
        ({"type": "object", "format": "hostname"}, "format at /"),
        ("object", "must be a JSON Schema object"),
    ],
)
def test_a_workflow_with_a_schema_outside_the_subset_is_400_and_not_defined(
    api: Api, schema: Any, says: str
) -> None:
    response = api.post("/workflows", {"name": "Bad", "steps": ["A"], "input_schema": schema})

    assert response.status_code == 400, response.body
    assert says in response.json_body["error"], response.json_body
    assert api.get("/workflows").json_body["items"] == []


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=a)b"}}},
            "'input_schema' holds a pattern this service cannot match at /properties/a/pattern",
        ),
        (
            {"type": "object", "description": "d" * (32 * 1024)},
            "'input_schema' must be at most 32,768 bytes in its canonical form",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "nope"}}},
            "not a valid JSON Schema at /properties/a/type",
        ),
        (
            {"type": "object", "properties": {"a": {"format": "hostname"}}},
            "format at /properties/a",
        ),
    ],
)
def test_a_schema_the_document_admits_that_breaks_a_rule_it_cannot_state_is_422(
    api: Api, schema: Any, says: str
) -> None:
    response = api.post("/workflows", {"name": "Bad", "steps": ["A"], "input_schema": schema})

    assert response.status_code == 422, response.body
    assert says in response.json_body["error"], response.json_body
    assert api.get("/workflows").json_body["items"] == []


@pytest.mark.parametrize(
    ("when", "says"),
    [
        ({"max": [1, 2]}, "Step 'CFO': 'when' uses 'max'"),
        ({">": [{"var": "amount"}]}, "takes two operands"),
        ("amount > 10000", "'when' must be a condition object"),
    ],
)
def test_a_condition_outside_the_subset_is_400_at_definition(
    api: Api, when: Any, says: str
) -> None:
    """The document's Condition schema states these shapes."""
    assert_refused_at_definition(api, when, 400, says)


@pytest.mark.parametrize(
    ("when", "says"),
    [
        (
            {">": [{"var": "amout"}, 1]},
            "Step 'CFO': 'when' reads 'amout', which the workflow's input_schema does not define",
        ),
        (
            {">": [{"var": "amount"}, "10000"]},
            "Step 'CFO': 'when' compares amount (a number) with \"10000\" (a text): values of "
            "different types never compare, so it can never hold",
        ),
        ({"in": [{"var": "supplier"}, [1, 2]]}, "looks for supplier (null or a text) among"),
        (json.loads('{"!":' * 17 + "true" + "}" * 17), "'when' nests deeper than 16"),
    ],
)
def test_a_condition_that_reads_past_the_schema_or_can_never_hold_is_422_at_definition(
    api: Api, when: Any, says: str
) -> None:
    """Valid by the document, which cannot state the workflow's schema or the
    depth of a condition: 422, and nothing is defined or appended."""
    assert_refused_at_definition(api, when, 422, says)


def assert_refused_at_definition(api: Api, when: Any, status: int, says: str) -> None:
    response = api.post(
        "/workflows",
        {"name": "Bad", "steps": ["A", {"name": "CFO", "when": when}], "input_schema": SCHEMA},
    )
    assert response.status_code == status, response.body
    assert says in response.json_body["error"], response.json_body
    assert api.get("/workflows").json_body["items"] == []

    workflow = tiered(api, ["Manager"])
    appended = api.post(f"/workflows/{workflow['id']}/steps", {"name": "CFO", "when": when})
    assert appended.status_code == status, appended.body
    assert says in appended.json_body["error"], appended.json_body
    assert [step["name"] for step in api.get_workflow(workflow["id"])["steps"]] == ["Manager"]


def test_a_property_named_with_a_dot_cannot_be_read_by_a_condition(api: Api) -> None:
    """A path splits at each "." (JSON Logic's var): the CFO step reading
    "cost.eur" of a schema whose property is named "cost.eur" would be skipped
    for every run, 50,000 EUR too. It is refused where it is defined; the same
    field nested (cost, then eur) is read."""
    dotted = {
        "type": "object",
        "required": ["cost.eur"],
        "properties": {"cost.eur": {"type": "number"}},
    }
    cfo = {"name": "CFO", "when": {">": [{"var": "cost.eur"}, 10000]}}

    response = api.post(
        "/workflows", {"name": "Dotted", "steps": ["Manager", cfo], "input_schema": dotted}
    )

    assert response.status_code == 422, response.body
    assert response.json_body["error"] == (
        "Step 'CFO': 'when' reads 'cost.eur', which is eur within cost: a path splits at "
        "each '.', so the input_schema's property 'cost.eur' cannot be read by a "
        "condition; name it without a '.'"
    )
    workflow = tiered(api, ["Manager"], dotted)
    appended = api.post(f"/workflows/{workflow['id']}/steps", cfo)
    assert appended.status_code == 422, appended.body
    nested = {
        "type": "object",
        "required": ["cost"],
        "properties": {
            "cost": {
                "type": "object",
                "required": ["eur"],
                "properties": {"eur": {"type": "number"}},
            }
        },
    }
    reads = api.post(
        "/workflows", {"name": "Nested", "steps": ["Manager", cfo], "input_schema": nested}
    )
    assert reads.status_code == 201, reads.body
    run = started(api, reads.json_body["id"], {"cost": {"eur": 50000}})
    assert api.approve(run["id"])["current_step"]["name"] == "CFO"


def test_without_a_schema_a_condition_may_read_any_path(api: Api) -> None:
    workflow = api.create_workflow(steps=["A"])
    when = {"==": [{"var": "supplier.country"}, "DE"]}
    response = api.post(f"/workflows/{workflow['id']}/steps", {"name": "Customs", "when": when})
    assert response.status_code == 201, response.body
    german = started(api, workflow["id"], {"supplier": {"country": "DE"}})
    other = started(api, workflow["id"], {"supplier": "Acme"})
    assert api.approve(german["id"])["current_step"]["name"] == "Customs"
    assert api.approve(other["id"])["status"] == "completed"


def test_the_workflow_shows_its_schema_and_each_steps_condition(api: Api) -> None:
    workflow = tiered(api)

    shown = api.get_workflow(workflow["id"])

    assert shown == workflow
    assert shown["input_schema"] == SCHEMA
    assert [step["when"] for step in shown["steps"]] == [None, FINANCE_WHEN, CFO_WHEN]
    listed = api.get("/workflows").json_body["items"]
    assert listed == [shown]


def test_lists_and_the_inbox_carry_the_input(api: Api) -> None:
    workflow = tiered(api)
    data = {"amount": 1200, "supplier": "Zürich Bürobedarf", "lines": [{"sku": "LAP-14"}]}
    run = started(api, workflow["id"], data)

    assert run["input"] == data
    assert [item["input"] for item in api.get("/runs").json_body["items"]] == [data]
    assert [item["input"] for item in api.get("/inbox?actor=ann").json_body["items"]] == [data]
    assert api.approve(run["id"])["input"] == data


def test_the_schema_and_the_input_keep_the_order_they_were_given_in(api: Api) -> None:
    """The page shows the schema's fields in its order, then the input's others in
    theirs: no backend may sort them (neither order here is alphabetical)."""
    workflow = tiered(api)
    data = {"supplier": "Acme", "zone": "EU", "amount": 5, "cost_centre": "4711"}
    run = started(api, workflow["id"], data)

    schemas = [api.get_workflow(workflow["id"])["input_schema"]]
    schemas += [item["input_schema"] for item in api.get("/workflows").json_body["items"]]
    in_order = ["amount", "supplier", "lines"]
    assert [list(schema["properties"]) for schema in schemas] == [in_order] * 2
    inputs = [api.get_run(run["id"])["input"]]
    inputs += [item["input"] for item in api.get("/inbox?actor=ann").json_body["items"]]
    inputs += [api.approve(run["id"])["input"]]
    inputs += [item["input"] for item in api.get("/runs").json_body["items"]]
    assert [list(each) for each in inputs] == [list(data)] * 4


def test_events_carry_the_input_when_the_run_starts_and_its_digest_after(api: Api) -> None:
    workflow = tiered(api)
    data = {"amount": 5000, "supplier": "Acme"}
    run = started(api, workflow["id"], data)
    until_ended(api, run)
    digest = hashlib.sha256(chain.canonical(data).encode("utf-8")).hexdigest()

    events = api.get(f"/runs/{run['id']}/events?limit=100").json_body["items"]

    assert events[0]["type"] == "approval.run.started"
    assert events[0]["data"]["input"] == data
    assert {event["data"]["input_digest"] for event in events} == {digest}
    assert all("input" not in event["data"] for event in events[1:])
    plain = api.start_run(api.create_workflow(steps=["A"])["id"])
    first = api.get(f"/runs/{plain['id']}/events").json_body["items"][0]
    assert (first["data"]["input"], first["data"]["input_digest"]) == ({}, None)


def test_the_audit_chain_binds_the_input(api: Api, tmp_path: Path) -> None:
    workflow = tiered(api)
    data = {"amount": 50000, "supplier": "Acme"}
    run, _ = until_ended(api, started(api, workflow["id"], data))

    audit = api.get(f"/runs/{run['id']}/audit").json_body

    digest = hashlib.sha256(chain.canonical(data).encode("utf-8")).hexdigest()
    assert (audit["input"], audit["genesis"]["input_digest"]) == (data, digest)
    assert audit["valid"] and audit["state_valid"], audit
    assert chain.first_broken(audit) is None
    chain.assert_chained(api.get_run(run["id"]))
    offline = verify_offline(api, tmp_path, audit)
    assert offline.returncode == 0, offline.stdout
    plain = api.start_run(api.create_workflow(steps=["A"])["id"])
    genesis = api.get(f"/runs/{plain['id']}/audit").json_body["genesis"]
    assert "input_digest" not in genesis


@pytest.mark.parametrize("decided", [0, 2], ids=["not-yet-decided", "decided-twice"])
def test_an_input_changed_in_the_database_makes_the_audit_invalid(
    api: Api, storage: Backend, tmp_path: Path, decided: int
) -> None:
    workflow = tiered(api)
    run = started(api, workflow["id"], {"amount": 50000})
    for n in range(decided):
        api.approve(run["id"], actor=f"a{n}")

    tamper.edit_input(storage, run["id"], {"amount": 500})

    audit = api.get(f"/runs/{run['id']}/audit").json_body
    assert audit["input"] == {"amount": 500}
    assert (audit["valid"], audit["first_invalid_seq"]) == (False, 1)
    offline = verify_offline(api, tmp_path, audit)
    assert offline.returncode == 1, offline.stdout


def test_a_saved_audit_whose_input_was_changed_does_not_verify_offline(
    api: Api, tmp_path: Path
) -> None:
    run = started(api, tiered(api)["id"], {"amount": 50000})
    audit = api.get(f"/runs/{run['id']}/audit").json_body

    offline = verify_offline(api, tmp_path, {**audit, "input": {"amount": 5}})

    assert (offline.returncode, offline.stdout) == (
        1,
        f"invalid: run {run['id']}, the input is not the one its chain binds\n",
    )
