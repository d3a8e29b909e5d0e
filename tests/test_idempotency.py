"""Safe retries with an Idempotency-Key: the rules, the storage contract, the API, races."""
from __future__ import annotations

import json
import sqlite3
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Optional

import pytest

import app as app_module
from chalicelib import engine, errors, idempotency
from chalicelib.models import IdempotencyClaim, IdempotencyRecord, Run, StoredResponse
from chalicelib.storage import Storage
from chalicelib.storage.sqlite import EXPIRED_KEYS_PER_CLAIM, SQLiteStorage
from tests.conftest import JSON_HEADERS
from tests.test_concurrency import THREADS, run_together

if TYPE_CHECKING:
    from chalice.test import HTTPResponse

    from tests.conftest import Api

T0 = 1_900_000_000.0
IN_PROGRESS = "A request with this Idempotency-Key is still in progress; retry shortly"


class FakeClock:
    """Seconds since the epoch, standing still until a test moves them."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(app_module, "idempotency_clock", fake)
    return fake


def keyed(key: str) -> dict[str, str]:
    return {**JSON_HEADERS, "Idempotency-Key": key}


def send(api: Api, path: str, body: Any, key: str) -> HTTPResponse:
    return api.post(path, body, headers=keyed(key))


def claim(key: str, path: str, body: Any, now: float = T0) -> IdempotencyClaim:
    """The claim the app makes for POST `path` with `body`."""
    raw = json.dumps(body).encode("utf-8")
    return idempotency.new_claim(key, idempotency.fingerprint("POST", path, raw), now)


def assert_replay_of(first: HTTPResponse, again: HTTPResponse) -> None:
    assert again.status_code == first.status_code
    assert again.body == first.body
    assert again.headers.get("Location") == first.headers.get("Location")
    assert again.headers[idempotency.REPLAYED_HEADER] == "true"
    assert idempotency.REPLAYED_HEADER not in first.headers


# -- the rules -------------------------------------------------------------------

@pytest.mark.parametrize("key", ["a", "!", "~", "x" * 255, "0b2c6f0e-7a1e-4a8b-9d2c-1f5e",
                                 "order:42/attempt#1"])
def test_keys_of_1_to_255_visible_ascii_characters_are_accepted(key: str) -> None:
    assert idempotency.checked_key(key) == key


@pytest.mark.parametrize("key", ["", " ", "two words", "x" * 256, "tab\there", "new\nline",
                                 "clé", "\x7f", "\x00"],
                         ids=["empty", "space", "inner-space", "256-chars", "tab", "newline",
                              "non-ascii", "delete", "nul"])
def test_other_keys_are_invalid_input(key: str) -> None:
    with pytest.raises(errors.InvalidInput, match="Idempotency-Key"):
        idempotency.checked_key(key)


def test_json_bodies_are_compared_canonically() -> None:
    first = idempotency.fingerprint("POST", "/runs", b'{"workflow_id": 1, "title": "t\\u00e9"}')
    same = idempotency.fingerprint("POST", "/runs", '{"title":"té",\n "workflow_id":1}'.encode())
    assert first == same


@pytest.mark.parametrize("other", [
    ("PUT", "/runs", b'{"workflow_id": 1}'),
    ("POST", "/runs/1", b'{"workflow_id": 1}'),
    ("POST", "/runs", b'{"workflow_id": 2}'),
    ("POST", "/runs", b'{"workflow_id": 1.0}'),
    ("POST", "/runs", b'{"workflow_id": 1, "title": null}'),
], ids=["method", "path", "value", "number-type", "extra-field"])
def test_requests_differing_in_method_path_or_body_differ(other: tuple[str, str, bytes]) -> None:
    assert idempotency.fingerprint("POST", "/runs", b'{"workflow_id": 1}') != \
        idempotency.fingerprint(*other)


def test_bodies_that_are_not_json_are_compared_as_bytes() -> None:
    assert idempotency.fingerprint("POST", "/runs", b"{nope") == \
        idempotency.fingerprint("POST", "/runs", b"{nope")
    assert idempotency.fingerprint("POST", "/runs", b"{nope") != \
        idempotency.fingerprint("POST", "/runs", b"{nope ")
    assert idempotency.fingerprint("POST", "/runs", b"\xff") != \
        idempotency.fingerprint("POST", "/runs", b"")
    # A JSON string body and the same characters sent raw are different requests.
    assert idempotency.fingerprint("POST", "/runs", b'"x"') != \
        idempotency.fingerprint("POST", "/runs", b"json:\"x\"")


def test_a_claim_is_leased_for_30_seconds_and_kept_for_24_hours() -> None:
    claimed = idempotency.new_claim("k", "fp", T0 + 0.5)
    assert claimed.lease_until == T0 + 30.5
    assert claimed.expires_at == T0 + 1 + 24 * 3600
    assert claimed.token != idempotency.new_claim("k", "fp", T0 + 0.5).token


def record(fingerprint: str = "fp", token: str = "first", lease_until: float = T0 + 30,
           expires_at: int = int(T0) + 86400, response: Optional[StoredResponse] = None
           ) -> IdempotencyRecord:
    return IdempotencyRecord(fingerprint, token, lease_until, expires_at, response)


DONE = StoredResponse(201, '{"id":1}', "/runs/1")


# (what the storage holds, when a request comes, its fingerprint, what it gets)
HELD_KEY_CASES = pytest.mark.parametrize("held, now, fingerprint, expected", [
    (None, T0, "fp", "claim"),
    (record(), T0 + 1, "fp", IN_PROGRESS),
    (record(), T0 + 29.9, "fp", IN_PROGRESS),
    (record(), T0 + 30, "fp", "claim"),
    (record(), T0 + 30, "other", errors.IdempotencyMismatch),
    (record(), T0 + 1, "other", errors.IdempotencyMismatch),
    (record(response=DONE), T0 + 1, "fp", DONE),
    (record(response=DONE), T0 + 3600, "fp", DONE),
    (record(response=DONE), T0 + 1, "other", errors.IdempotencyMismatch),
    (record(response=DONE), T0 + 86399, "fp", DONE),
    (record(response=DONE), T0 + 86400, "other", "claim"),
    (record(), T0 + 86400, "other", "claim"),
], ids=["free", "in-flight", "lease-nearly-over", "lease-over", "lease-over-other-request",
        "other-request", "answered", "answered-an-hour-ago", "answered-other-request",
        "answered-nearly-a-day-ago", "expired", "expired-in-flight"])


def check_claim(take: Callable[[IdempotencyClaim], Optional[StoredResponse]],
                attempt: IdempotencyClaim, expected: Any) -> None:
    """That taking `attempt` claims (None), replays or refuses as `expected` says."""
    if expected == "claim":
        assert take(attempt) is None
    elif expected == IN_PROGRESS:
        with pytest.raises(errors.RequestInProgress, match="still in progress"):
            take(attempt)
    elif isinstance(expected, StoredResponse):
        assert take(attempt) == expected
    else:
        with pytest.raises(expected):
            take(attempt)


@HELD_KEY_CASES
def test_what_a_held_key_means_for_a_new_request(held: Optional[IdempotencyRecord], now: float,
                                                  fingerprint: str, expected: Any) -> None:
    attempt = IdempotencyClaim("k", fingerprint, "second", now, now + 30, int(now) + 86400)

    def take(attempt: IdempotencyClaim) -> Optional[StoredResponse]:
        if idempotency.may_claim(held, attempt):
            return None
        assert held is not None
        return idempotency.replay(held, attempt)

    check_claim(take, attempt, expected)


def test_a_claim_may_take_the_key_it_already_holds() -> None:
    # A put retried by botocore after its answer was lost finds its own claim.
    attempt = IdempotencyClaim("k", "fp", "first", T0 + 1, T0 + 31, int(T0) + 86401)
    assert idempotency.may_claim(record(), attempt)


@pytest.mark.parametrize("status, kept", [(200, True), (201, True), (400, True), (404, True),
                                          (409, True), (422, True), (500, False),
                                          (503, False)])
def test_2xx_and_4xx_are_kept_5xx_are_not(status: int, kept: bool) -> None:
    assert idempotency.is_final(status) is kept


# -- the storage contract, every backend ---------------------------------------------

@HELD_KEY_CASES
def test_storage_decides_as_the_rules_do(storage: Storage, held: Optional[IdempotencyRecord],
                                         now: float, fingerprint: str, expected: Any) -> None:
    if held is not None:
        first = IdempotencyClaim("k", held.fingerprint, held.token, T0, held.lease_until,
                                 held.expires_at)
        assert storage.claim_idempotency_key(first) is None
        if held.response is not None:
            storage.save_idempotent_response(first, held.response)
    attempt = IdempotencyClaim("k", fingerprint, "second", now, now + 30, int(now) + 86400)

    check_claim(storage.claim_idempotency_key, attempt, expected)


def test_storage_lets_a_claim_repeat_itself(storage: Storage) -> None:
    # botocore retries a put whose answer was lost: it must find its own claim.
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    assert storage.claim_idempotency_key(first._replace(now=T0 + 1)) is None
    with pytest.raises(errors.RequestInProgress):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 2))


def test_storage_claims_a_free_key_once(storage: Storage) -> None:
    assert storage.claim_idempotency_key(claim("k", "/runs", {"a": 1})) is None
    with pytest.raises(errors.RequestInProgress):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 29))
    with pytest.raises(errors.IdempotencyMismatch):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 2}, T0 + 29))
    assert storage.claim_idempotency_key(claim("other", "/runs", {"a": 1})) is None


@pytest.mark.parametrize("response", [DONE, StoredResponse(409, '{"error":"x"}')],
                         ids=["with-location", "without-location"])
def test_storage_replays_the_saved_response(storage: Storage, response: StoredResponse) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    storage.save_idempotent_response(first, response)

    assert storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 3600)) == response
    with pytest.raises(errors.IdempotencyMismatch):
        storage.claim_idempotency_key(claim("k", "/runs/1", {"a": 1}, T0 + 3600))


def test_storage_keeps_a_response_larger_than_a_dynamodb_item(storage: Storage) -> None:
    # A run's answer holds its whole history: 200 decisions with 5,000-character
    # comments make a megabyte, over DynamoDB's 400 KB per item.
    actions = [{"id": n, "actor": f"approver {n}", "comment": f"{n} " + "looks fine " * 455}
               for n in range(200)]
    response = StoredResponse(200, json.dumps({"id": 1, "actions": actions}))
    assert len(response.body) > 1_000_000
    first = claim("k", "/runs/1/approve", {"actor": "a"})
    assert storage.claim_idempotency_key(first) is None
    storage.save_idempotent_response(first, response)

    assert storage.claim_idempotency_key(claim("k", "/runs/1/approve", {"actor": "a"},
                                               T0 + 1)) == response


def test_storage_lets_a_retry_take_over_after_the_lease(storage: Storage) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    retry = claim("k", "/runs", {"a": 1}, T0 + idempotency.LEASE_SECONDS)
    assert storage.claim_idempotency_key(retry) is None

    # The first request, presumed dead, can no longer save or release the key.
    storage.save_idempotent_response(first, StoredResponse(200, '{"late":true}'))
    storage.release_idempotency_key(first)
    with pytest.raises(errors.RequestInProgress):
        storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 31))
    storage.save_idempotent_response(retry, DONE)
    assert storage.claim_idempotency_key(claim("k", "/runs", {"a": 1}, T0 + 32)) == DONE


def test_storage_forgets_a_released_key(storage: Storage) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    storage.release_idempotency_key(first)
    assert storage.claim_idempotency_key(claim("k", "/runs", {"b": 2}, T0 + 1)) is None


def test_storage_forgets_a_key_after_24_hours(storage: Storage) -> None:
    first = claim("k", "/runs", {"a": 1})
    assert storage.claim_idempotency_key(first) is None
    storage.save_idempotent_response(first, DONE)
    day_later = T0 + 1 + idempotency.TTL_SECONDS
    assert storage.claim_idempotency_key(claim("k", "/runs", {"b": 2}, day_later)) is None


def test_sqlite_deletes_expired_keys_a_few_per_claim(tmp_path: Any) -> None:
    path = str(tmp_path / "keys.sqlite3")
    storage = SQLiteStorage(path)
    for n in range(3 * EXPIRED_KEYS_PER_CLAIM):
        storage.claim_idempotency_key(claim(f"old-{n}", "/runs", {}, T0 + n))
    day_later = T0 + 1 + idempotency.TTL_SECONDS + 3 * EXPIRED_KEYS_PER_CLAIM

    storage.claim_idempotency_key(claim("new", "/runs", {}, day_later))

    with sqlite3.connect(path) as conn:
        keys = [key for (key,) in conn.execute("SELECT key FROM idempotency_keys ORDER BY key")]
        plan = " ".join(row[3] for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT key FROM idempotency_keys WHERE expires_at <= ? "
            "ORDER BY expires_at LIMIT 10", (day_later,)))
    assert len(keys) == 2 * EXPIRED_KEYS_PER_CLAIM + 1
    assert f"old-{EXPIRED_KEYS_PER_CLAIM - 1}" not in keys and "old-0" not in keys
    assert "idempotency_keys_expiry" in plan
    storage.close()


# -- the API, every backend -------------------------------------------------------------

def test_a_retried_create_answers_the_first_201_and_creates_nothing(api: Api,
                                                                     clock: FakeClock) -> None:
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
    assert [step["name"] for step in api.get_workflow(workflow["id"])["steps"]] == \
        ["Manager", "Finance"]


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


def test_the_same_json_in_another_spelling_is_the_same_request(api: Api,
                                                               clock: FakeClock) -> None:
    _, run = api.started_run()
    path = f"/runs/{run['id']}/approve"
    first = api.post(path, raw=b'{"actor": "alice", "comment": "ok"}', headers=keyed("k"))
    again = api.post(path, raw=b'{"comment":"ok",\n  "actor":"alice"}', headers=keyed("k"))

    assert_replay_of(first, again)
    assert len(api.get_run(run["id"])["actions"]) == 1


def test_a_stored_4xx_is_replayed_even_once_the_request_would_succeed(
        api: Api, clock: FakeClock) -> None:
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
        api: Api, clock: FakeClock) -> None:
    _, run = api.started_run()
    path = f"/runs/{run['id']}/approve"
    send(api, path, {"actor": "alice"}, "k")

    response = send(api, path, {"actor": "mallory"}, "k")

    assert response.status_code == 422
    assert set(response.json_body) == {"error"}
    assert [a["actor"] for a in api.get_run(run["id"])["actions"]] == ["alice"]


def test_the_key_on_another_path_answers_422_and_changes_nothing(api: Api,
                                                                 clock: FakeClock) -> None:
    _, first_run = api.started_run()
    _, second_run = api.started_run()
    send(api, f"/runs/{first_run['id']}/approve", {"actor": "alice"}, "k")

    other_run = send(api, f"/runs/{second_run['id']}/approve", {"actor": "alice"}, "k")
    other_decision = send(api, f"/runs/{first_run['id']}/reject", {"actor": "alice"}, "k")

    assert (other_run.status_code, other_decision.status_code) == (422, 422)
    assert api.get_run(second_run["id"]) == second_run
    assert api.get_run(first_run["id"])["status"] == "in_progress"


def test_a_503_releases_the_key_so_a_retry_runs_again(
        api: Api, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_an_unexpected_error_releases_the_key(api: Api, clock: FakeClock,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _, run = api.started_run()

    def broken(*args: Any, **kwargs: Any) -> Run:
        raise RuntimeError("a bug")

    with monkeypatch.context() as patched:
        patched.setattr(engine, "approve", broken)
        # Past the Api helper: a 500 is what this test provokes, not a contract break.
        failed = api.client.http.post(f"/runs/{run['id']}/approve", headers=keyed("k"),
                                      body=json.dumps({"actor": "a"}))
        assert failed.status_code == 500
    assert send(api, f"/runs/{run['id']}/approve", {"actor": "a"}, "k").status_code == 200


BAD_KEYS = ["", " ", "two words", "x" * 256, "clé", "tab\there"]
POST_ROUTES = sorted(path for path, methods in app_module.app.routes.items() if "POST" in methods)


@pytest.mark.parametrize("route", POST_ROUTES)
@pytest.mark.parametrize("key", BAD_KEYS, ids=["empty", "space", "inner-space", "256-chars",
                                              "non-ascii", "tab"])
def test_every_post_route_refuses_a_bad_key_with_400(api: Api, route: str, key: str) -> None:
    path = route.replace("{workflow_id}", "1").replace("{run_id}", "1")
    response = api.post(path, {"name": "x"}, headers=keyed(key))
    assert response.status_code == 400
    assert set(response.json_body) == {"error"}
    assert "Idempotency-Key" in response.json_body["error"]


def test_a_request_while_the_first_is_in_flight_answers_409_and_does_nothing(
        api: Api, storage: Storage, clock: FakeClock) -> None:
    body = {"name": "In flight"}
    storage.claim_idempotency_key(claim("busy", "/workflows", body, clock.now))
    clock.now += idempotency.LEASE_SECONDS - 1

    response = send(api, "/workflows", body, "busy")

    assert response.status_code == 409
    assert response.json_body == {"error": IN_PROGRESS}
    assert api.post("/workflows", body).status_code == 201  # the name was still free


def test_a_retry_takes_over_a_claim_whose_lease_ran_out(api: Api, storage: Storage,
                                                        clock: FakeClock) -> None:
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


# -- races ------------------------------------------------------------------------------

def approve_as_the_app_does(storage: Storage, run_id: int) -> StoredResponse:
    # A slow clock widens the window in which the others find the key in flight.
    def slow_clock() -> str:
        time.sleep(0.05)
        return engine.utc_now()

    run = engine.approve(storage, str(run_id), {"actor": "alice"}, clock=slow_clock)
    return StoredResponse(200, json.dumps(run.to_dict(), separators=(",", ":")))


def retry_until_answered(storage: Storage, run_id: int) -> list[Any]:
    """A client that retries while the key is in flight: each attempt's outcome."""
    path = f"/runs/{run_id}/approve"
    attempts: list[Any] = []
    for _ in range(200):
        try:
            attempts.append(idempotency.respond_once(
                storage, claim("same", path, {"actor": "alice"}, time.time()),
                partial(approve_as_the_app_does, storage, run_id)))
            return attempts
        except errors.RequestInProgress as exc:
            attempts.append(exc)
            time.sleep(0.01)
    return attempts


@pytest.mark.parametrize("per_thread", [False, True],
                         ids=["one-shared-storage", "storage-per-thread"])
def test_concurrent_retries_with_one_key_run_the_request_once(
        race_storage_factory: Callable[[], Storage], per_thread: bool) -> None:
    storage = race_storage_factory()
    _, run = _new_run(storage)
    storages = [race_storage_factory() if per_thread else storage for _ in range(THREADS)]

    outcomes = run_together([partial(retry_until_answered, each, run.id) for each in storages],
                            warm_up=[partial(each.get_run, run.id) for each in storages])

    assert all(isinstance(attempts, list) for attempts in outcomes), outcomes
    attempts = [attempt for racer in outcomes for attempt in racer]
    answered = [attempt for attempt in attempts if isinstance(attempt, tuple)]
    in_flight = [attempt for attempt in attempts if isinstance(attempt, errors.RequestInProgress)]
    assert len(answered) == THREADS and len(answered) + len(in_flight) == len(attempts)
    assert in_flight, "no racer found the key in flight: the race did not happen"
    firsts = [response for response, replayed in answered if not replayed]
    assert len(firsts) == 1, answered
    assert all(response == firsts[0] for response, _ in answered)
    final = storage.get_run(run.id)
    assert [action.actor for action in final.actions] == ["alice"]
    assert json.loads(firsts[0].body) == final.to_dict()


def _new_run(storage: Storage) -> tuple[Any, Run]:
    workflow = engine.create_workflow(storage, {"name": "Retried", "steps": ["A", "B"]})
    return workflow, engine.start_run(storage, {"workflow_id": workflow.id, "title": "t"})
