"""GET /workflows/{id}/stats over HTTP, on each backend: runs driven through the
engine with the clock the test sets, then every count and percentile of the
answer checked exactly, the window's bounds, its defaults and its refusals."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Optional
from urllib.parse import quote

import pytest

from chalicelib import engine
from chalicelib.storage import Backend
from tests.support.api import Api
from tests.support.shapes import assert_error
from tests.support.tokens import admin_token, as_, claims, hs256

T0 = datetime(2026, 3, 1, 0, 0, 0)
WINDOW = "from=2026-03-01T00:00:00Z&to=2026-03-01T02:00:00Z"


def at(seconds: float) -> str:
    """The service's stamp `seconds` after T0."""
    return (T0 + timedelta(seconds=seconds)).isoformat(timespec="milliseconds") + "Z"


def clock(seconds: float) -> engine.Clock:
    return lambda: at(seconds)


def stats(api: Api, workflow_id: int, query: str = WINDOW) -> dict[str, Any]:
    response = api.get(f"/workflows/{workflow_id}/stats?{query}")
    assert response.status_code == 200, response.body
    body = response.json_body
    assert isinstance(body, dict)
    return body


def durations(*values: Optional[float], count: int) -> dict[str, Any]:
    p50, p90, p99, longest = values
    return {"count": count, "p50": p50, "p90": p90, "p99": p99, "max": longest}


def purchase_orders(api: Api) -> dict[str, Any]:
    return api.create_workflow(
        steps=[
            {"name": "Manager", "required_approvals": 2},
            {
                "name": "Finance",
                "when": {">=": [{"var": "amount"}, 1000]},
                "deadline_seconds": 3600,
                "on_deadline": "reject",
            },
            "CFO",
        ]
    )


def start(storage: Backend, workflow_id: int, seconds: float, amount: int) -> int:
    run = engine.start_run(
        storage, workflow_id, "PO", "rita", clock=clock(seconds), data={"amount": amount}
    )
    return run.id


def approve(storage: Backend, run_id: int, actor: str, seconds: float) -> None:
    engine.approve(storage, run_id, actor, clock=clock(seconds))


def test_every_count_and_percentile_of_a_window_is_exact(api: Api, storage: Backend) -> None:
    wid = purchase_orders(api)["id"]
    # Completed: Manager's quorum met at 300, Finance at 900, CFO at 1000.
    r1 = start(storage, wid, 0, 5000)
    approve(storage, r1, "amy", 100)
    approve(storage, r1, "bo", 300)
    approve(storage, r1, "fay", 900)
    approve(storage, r1, "cy", 1000)
    # Finance skipped (amount below 1000); the CFO rejects at 470.
    r2 = start(storage, wid, 10, 50)
    approve(storage, r2, "amy", 60)
    approve(storage, r2, "bo", 70)
    engine.reject(storage, r2, "cy", clock=clock(470))
    # Returned at 220, resubmitted at 1220, at Finance since 1250: due at 4850, overdue now.
    r3 = start(storage, wid, 20, 5000)
    engine.return_run(storage, r3, "amy", "Quote missing", clock=clock(220))
    engine.resubmit(storage, r3, "rita", clock=clock(1220))
    approve(storage, r3, "amy", 1240)
    approve(storage, r3, "bo", 1250)
    # Cancelled by its requester at 50.
    r4 = start(storage, wid, 30, 5000)
    engine.cancel(storage, r4, "rita", clock=clock(50))
    # At Finance since 240; its deadline rejects it at 3840.
    r5 = start(storage, wid, 40, 5000)
    approve(storage, r5, "amy", 140)
    approve(storage, r5, "bo", 240)
    assert engine.sweep(storage, clock(3840)) == 1
    # Outside the window: a millisecond before `from`, and at `to` (exclusive).
    before = start(storage, wid, -0.001, 5000)
    approve(storage, before, "amy", 1)
    start(storage, wid, 7200, 5000)

    answer = stats(api, wid)

    assert answer == {
        "workflow_id": wid,
        "from": "2026-03-01T00:00:00.000Z",
        "to": "2026-03-01T02:00:00.000Z",
        "truncated": False,
        "runs": {
            "started": 5,
            "completed": 1,
            "rejected": 2,
            "returned": 0,
            "cancelled": 1,
            "in_progress": 1,
            "overdue": 1,
        },
        # Ended: 20 (cancelled), 460, 1000, 3800.
        "run_seconds": durations(460, 3800, 3800, 3800, count=4),
        "steps": [
            {
                "name": "Manager",
                "step_order": 1,
                "step_id": answer["steps"][0]["step_id"],
                "decisions": 9,
                "approvals": 8,
                "rejections": 0,
                "returns": 1,
                "skips": 0,
                # 30 (after the resubmit), 60, 200 (the return), 200, 300.
                "wait_seconds": durations(200, 300, 300, 300, count=5),
            },
            {
                "name": "Finance",
                "step_order": 2,
                "step_id": answer["steps"][1]["step_id"],
                "decisions": 2,
                "approvals": 1,
                "rejections": 1,
                "returns": 0,
                "skips": 1,
                "wait_seconds": durations(600, 3600, 3600, 3600, count=2),
            },
            {
                "name": "CFO",
                "step_order": 3,
                "step_id": answer["steps"][2]["step_id"],
                "decisions": 2,
                "approvals": 1,
                "rejections": 1,
                "returns": 0,
                "skips": 0,
                "wait_seconds": durations(100, 400, 400, 400, count=2),
            },
        ],
        "overdue_runs": [r3],
    }


def test_the_window_starts_inclusive_and_ends_exclusive_to_the_millisecond(
    api: Api, storage: Backend
) -> None:
    wid = api.create_workflow(steps=["Manager"])["id"]
    first = start(storage, wid, 0, 1)
    last = start(storage, wid, 59.999, 1)
    start(storage, wid, 60, 1)

    def started(query: str) -> int:
        return int(stats(api, wid, query)["runs"]["started"])

    assert started("from=2026-03-01T00:00:00Z&to=2026-03-01T00:01:00Z") == 2
    assert started("from=2026-03-01T00:00:00.001Z&to=2026-03-01T00:01:00Z") == 1
    assert started("from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:59.999Z") == 1
    # Offsets are instants: 01:00+01:00 is midnight UTC.
    assert started(f"from={quote('2026-03-01T01:00:00+01:00')}&to=2026-03-01T00:01:00.001Z") == 3
    assert (first, last) != (0, 0)


def test_an_empty_window_answers_zeros_and_nulls(api: Api) -> None:
    wid = api.create_workflow(steps=["Manager", "Finance"])["id"]

    answer = stats(api, wid)

    assert answer["runs"] == dict.fromkeys(answer["runs"], 0)
    assert answer["run_seconds"] == durations(None, None, None, None, count=0)
    assert [(s["name"], s["decisions"], s["skips"]) for s in answer["steps"]] == [
        ("Manager", 0, 0),
        ("Finance", 0, 0),
    ]
    assert all(s["wait_seconds"]["p50"] is None for s in answer["steps"])
    assert (answer["truncated"], answer["overdue_runs"]) == (False, [])


def test_the_default_window_is_the_last_30_days(api: Api) -> None:
    wid = api.create_workflow(steps=["Manager"])["id"]
    api.start_run(wid)

    answer = stats(api, wid, "")

    ends = datetime.fromisoformat(answer["to"].replace("Z", "+00:00"))
    starts = datetime.fromisoformat(answer["from"].replace("Z", "+00:00"))
    assert ends - starts == timedelta(days=30)
    assert answer["runs"]["started"] == answer["runs"]["in_progress"] == 1
    only_to = stats(api, wid, "to=2026-03-31T00:00:00Z")
    assert only_to["from"] == "2026-03-01T00:00:00.000Z"


@pytest.mark.parametrize(
    "query",
    [
        "from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:00Z",
        "from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z",
        "from=2025-01-01T00:00:00Z&to=2026-01-02T00:00:01Z",
        "from=2099-01-01T00:00:00Z",
    ],
)
def test_a_window_that_is_none_or_too_long_answers_422(api: Api, query: str) -> None:
    """Valid by the parameters' schemas, and refused for a rule no schema states."""
    wid = api.create_workflow(steps=["Manager"])["id"]
    assert_error(api.get(f"/workflows/{wid}/stats?{query}"), 422)


@pytest.mark.parametrize(
    "query",
    [
        "from=2026-03-01",
        "to=yesterday",
        "from=2026-03-01T00:00:00",
        "since=2026-03-01T00:00:00Z",
        "from=2026-03-01T00:00:00Z&from=2026-03-02T00:00:00Z",
    ],
)
def test_a_window_that_is_no_date_time_answers_400(api: Api, query: str) -> None:
    wid = api.create_workflow(steps=["Manager"])["id"]
    assert_error(api.get(f"/workflows/{wid}/stats?{query}"), 400)


def test_a_window_of_366_days_is_answered(api: Api) -> None:
    wid = api.create_workflow(steps=["Manager"])["id"]
    stats(api, wid, "from=2025-01-01T00:00:00Z&to=2026-01-02T00:00:00Z")


def test_a_year_no_instant_holds_answers_422(api: Api) -> None:
    wid = api.create_workflow(steps=["Manager"])["id"]
    early = quote("0001-01-01T00:30:00+01:00")  # before year 1 in UTC
    assert_error(api.get(f"/workflows/{wid}/stats?from={early}"), 422)


def test_a_version_counts_only_the_runs_started_on_it_with_its_steps(
    api: Api, storage: Backend
) -> None:
    """A run moved to version 2 still counts for version 1, where it started."""
    wid = api.create_workflow(steps=["Manager"])["id"]
    first, moved = start(storage, wid, 0, 10), start(storage, wid, 60, 10)
    api.post(f"/workflows/{wid}/versions", {"steps": ["Lead", "CFO"]})
    approve(storage, first, "maria", 600)
    moving = {"actor": "ada", "to_version": 2, "step": "Lead"}
    assert api.post(f"/runs/{moved}/move", moving).status_code == 200
    newer = start(storage, wid, 120, 10)
    approve(storage, newer, "lee", 1020)

    def counted(answer: dict[str, Any]) -> tuple[Any, ...]:
        steps = [(s["name"], s["decisions"]) for s in answer["steps"]]
        return answer["runs"]["started"], answer["runs"]["completed"], steps

    assert counted(stats(api, wid, f"{WINDOW}&version=1")) == (2, 1, [("Manager", 1)])
    assert counted(stats(api, wid, f"{WINDOW}&version=2")) == (1, 0, [("Lead", 1), ("CFO", 0)])
    assert counted(stats(api, wid)) == (3, 1, [("Lead", 1), ("CFO", 0)])
    assert_error(api.get(f"/workflows/{wid}/stats?version=3"), 404)
    assert_error(api.get(f"/workflows/{wid}/stats?version=0"), 400)
    assert_error(api.get(f"/workflows/{wid}/stats?version=two"), 400)


def test_an_unknown_workflow_answers_404(api: Api) -> None:
    assert_error(api.get("/workflows/999/stats"), 404)
    assert_error(api.get("/workflows/0/stats"), 404)


def test_in_jwt_mode_admins_and_approvers_read_the_figures(api: Api, secret_mode: None) -> None:
    steps = [
        {"name": "Manager", "approvers": ["user:mo"]},
        {
            "name": "Finance",
            "approvers": ["group:finance"],
            "deadline_seconds": 60,
            "on_deadline": "escalate",
            "escalate_to": ["user:cfo"],
        },
    ]
    created = as_(api, admin_token(), "POST", "/workflows", {"name": "PO", "steps": steps})
    path = f"/workflows/{created.json_body['id']}/stats"
    readers = [
        admin_token(),
        hs256(claims("mo")),
        hs256(claims("fay", groups=["finance"])),
        hs256(claims("cfo")),
    ]
    assert [as_(api, token, "GET", path).status_code for token in readers] == [200] * 4

    refused = as_(api, hs256(claims("rita", groups=["sales"])), "GET", path)

    assert_error(refused, 403)
    assert "approvers" in refused.json_body["error"]


def test_in_jwt_mode_a_step_anyone_decides_lets_anyone_read(api: Api, secret_mode: None) -> None:
    created = as_(api, admin_token(), "POST", "/workflows", {"name": "Open", "steps": ["Any"]})
    path = f"/workflows/{created.json_body['id']}/stats"
    assert as_(api, hs256(claims("rita")), "GET", path).status_code == 200


@pytest.mark.parametrize("cap, value", [("MAX_RUNS", 2), ("MAX_ACTIONS", 5)])
def test_past_a_cap_the_answer_holds_the_earliest_runs_and_says_truncated(
    api: Api, storage: Backend, monkeypatch: pytest.MonkeyPatch, cap: str, value: int
) -> None:
    """At most MAX_RUNS runs with MAX_ACTIONS actions in all (two each here)."""
    from chalicelib.domain import stats as rules

    monkeypatch.setattr(rules, cap, value)
    wid = api.create_workflow(steps=["Manager", "Finance"])["id"]
    for offset in (30, 0, 20):
        run = start(storage, wid, offset, 1)
        approve(storage, run, "amy", offset + 1)
        approve(storage, run, "bo", offset + 3)

    answer = stats(api, wid)

    assert answer["truncated"] is True
    assert answer["runs"]["started"] == answer["runs"]["completed"] == 2
    assert answer["steps"][1]["wait_seconds"] == durations(2, 2, 2, 2, count=2)
    assert (
        stats(api, wid, "from=2026-03-01T00:00:10Z&to=2026-03-01T02:00:00Z")["truncated"] is False
    )
