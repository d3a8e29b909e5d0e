"""Safe retries with an Idempotency-Key through the routes, on every backend."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chalice.test import HTTPResponse

import app as app_module
from chalicelib import engine
from chalicelib.domain import errors, idempotency
from chalicelib.domain.models import Run
from chalicelib.storage import Backend
from tests.support.api import JSON_HEADERS, Api
from tests.support.idempotency import (
    IN_PROGRESS,
    FakeClock,
    claim,
)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(app_module.api, "clock", fake)
    return fake


def keyed(key: str) -> dict[str, str]:
    return {**JSON_HEADERS, "Idempotency-Key": key}


def send(api: Api, path: str, body: Any, key: str) -> HTTPResponse:
    return api.post(path, body, headers=keyed(key))


def assert_replay_of(first: HTTPResponse, again: HTTPResponse) -> None:
    assert again.status_code == first.status_code
    assert again.body == first.body
    assert again.headers.get("Location") == first.headers.get("Location")
    assert again.headers[idempotency.REPLAYED_HEADER] == "true"
    assert idempotency.REPLAYED_HEADER not in first.headers


# -- the API, every backend -------------------------------------------------------------


def test_a_retried_create_answers_the_first_201_and_creates_nothing(
    api: Api, clock: FakeClock
) -> None:
    body = {"name": "Purchase", "steps": ["Manager"]}
    first = send(api, "/workflows", body, "create-1")
    clock.now += 60
    again = send(api, "/workflows", body, "create-1")

    assert first.status_code == 201
    assert_replay_of(first, again)  # not 409 "name taken": it did not run again
    assert api.post("/workflows", body).status_code == 409


def test_a_retried_append_adds_one_step(api: Api, clock: FakeClock) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    path = f"/workflows/{workflow['id']}/steps"
    first = send(api, path, {"name": "Finance"}, "append-1")
    again = send(api, path, {"name": "Finance"}, "append-1")

    assert first.status_code == 201
    assert_replay_of(first, again)
    assert [step["name"] for step in api.get_workflow(workflow["id"])["steps"]] == [
        "Manager",
        "Finance",
    ]


def test_a_retried_start_answers_the_same_run(api: Api, clock: FakeClock) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    body = {"workflow_id": workflow["id"], "title": "Laptop"}
    first = send(api, "/runs", body, "start-1")
    again = send(api, "/runs", body, "start-1")

    assert first.status_code == 201
    assert_replay_of(first, again)
    assert api.get(first.headers["Location"]).json_body == first.json_body


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_retried_decision_is_recorded_once(api: Api, clock: FakeClock, decision: str) -> None:
    _, run = api.started_run(steps=["Manager", "Finance", "CFO"])
    path = f"/runs/{run['id']}/{decision}"
    first = send(api, path, {"actor": "alice"}, "decide-1")
    replays = [send(api, path, {"actor": "alice"}, "decide-1") for _ in range(3)]

    assert first.status_code == 200
    for again in replays:
        assert_replay_of(first, again)
    assert api.get_run(run["id"]) == first.json_body
    assert len(first.json_body["actions"]) == 1


def test_the_same_json_in_another_spelling_is_the_same_request(api: Api, clock: FakeClock) -> None:
    _, run = api.started_run()
    path = f"/runs/{run['id']}/approve"
    first = api.post(path, raw=b'{"actor": "alice", "comment": "ok"}', headers=keyed("k"))
    again = api.post(path, raw=b'{"comment":"ok",\n  "actor":"alice"}', headers=keyed("k"))

    assert_replay_of(first, again)
    assert len(api.get_run(run["id"])["actions"]) == 1


def test_a_stored_4xx_is_replayed_even_once_the_request_would_succeed(
    api: Api, clock: FakeClock
) -> None:
    workflow = api.create_workflow()  # no steps yet: a run cannot start
    body = {"workflow_id": workflow["id"], "title": "Early"}
    first = send(api, "/runs", body, "start-early")
    api.append_step(workflow["id"], "Manager")
    again = send(api, "/runs", body, "start-early")

    assert first.status_code == 409
    assert_replay_of(first, again)
    assert api.post("/runs", body).status_code == 201


def test_a_stored_not_in_progress_409_is_replayed(api: Api, clock: FakeClock) -> None:
    _, run = api.started_run(steps=["Manager"])
    api.reject(run["id"])
    first = send(api, f"/runs/{run['id']}/approve", {"actor": "late"}, "late-1")
    again = send(api, f"/runs/{run['id']}/approve", {"actor": "late"}, "late-1")

    assert first.status_code == 409
    assert first.json_body == {"error": "Run is not in progress"}
    assert_replay_of(first, again)


@pytest.mark.parametrize("raw", [b"{nope", b'{"actor": 7}'], ids=["not-json", "invalid"])
def test_a_stored_400_is_replayed(api: Api, clock: FakeClock, raw: bytes) -> None:
    _, run = api.started_run()
    first = api.post(f"/runs/{run['id']}/approve", raw=raw, headers=keyed("bad-body"))
    again = api.post(f"/runs/{run['id']}/approve", raw=raw, headers=keyed("bad-body"))

    assert first.status_code == 400
    assert_replay_of(first, again)


def test_the_key_with_another_body_answers_422_and_changes_nothing(
    api: Api, clock: FakeClock
) -> None:
    _, run = api.started_run()
    path = f"/runs/{run['id']}/approve"
    send(api, path, {"actor": "alice"}, "k")

    response = send(api, path, {"actor": "mallory"}, "k")

    assert response.status_code == 422
    assert set(response.json_body) == {"error"}
    assert [a["actor"] for a in api.get_run(run["id"])["actions"]] == ["alice"]


def test_the_key_on_another_path_answers_422_and_changes_nothing(
    api: Api, clock: FakeClock
) -> None:
    _, first_run = api.started_run()
    _, second_run = api.started_run()
    send(api, f"/runs/{first_run['id']}/approve", {"actor": "alice"}, "k")

    other_run = send(api, f"/runs/{second_run['id']}/approve", {"actor": "alice"}, "k")
    other_decision = send(api, f"/runs/{first_run['id']}/reject", {"actor": "alice"}, "k")

    assert (other_run.status_code, other_decision.status_code) == (422, 422)
    assert api.get_run(second_run["id"]) == second_run
    assert api.get_run(first_run["id"])["status"] == "in_progress"


def test_a_503_releases_the_key_so_a_retry_runs_again(
    api: Api, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run = api.started_run()

    def unavailable(*args: Any, **kwargs: Any) -> Run:
        raise errors.Unavailable("The database is busy; retry shortly")

    with monkeypatch.context() as patched:
        patched.setattr(engine, "approve", unavailable)
        failed = send(api, f"/runs/{run['id']}/approve", {"actor": "alice"}, "k")
    retried = send(api, f"/runs/{run['id']}/approve", {"actor": "alice"}, "k")

    assert failed.status_code == 503
    assert retried.status_code == 200
    assert idempotency.REPLAYED_HEADER not in retried.headers
    assert len(api.get_run(run["id"])["actions"]) == 1


def test_an_unexpected_error_releases_the_key(
    api: Api, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, run = api.started_run()

    def broken(*args: Any, **kwargs: Any) -> Run:
        raise RuntimeError("a bug")

    with monkeypatch.context() as patched:
        patched.setattr(engine, "approve", broken)
        # Past the Api helper: a 500 is what this test provokes, not a contract break.
        failed = api.client.http.post(
            f"/runs/{run['id']}/approve", headers=keyed("k"), body=json.dumps({"actor": "a"})
        )
        assert failed.status_code == 500
    assert send(api, f"/runs/{run['id']}/approve", {"actor": "a"}, "k").status_code == 200


BAD_KEYS = ["", " ", "two words", "x" * 256, "clé", "tab\there"]
# Sign-in's POSTs (/auth/renew, /auth/signout) change only the browser's cookie
# and take no Idempotency-Key: retried as they are. The forms that are not the
# JSON API take none either (docs/notifications.md): a link decides once by
# its token, and Slack's requests carry none.
FORMS = ("/act/{token}", "/integrations/slack/interactions")
POST_ROUTES = sorted(
    path
    for path, methods in app_module.app.routes.items()
    if "POST" in methods and not path.startswith("/auth/") and path not in FORMS
)


@pytest.mark.parametrize("route", POST_ROUTES)
@pytest.mark.parametrize(
    "key", BAD_KEYS, ids=["empty", "space", "inner-space", "256-chars", "non-ascii", "tab"]
)
def test_every_post_route_refuses_a_bad_key_with_400(api: Api, route: str, key: str) -> None:
    path = route.replace("{workflow_id}", "1").replace("{run_id}", "1")
    response = api.post(path, {"name": "x"}, headers=keyed(key))
    assert response.status_code == 400
    assert set(response.json_body) == {"error"}
    assert "Idempotency-Key" in response.json_body["error"]


def test_a_request_while_the_first_is_in_flight_answers_409_and_does_nothing(
    api: Api, storage: Backend, clock: FakeClock
) -> None:
    body = {"name": "In flight"}
    storage.claim_idempotency_key(claim("busy", "/workflows", body, clock.now))
    clock.now += idempotency.LEASE_SECONDS - 1

    response = send(api, "/workflows", body, "busy")

    assert response.status_code == 409
    assert response.json_body == {"error": IN_PROGRESS}
    assert api.post("/workflows", body).status_code == 201  # the name was still free


def test_a_retry_takes_over_a_claim_whose_lease_ran_out(
    api: Api, storage: Backend, clock: FakeClock
) -> None:
    _, run = api.started_run()
    path = f"/runs/{run['id']}/approve"
    storage.claim_idempotency_key(claim("crashed", path, {"actor": "alice"}, clock.now))
    clock.now += idempotency.LEASE_SECONDS

    taken_over = send(api, path, {"actor": "alice"}, "crashed")
    again = send(api, path, {"actor": "alice"}, "crashed")

    assert taken_over.status_code == 200
    assert_replay_of(taken_over, again)
    assert len(api.get_run(run["id"])["actions"]) == 1


def test_a_key_is_forgotten_after_24_hours(api: Api, clock: FakeClock) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    body = {"workflow_id": workflow["id"], "title": "Daily"}
    first = send(api, "/runs", body, "daily")
    clock.now += idempotency.TTL_SECONDS - 1
    assert_replay_of(first, send(api, "/runs", body, "daily"))

    clock.now += 2
    next_day = send(api, "/runs", body, "daily")

    assert next_day.status_code == 201
    assert idempotency.REPLAYED_HEADER not in next_day.headers
    assert next_day.json_body["id"] != first.json_body["id"]


def test_gets_ignore_the_key(api: Api) -> None:
    response = api.request("GET", "/workflows/1", headers=keyed(" not a key "))
    assert response.status_code == 404


def test_every_keyed_approval_of_a_long_history_is_answered_and_replayed(
    api: Api, clock: FakeClock
) -> None:
    # 50 steps, each approved with a 5,000-character comment of CJK text that
    # barely compresses: late answers hold more than DynamoDB keeps in an item.
    import random

    rng = random.Random(50)
    _, run = api.started_run(steps=[f"Step {n}" for n in range(1, 51)])
    for n in range(1, 51):
        comment = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(5000))
        body = {"actor": f"approver {n}", "comment": comment}
        path = f"/runs/{run['id']}/approve"
        first = send(api, path, body, f"approve-{n}")
        assert first.status_code == 200, (n, first.body[:200])
        assert len(first.json_body["actions"]) == n
        assert_replay_of(first, send(api, path, body, f"approve-{n}"))
    assert api.get_run(run["id"])["status"] == "completed"
