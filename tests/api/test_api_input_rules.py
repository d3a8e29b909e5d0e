"""Bad input, as a careless client or an attacker sends it, over every route:
a clear 4xx `{"error"}`, nothing written, and a log line that names only what
the route accepted."""

from __future__ import annotations

import pytest

from tests.support.access import access_lines
from tests.support.api import JSON_HEADERS, Api
from tests.support.shapes import assert_error

LONG_ID = "9" * 4301  # past what Python's int() converts from a string
ROUTES_WITH_IDS = [
    ("GET", "/workflows/{id}"),
    ("POST", "/workflows/{id}/steps"),
    ("GET", "/runs/{id}"),
    ("POST", "/runs/{id}/approve"),
    ("POST", "/runs/{id}/reject"),
]


@pytest.mark.parametrize("method, route", ROUTES_WITH_IDS)
@pytest.mark.parametrize(
    "raw_id",
    [LONG_ID, "²", "١", "１"],
    ids=["4301-digits", "superscript-two", "arabic-one", "fullwidth-one"],
)
def test_a_path_id_that_is_no_id_answers_404_and_is_not_logged_as_one(
    api: Api, capsys: pytest.CaptureFixture[str], method: str, route: str, raw_id: str
) -> None:
    api.started_run()  # workflow 1 and run 1 exist
    capsys.readouterr()

    response = api.request(method, route.format(id=raw_id), {"name": "x", "actor": "a"})

    assert_error(response, 404)
    assert response.headers["X-Request-Id"]
    assert len(response.json_body["error"]) < 200, "the id is echoed back in full"
    [line] = access_lines(capsys.readouterr().out)
    assert line["status"] == 404
    assert "run_id" not in line and "workflow_id" not in line, line


@pytest.mark.parametrize(
    "path, raw",
    [
        ("/runs", b'{"workflow_id": 999, "workflow_id": 1, "title": "t"}'),
        ("/workflows", b'{"name": "a", "name": "b"}'),
        ("/runs/1/approve", b'{"actor": "a", "comment": "x", "comment": "y"}'),
    ],
)
def test_a_duplicated_key_answers_400_and_writes_nothing(api: Api, path: str, raw: bytes) -> None:
    _, run = api.started_run()

    response = api.post(path, raw=raw)

    assert_error(response, 400)
    assert "twice" in response.json_body["error"]
    assert api.get_run(run["id"]) == run
    assert [w["name"] for w in api.get("/workflows").json_body["items"]] == ["Workflow 1"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_answer_400(api: Api, constant: str) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    raw = f'{{"workflow_id": {workflow["id"]}, "title": "t", "x": {constant}}}'.encode()

    assert_error(api.post("/runs", raw=raw), 400)


@pytest.mark.parametrize("keyed", [False, True], ids=["plain", "with-idempotency-key"])
def test_a_body_over_one_megabyte_answers_413_before_it_is_read(api: Api, keyed: bool) -> None:
    many_keys = "{" + ",".join(f'"k{n}":0' for n in range(500_000)) + "}"
    headers = {**JSON_HEADERS, "Idempotency-Key": "k-413"} if keyed else JSON_HEADERS

    response = api.post("/workflows", raw=many_keys.encode(), headers=headers)

    assert_error(response, 413)
    assert api.get("/workflows").json_body["items"] == []


def test_a_name_typed_two_ways_is_one_workflow(api: Api) -> None:
    first = api.create_workflow("Caf\u00e9")

    again = api.post("/workflows", {"name": "Cafe\u0301"})

    assert first["name"] == "Caf\u00e9"
    assert_error(again, 409)


@pytest.mark.parametrize("blank", ["\u200b", "\ufeff\u200d", " \u2060 "], ids=repr)
def test_a_name_of_invisible_characters_answers_400(api: Api, blank: str) -> None:
    assert_error(api.post("/workflows", {"name": blank}), 400)
    _, run = api.started_run()
    assert_error(api.post(f"/runs/{run['id']}/approve", {"actor": blank}), 400)
    assert api.get_run(run["id"])["actions"] == []


def test_control_characters_answer_400_in_titles(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    response = api.post("/runs", {"workflow_id": workflow["id"], "title": "PO \x1b[31m42"})

    assert_error(response, 400)


def test_an_integral_number_is_accepted_as_the_id_it_is(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    response = api.post(
        "/runs", raw=f'{{"workflow_id": {workflow["id"]}.0, "title": "t"}}'.encode()
    )

    assert response.status_code == 201
    assert response.json_body["workflow_id"] == workflow["id"]


@pytest.mark.parametrize("path", ["/workflows?cursor=", "/runs?cursor="])
def test_an_empty_cursor_answers_400(api: Api, path: str) -> None:
    assert_error(api.get(path), 400)
