"""The limits of a definition (chalicelib/domain/limits.py), on every backend: a
workflow at each of them runs end to end, with every field of its runs at its
own limit; one past any of them is refused with 422 naming it, and nothing is
written. DynamoDB is the store they are budgeted for (400 KB an item, 100 items
a transaction): a run that could not be stored there is one no store accepts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.domain import limits
from chalicelib.domain.models import Step
from tests.support.api import Api

# Every field of a run at its own limit, in the characters that cost most:
# four bytes each (U+1F600), or six in JSON (a control character).
WIDE = "\U0001f600"
TITLE = WIDE * 500
COMMENT = "\x01" * 5000
CONDITION = {"and": [0] * 1019}  # never holds; 2,048 bytes, 6,109 in words


def person(n: int) -> str:
    """A user's name of 200 four-byte characters, the `n`th."""
    return WIDE * 199 + chr(0x1F300 + n)


def step_at(
    size: int, name: str, when: Any = None, principals: int = 50, required: int = 1
) -> dict[str, Any]:
    """A step of exactly `size` bytes as the limits count it: `principals`
    approvers (group:g, then users whose names are lengthened to fill it, and
    the step's name to fill the rest), `required` approvals, `when`."""
    approvers = ["group:g"] + [f"user:u{n:02d}-" for n in range(1, principals)]
    rule: dict[str, Any] = {"name": name, "approvers": approvers, "required_approvals": required}
    if when is not None:
        rule["when"] = when
    each = (size - step_size(rule)) // (principals - 1)
    rule["approvers"] = approvers[:1] + [user + "x" * each for user in approvers[1:]]
    rule["name"] += "n" * (size - step_size(rule))
    assert step_size(rule) == size and len(rule["name"]) <= 200
    return rule


def step_size(rule: dict[str, Any]) -> int:
    step = Step(
        0,
        0,
        rule["name"],
        limits.MAX_STEPS,
        tuple(rule.get("approvers", ())),
        rule.get("required_approvals", 1),
        None,
        rule.get("when"),
    )
    return limits.step_size(step)


def condition_of(size: int) -> dict[str, Any]:
    """A condition of exactly `size` canonical bytes that never holds."""
    zeros = (size - len('{"and":[0]}')) // 2 + 1
    condition: dict[str, Any] = {"and": [0] * zeros}
    if len(json.dumps(condition, separators=(",", ":"))) < size:
        condition["and"][-1] = 10  # one byte more
    assert len(json.dumps(condition, separators=(",", ":"))) == size
    return condition


def posted(api: Api, path: str, body: Any) -> Any:
    """The response to `body` sent as UTF-8, unescaped (a definition at its
    limits, ASCII-escaped, would pass the service's 1 MB body limit)."""
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return api.request("POST", path, raw=raw)


def skipped(run: dict[str, Any]) -> int:
    return sum(action["action"] == "skip" for action in run["actions"])


def test_a_workflow_at_the_limits_runs_end_to_end_with_every_field_at_its_own(
    api: Api,
) -> None:
    """Each move here is the largest a definition allows: a start and a
    resubmit that skip MAX_SKIPPED steps and enter 50 inboxes, an approval
    that skips as many and enters 50 more, their events (comments of 5,000
    control characters, a title of 500 four-byte characters, an input of 32
    KiB) carried in one item on DynamoDB."""
    deciders = [person(n) for n in range(2)]
    size = limits.MAX_STEP_BYTES
    gate, landing = step_at(size, "Gate-"), step_at(size, "Landing-")
    conditional = [step_at(size, f"C{n}-", CONDITION) for n in range(limits.MAX_SKIPPED)]
    later = [step_at(size, f"D{n}-", CONDITION) for n in range(limits.MAX_SKIPPED)]
    steps = [*conditional, gate, *later, landing]
    body = {"name": WIDE * 200, "description": COMMENT, "steps": steps}
    created = posted(api, "/workflows", body)
    assert created.status_code == 201, created.body
    workflow = created.json_body
    first = {"note": "\x01" * 5459 + "abc"}  # 32,768 bytes in its canonical form
    requester = WIDE * 200

    started = posted(
        api,
        "/runs",
        {"workflow_id": workflow["id"], "title": TITLE, "requested_by": requester, "input": first},
    )

    assert started.status_code == 201, started.body
    run = started.json_body
    assert (run["current_step"]["name"], skipped(run)) == (gate["name"], limits.MAX_SKIPPED)
    # In the group every step names: a decider's name in every event at its longest.
    decision = {"comment": COMMENT, "groups": ["g"]}
    approved = posted(api, f"/runs/{run['id']}/approve", {"actor": deciders[0], **decision})
    assert approved.status_code == 200, approved.body
    run = approved.json_body
    assert (run["current_step"]["name"], skipped(run)) == (landing["name"], 2 * limits.MAX_SKIPPED)
    returned = posted(api, f"/runs/{run['id']}/return", {"actor": deciders[1], **decision})
    assert returned.status_code == 200, returned.body
    second = {"note": "\x02" * 5459 + "abc"}
    resubmitted = posted(
        api,
        f"/runs/{run['id']}/resubmit",
        {"actor": requester, "comment": COMMENT, "input": second},
    )
    assert resubmitted.status_code == 200, resubmitted.body
    run = resubmitted.json_body
    assert (run["round"], run["current_step"]["name"]) == (2, gate["name"])
    assert skipped(run) == 3 * limits.MAX_SKIPPED
    audit = api.get(f"/runs/{run['id']}/audit").json_body
    assert (audit["valid"], audit["state_valid"]) == (True, True), audit
    events = api.get(f"/runs/{run['id']}/events?limit=100").json_body["items"]
    assert sum(event["type"] == "approval.step.skipped" for event in events) == 36
    assert api.get_workflow(workflow["id"]) == workflow
    inbox = api.get("/inbox?actor=u49-").json_body["items"]
    assert inbox == []  # u49-, lengthened, is another name
    entered = api.get("/inbox?actor=someone&group=g").json_body["items"]
    assert [item["id"] for item in entered] == [run["id"]]


def test_a_workflow_of_the_largest_definition_is_stored_and_read_back(api: Api) -> None:
    steps = [step_at(limits.MAX_STEP_BYTES, f"S{n}-") for n in range(39)]
    body: dict[str, Any] = {"name": "Largest", "description": "", "steps": steps}
    filler = limits.MAX_DEFINITION_BYTES - definition_size(body)
    assert 0 < filler <= 4 * 5000
    body["description"] = WIDE * (filler // 4) + "d" * (filler % 4)
    assert definition_size(body) == limits.MAX_DEFINITION_BYTES

    created = posted(api, "/workflows", body)

    assert created.status_code == 201, created.body
    assert api.get_workflow(created.json_body["id"]) == created.json_body
    body["description"] += "d"
    body["name"] = "Largess"  # as long as the first: unique, and no shorter
    refused = posted(api, "/workflows", body)
    assert refused.status_code == 422, refused.body
    assert refused.json_body["error"] == (
        f"The workflow would be {limits.MAX_DEFINITION_BYTES + 1:,} bytes in its canonical "
        f"form, its steps with it; at most {limits.MAX_DEFINITION_BYTES:,}"
    )


def definition_size(body: dict[str, Any]) -> int:
    from chalicelib.api import validation
    from chalicelib.domain import transitions
    from chalicelib.domain.models import MAX_ID, Workflow

    request = validation.new_workflow(body)
    steps = tuple(
        rule.stored(MAX_ID, MAX_ID, order) for order, rule in enumerate(request.steps, start=1)
    )
    assert transitions  # the definition is the one define_workflow checks
    return limits.definition_size(
        Workflow(MAX_ID, request.name, request.description, "2030-01-02T03:04:05.000Z", steps)
    )


Body = Callable[[int], dict[str, Any]]
# (what grows past its limit, the definition at a count, the limit, what the 422 says)
LIMITS: list[tuple[str, Body, int, str]] = [
    (
        "steps in a row with a condition",
        lambda n: {"steps": [{"name": f"S{i}", "when": {"==": [1, 1]}} for i in range(n)]},
        limits.MAX_SKIPPED,
        f"are {limits.MAX_SKIPPED + 1} steps in a row with a condition; at most 12",
    ),
    (
        "approvals in all",
        lambda n: {
            "steps": [
                {"name": f"S{i}", "required_approvals": min(20, n - 20 * i)}
                for i in range((n + 19) // 20)
            ]
        },
        limits.MAX_APPROVALS,
        "may require at most 100 approvals in all (their required_approvals); these require 101",
    ),
    (
        "bytes of a condition",
        lambda n: {"steps": [{"name": "S", "when": condition_of(n)}]},
        limits.MAX_CONDITION_BYTES,
        "Step 'S': 'when' is 2,049 bytes in its canonical form; at most 2,048",
    ),
    (
        "bytes of a step",
        lambda n: {"steps": [step_at(n, "S")]},
        limits.MAX_STEP_BYTES,
        "bytes in its canonical form (its ids and order counted at their largest); at most 8,192",
    ),
]


@pytest.mark.parametrize(("grows", "body", "limit", "says"), LIMITS, ids=[row[0] for row in LIMITS])
def test_a_definition_at_a_limit_is_defined_and_one_past_it_is_422(
    api: Api, grows: str, body: Body, limit: int, says: str
) -> None:
    at = posted(api, "/workflows", {"name": "At", **body(limit)})
    assert at.status_code == 201, at.body

    past = posted(api, "/workflows", {"name": "Past", **body(limit + 1)})

    assert past.status_code == 422, past.body
    assert says in past.json_body["error"], past.json_body
    assert [w["name"] for w in api.get("/workflows").json_body["items"]] == ["At"]


def test_appending_past_a_limit_is_422_and_appends_nothing(api: Api) -> None:
    """POST /workflows takes at most 50 steps: the step limit is reached by
    appending, and checked there against the workflow as read."""
    names = [f"S{n}" for n in range(50)]
    workflow = api.create_workflow(steps=names)
    for n in range(50, limits.MAX_STEPS):
        api.append_step(workflow["id"], f"S{n}")

    past = api.post(f"/workflows/{workflow['id']}/steps", {"name": "One too many"})

    assert past.status_code == 422, past.body
    assert past.json_body["error"] == "A workflow holds at most 100 steps"
    assert len(api.get_workflow(workflow["id"])["steps"]) == limits.MAX_STEPS
    conditional = api.create_workflow(
        steps=[{"name": f"C{n}", "when": {"==": [1, 2]}} for n in range(12)]
    )
    refused = api.post(
        f"/workflows/{conditional['id']}/steps", {"name": "C12", "when": {"==": [1, 2]}}
    )
    assert refused.status_code == 422, refused.body
    assert "13 steps in a row with a condition" in refused.json_body["error"]
    plain = api.post(f"/workflows/{conditional['id']}/steps", {"name": "Plain"})
    assert plain.status_code == 201, plain.body
