"""POST /workflows, GET /workflows/{id}, POST /workflows/{id}/steps through chalice.test.Client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.support.shapes import (
    BAD_PATH_IDS,
    MISSING_ID,
    NOT_JSON_BODIES,
    NOT_OBJECT_BODIES,
    assert_error,
    assert_step,
    assert_workflow,
)

if TYPE_CHECKING:
    from tests.support.api import Api


def assert_name_is_free(api: Api, name: str) -> None:
    """A rejected create stored nothing: the name can still be taken, with no steps."""
    workflow = api.create_workflow(name)
    assert workflow["name"] == name and workflow["steps"] == []


# -- POST /workflows: success ------------------------------------------------


def test_create_workflow_answers_201_with_the_workflow_and_its_steps_in_order(api: Api) -> None:
    response = api.post(
        "/workflows",
        {
            "name": "Expense claim",
            "description": "Claims over 100 EUR",
            "steps": ["Manager", "Finance", "Legal"],
        },
    )

    assert response.status_code == 201
    assert response.headers["Content-Type"] == "application/json"
    workflow = response.json_body
    assert_workflow(workflow)
    assert workflow["name"] == "Expense claim"
    assert workflow["description"] == "Claims over 100 EUR"
    assert [step["name"] for step in workflow["steps"]] == ["Manager", "Finance", "Legal"]
    assert [step["step_order"] for step in workflow["steps"]] == [1, 2, 3]
    assert all(step["workflow_id"] == workflow["id"] for step in workflow["steps"])
    assert len({step["id"] for step in workflow["steps"]}) == 3


def test_create_workflow_with_only_a_name_has_empty_description_and_no_steps(api: Api) -> None:
    workflow = api.create_workflow("Bare")

    assert_workflow(workflow)
    assert workflow["description"] == ""
    assert workflow["steps"] == []


def test_create_workflow_treats_null_optional_fields_as_absent(api: Api) -> None:
    response = api.post("/workflows", {"name": "Nulls", "description": None, "steps": None})

    assert response.status_code == 201
    assert response.json_body["description"] == ""
    assert response.json_body["steps"] == []


def test_created_workflow_reads_back_identically(api: Api) -> None:
    created = api.create_workflow("Purchase", steps=["Manager", "Finance"], description="Hardware")

    assert api.get_workflow(created["id"]) == created


def test_each_created_workflow_gets_its_own_id(api: Api) -> None:
    first = api.create_workflow("First")
    second = api.create_workflow("Second")

    assert first["id"] != second["id"]
    assert api.get_workflow(first["id"])["name"] == "First"
    assert api.get_workflow(second["id"])["name"] == "Second"


@pytest.mark.parametrize(
    "field, value",
    [
        pytest.param("name", "n" * 200, id="name-200-chars"),
        pytest.param("description", "d" * 5000, id="description-5000-chars"),
        pytest.param("steps", ["s" * 200], id="step-200-chars"),
    ],
)
def test_create_workflow_accepts_text_of_exactly_the_maximum_length(
    api: Api, field: str, value: Any
) -> None:
    body = {"name": "At the limit", field: value}

    response = api.post("/workflows", body)

    assert response.status_code == 201, response.body
    created = response.json_body
    assert_workflow(created)
    if field == "steps":
        assert created["steps"][0]["name"] == value[0]
    else:
        assert created[field] == value
    assert api.get_workflow(created["id"]) == created


# -- POST /workflows: failures -----------------------------------------------


def test_create_workflow_with_taken_name_answers_409_and_keeps_the_original(api: Api) -> None:
    original = api.create_workflow("Expense claim", steps=["Manager"], description="v1")

    response = api.post(
        "/workflows", {"name": "Expense claim", "description": "v2", "steps": ["Other", "Steps"]}
    )

    assert_error(response, 409)
    assert api.get_workflow(original["id"]) == original


@pytest.mark.parametrize("raw", NOT_JSON_BODIES + NOT_OBJECT_BODIES)
def test_create_workflow_with_body_that_is_not_a_json_object_answers_400(
    api: Api, raw: bytes
) -> None:
    assert_error(api.post("/workflows", raw=raw), 400)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="name-missing"),
        pytest.param({"name": None}, id="name-null"),
        pytest.param({"name": ""}, id="name-empty"),
        pytest.param({"name": "   "}, id="name-spaces"),
        pytest.param({"name": "\t\n "}, id="name-whitespace"),
        pytest.param({"name": 3}, id="name-number"),
        pytest.param({"name": True}, id="name-bool"),
        pytest.param({"name": ["Expense"]}, id="name-list"),
        pytest.param({"name": {"value": "Expense"}}, id="name-object"),
        pytest.param({"name": "n" * 201}, id="name-201-chars"),
        pytest.param({"name": "Expense", "description": 5}, id="description-number"),
        pytest.param({"name": "Expense", "description": False}, id="description-bool"),
        pytest.param({"name": "Expense", "description": "d" * 5001}, id="description-5001-chars"),
        pytest.param({"name": "Expense", "steps": "Manager"}, id="steps-string"),
        pytest.param({"name": "Expense", "steps": {"name": "Manager"}}, id="steps-object"),
        pytest.param({"name": "Expense", "steps": [1]}, id="step-number"),
        pytest.param({"name": "Expense", "steps": [None]}, id="step-null"),
        pytest.param({"name": "Expense", "steps": ["Manager", ""]}, id="step-empty"),
        pytest.param({"name": "Expense", "steps": ["Manager", "  "]}, id="step-blank"),
        pytest.param({"name": "Expense", "steps": ["Manager", "s" * 201]}, id="step-201-chars"),
        pytest.param({"name": "Expense", "owner": "me"}, id="unknown-field"),
    ],
)
def test_create_workflow_with_invalid_fields_answers_400_and_stores_nothing(
    api: Api, body: dict[str, Any]
) -> None:
    assert_error(api.post("/workflows", body), 400)

    assert_name_is_free(api, "Expense")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"name": "\\ud800"}', id="name"),
        pytest.param(b'{"name": "Expense", "description": "a\\udc00b"}', id="description"),
        pytest.param(b'{"name": "Expense", "steps": ["\\udfff"]}', id="step"),
    ],
)
def test_create_workflow_with_lone_surrogate_answers_400_and_stores_nothing(
    api: Api, raw: bytes
) -> None:
    assert_error(api.post("/workflows", raw=raw), 400)

    assert_name_is_free(api, "Expense")


def test_create_workflow_with_text_plain_content_type_answers_415_and_stores_nothing(
    api: Api,
) -> None:
    response = api.post("/workflows", {"name": "Expense"}, headers={"Content-Type": "text/plain"})

    assert_error(response, 415)
    assert_name_is_free(api, "Expense")


@pytest.mark.parametrize("path", ["/workflows", "/runs"])
def test_deeply_nested_json_body_answers_400_not_500(api: Api, path: str) -> None:
    assert_error(api.post(path, raw=b"[" * 100_000), 400)


# -- GET /workflows/{id} -----------------------------------------------------


def test_get_workflow_answers_200_with_steps_in_step_order(api: Api) -> None:
    created = api.create_workflow("Hiring", steps=["Recruiter", "Manager"])
    api.append_step(created["id"], "Director")

    response = api.get(f"/workflows/{created['id']}")

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    workflow = response.json_body
    assert_workflow(workflow)
    assert {k: workflow[k] for k in ("id", "name", "description", "created_at")} == {
        k: created[k] for k in ("id", "name", "description", "created_at")
    }
    assert [(s["step_order"], s["name"]) for s in workflow["steps"]] == [
        (1, "Recruiter"),
        (2, "Manager"),
        (3, "Director"),
    ]


def test_get_missing_workflow_answers_404(api: Api) -> None:
    api.create_workflow("Exists")

    assert_error(api.get(f"/workflows/{MISSING_ID}"), 404)


@pytest.mark.parametrize("raw_id", BAD_PATH_IDS)
def test_get_workflow_with_malformed_id_answers_404(api: Api, raw_id: str) -> None:
    assert_error(api.get(f"/workflows/{raw_id}"), 404)


# -- POST /workflows/{id}/steps ----------------------------------------------


def test_append_step_to_workflow_without_steps_gets_step_order_1(api: Api) -> None:
    workflow = api.create_workflow("Empty")

    response = api.post(f"/workflows/{workflow['id']}/steps", {"name": "Manager"})

    assert response.status_code == 201
    assert response.headers["Content-Type"] == "application/json"
    step = response.json_body
    assert_step(step, workflow["id"])
    assert step["name"] == "Manager"
    assert step["step_order"] == 1
    assert api.get_workflow(workflow["id"])["steps"] == [step]


def test_append_step_gets_max_step_order_plus_one_and_comes_last(api: Api) -> None:
    workflow = api.create_workflow("Purchase", steps=["Manager", "Finance"])

    step = api.append_step(workflow["id"], "Legal")

    assert step["step_order"] == 3
    assert step["id"] not in {s["id"] for s in workflow["steps"]}
    assert api.get_workflow(workflow["id"])["steps"] == workflow["steps"] + [step]


def test_appended_steps_are_numbered_consecutively(api: Api) -> None:
    workflow = api.create_workflow("Long")

    steps = [api.append_step(workflow["id"], f"Step {n}") for n in range(1, 6)]

    assert [s["step_order"] for s in steps] == [1, 2, 3, 4, 5]
    assert api.get_workflow(workflow["id"])["steps"] == steps


def test_append_step_orders_are_per_workflow(api: Api) -> None:
    first = api.create_workflow("First", steps=["A", "B", "C"])
    second = api.create_workflow("Second")

    assert api.append_step(second["id"], "X")["step_order"] == 1
    assert api.append_step(first["id"], "D")["step_order"] == 4


def test_append_step_accepts_name_of_exactly_200_characters(api: Api) -> None:
    workflow = api.create_workflow("Limits")

    assert api.append_step(workflow["id"], "s" * 200)["name"] == "s" * 200


def test_append_step_to_missing_workflow_answers_404(api: Api) -> None:
    assert_error(api.post(f"/workflows/{MISSING_ID}/steps", {"name": "Manager"}), 404)


@pytest.mark.parametrize("raw_id", BAD_PATH_IDS)
def test_append_step_with_malformed_workflow_id_answers_404(api: Api, raw_id: str) -> None:
    assert_error(api.post(f"/workflows/{raw_id}/steps", {"name": "Manager"}), 404)


@pytest.mark.parametrize(
    "raw",
    NOT_JSON_BODIES
    + NOT_OBJECT_BODIES
    + [
        pytest.param(b"{}", id="name-missing"),
        pytest.param(b'{"name": null}', id="name-null"),
        pytest.param(b'{"name": ""}', id="name-empty"),
        pytest.param(b'{"name": " \\t "}', id="name-whitespace"),
        pytest.param(b'{"name": 7}', id="name-number"),
        pytest.param(b'{"name": false}', id="name-bool"),
        pytest.param(b'{"name": "' + b"s" * 201 + b'"}', id="name-201-chars"),
        pytest.param(b'{"name": "\\ud800"}', id="name-lone-surrogate"),
        pytest.param(b'{"name": "Legal", "step_order": 1}', id="unknown-field"),
    ],
)
def test_append_invalid_step_answers_400_and_leaves_the_steps_unchanged(
    api: Api, raw: bytes
) -> None:
    workflow = api.create_workflow("Purchase", steps=["Manager"])

    assert_error(api.post(f"/workflows/{workflow['id']}/steps", raw=raw), 400)

    assert api.get_workflow(workflow["id"]) == workflow


def test_append_step_with_text_plain_content_type_answers_415_and_changes_nothing(api: Api) -> None:
    workflow = api.create_workflow("Purchase", steps=["Manager"])

    response = api.post(
        f"/workflows/{workflow['id']}/steps",
        {"name": "Legal"},
        headers={"Content-Type": "text/plain"},
    )

    assert_error(response, 415)
    assert api.get_workflow(workflow["id"]) == workflow


# -- methods that no route answers -------------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [
        ("PUT", "/workflows"),
        ("DELETE", "/workflows"),
        ("DELETE", "/workflows/{id}"),
        ("PUT", "/workflows/{id}"),
        ("PATCH", "/workflows/{id}"),
        ("GET", "/workflows/{id}/steps"),
        ("DELETE", "/workflows/{id}/steps"),
    ],
)
def test_workflow_routes_answer_405_to_other_methods(api: Api, method: str, path: str) -> None:
    workflow = api.create_workflow("Stays", steps=["Manager"])

    assert_error(api.request(method, path.format(id=workflow["id"]), {"name": "x"}), 405)

    assert api.get_workflow(workflow["id"]) == workflow
