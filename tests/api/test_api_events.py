"""GET /runs/{id}/events through chalice.test.Client, on each backend: the
run's CloudEvents, oldest first, paginated like the lists; every response
checked against the OpenAPI document by the Api helper."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from tests.support.api import Api
from tests.support.shapes import BAD_PATH_IDS, MISSING_ID, assert_error, assert_utc_timestamp

ENVELOPE = {
    "specversion",
    "id",
    "source",
    "type",
    "subject",
    "time",
    "datacontenttype",
    "sequence",
    "data",
}


def events_of(api: Api, run_id: int, limit: Optional[int] = None) -> list[dict[str, Any]]:
    """Every event of the run, walking the pages."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = [f"limit={limit}"] if limit else []
        if cursor:
            query.append(f"cursor={cursor}")
        path = f"/runs/{run_id}/events" + ("?" + "&".join(query) if query else "")
        response = api.get(path)
        assert response.status_code == 200, response.body
        page = response.json_body
        if limit:
            assert len(page["items"]) <= limit
        found += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def types(found: list[dict[str, Any]]) -> list[str]:
    return [event["type"].removeprefix("approval.") for event in found]


def test_a_runs_events_tell_each_transition_in_order(api: Api) -> None:
    workflow, run = api.started_run(steps=("Manager", "Finance"))
    api.approve(run["id"], "maria", "Within budget")
    finished = api.approve(run["id"], "finn")

    found = events_of(api, run["id"])

    assert types(found) == [
        "run.started",
        "step.activated",
        "step.approved",
        "step.activated",
        "step.approved",
        "run.completed",
    ]
    assert [event["sequence"] for event in found] == [f"{n:020d}" for n in range(1, 7)]
    for event in found:
        assert set(event) == ENVELOPE
        assert event["specversion"] == "1.0"
        assert event["source"] == "/approval-workflows/dev"
        assert event["subject"] == f"runs/{run['id']}"
        assert event["datacontenttype"] == "application/json"
        assert_utc_timestamp(event["time"])
        assert event["data"]["run_id"] == run["id"]
        assert event["data"]["workflow_id"] == workflow["id"]
    assert len({event["id"] for event in found}) == 6
    approved = found[2]["data"]
    assert (approved["actor"], approved["comment"], approved["status"]) == (
        "maria",
        "Within budget",
        "in_progress",
    )
    assert approved["step"] == workflow["steps"][0]
    assert found[3]["data"]["step"] == workflow["steps"][1]
    assert found[3]["data"]["actor"] is None
    assert found[-1]["data"]["status"] == "completed" and found[-1]["data"]["step"] is None
    assert found[-1]["data"]["head_hash"] == finished["head_hash"]
    assert found[-1]["time"] == finished["updated_at"]


def test_a_rejected_run_tells_the_rejection_with_its_comment(api: Api) -> None:
    _, run = api.started_run(steps=("Manager",))
    api.reject(run["id"], "bob", "Too dear")
    found = events_of(api, run["id"])
    assert types(found) == ["run.started", "step.activated", "step.rejected", "run.rejected"]
    assert found[2]["data"]["comment"] == found[3]["data"]["comment"] == "Too dear"
    assert found[3]["data"]["actor"] == "bob"


def test_a_refused_decision_adds_no_event(api: Api) -> None:
    _, run = api.started_run(steps=("Manager",))
    api.approve(run["id"])
    assert api.post(f"/runs/{run['id']}/reject", {"actor": "late"}).status_code == 409
    assert api.post(f"/runs/{run['id']}/approve", {}).status_code == 400
    assert types(events_of(api, run["id"]))[-1] == "run.completed"
    assert len(events_of(api, run["id"])) == 4


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_pages_walk_every_event_once_in_order(api: Api, limit: int) -> None:
    _, run = api.started_run(steps=("A", "B", "C"))
    for _ in range(3):
        api.approve(run["id"])
    assert events_of(api, run["id"], limit) == events_of(api, run["id"])


def test_a_full_last_page_has_no_cursor(api: Api) -> None:
    _, run = api.started_run(steps=("A",))
    page = api.get(f"/runs/{run['id']}/events?limit=2").json_body
    assert len(page["items"]) == 2 and page["next_cursor"] is None


def test_a_cursor_of_another_run_or_list_answers_400(api: Api) -> None:
    workflow, first = api.started_run(steps=("A",))
    second = api.start_run(workflow["id"])
    cursor = api.get(f"/runs/{first['id']}/events?limit=1").json_body["next_cursor"]
    assert_error(api.get(f"/runs/{second['id']}/events?cursor={cursor}"), 400)
    runs_cursor = api.get("/runs?limit=1").json_body["next_cursor"]
    assert_error(api.get(f"/runs/{first['id']}/events?cursor={runs_cursor}"), 400)


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=101", "cursor=", "status=completed", "limit=1&limit=2"]
)
def test_a_bad_query_answers_400(api: Api, query: str) -> None:
    _, run = api.started_run(steps=("A",))
    assert_error(api.get(f"/runs/{run['id']}/events?{query}"), 400)


def test_an_unknown_run_answers_404(api: Api) -> None:
    assert_error(api.get(f"/runs/{MISSING_ID}/events"), 404, f"Run {MISSING_ID} not found")
    for bad in BAD_PATH_IDS:
        assert api.get(f"/runs/{bad}/events").status_code == 404
