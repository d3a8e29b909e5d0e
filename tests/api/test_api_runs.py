"""POST /runs, GET /runs/{id}, POST /runs/{id}/approve|reject through chalice.test.Client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.support.shapes import (
    BAD_PATH_IDS,
    MISSING_ID,
    NOT_JSON_BODIES,
    NOT_OBJECT_BODIES,
    assert_action,
    assert_error,
    assert_run,
)

if TYPE_CHECKING:
    from tests.support.api import Api

NOT_IN_PROGRESS = "Run is not in progress"
DECISIONS = ["approve", "reject"]
# Placeholders in parametrized bodies for the id of the workflow the test creates.
WID = "<workflow id>"
WID_AS_STRING = "<workflow id as a string>"


def history(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The run's actions as (action, step_name, actor), in the order the API lists them."""
    return [(a["action"], a["step_name"], a["actor"]) for a in run["actions"]]


# -- POST /runs ----------------------------------------------------------------


def test_start_run_answers_201_in_progress_at_the_first_step(api: Api) -> None:
    workflow = api.create_workflow("Purchase", steps=["Manager", "Finance"])

    response = api.post("/runs", {"workflow_id": workflow["id"], "title": "New laptop"})

    assert response.status_code == 201
    assert response.headers["Content-Type"] == "application/json"
    run = response.json_body
    assert_run(run)
    assert run["workflow_id"] == workflow["id"]
    assert run["title"] == "New laptop"
    assert run["status"] == "in_progress"
    assert run["current_step"] == workflow["steps"][0]
    assert run["current_step_id"] == workflow["steps"][0]["id"]
    assert run["actions"] == []


def test_started_run_reads_back_identically(api: Api) -> None:
    _, run = api.started_run()

    response = api.get(f"/runs/{run['id']}")

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json_body == run


def test_start_run_begins_at_step_order_1_when_steps_were_appended(api: Api) -> None:
    workflow = api.create_workflow("Appended")
    first = api.append_step(workflow["id"], "Manager")
    api.append_step(workflow["id"], "Finance")

    run = api.start_run(workflow["id"])

    assert run["current_step"] == first


def test_runs_of_one_workflow_get_distinct_ids_and_progress_independently(api: Api) -> None:
    workflow = api.create_workflow("Shared", steps=["Manager", "Finance"])
    first = api.start_run(workflow["id"], "First")
    second = api.start_run(workflow["id"], "Second")

    api.approve(first["id"])

    assert first["id"] != second["id"]
    assert api.get_run(first["id"])["current_step"]["name"] == "Finance"
    assert api.get_run(second["id"]) == second


def test_start_run_accepts_title_of_exactly_500_characters(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    assert api.start_run(workflow["id"], "t" * 500)["title"] == "t" * 500


def test_start_run_of_workflow_without_steps_answers_409(api: Api) -> None:
    workflow = api.create_workflow("No steps yet")

    assert_error(api.post("/runs", {"workflow_id": workflow["id"], "title": "Too early"}), 409)

    assert api.get_workflow(workflow["id"]) == workflow


def test_start_run_succeeds_once_the_workflow_has_a_step(api: Api) -> None:
    workflow = api.create_workflow("No steps yet")
    api.post("/runs", {"workflow_id": workflow["id"], "title": "Too early"})
    step = api.append_step(workflow["id"], "Manager")

    assert api.start_run(workflow["id"])["current_step"] == step


@pytest.mark.parametrize("workflow_id", [MISSING_ID, 99999999999999999999999])
def test_start_run_of_missing_workflow_answers_404(api: Api, workflow_id: int) -> None:
    api.create_workflow(steps=["Manager"])

    assert_error(api.post("/runs", {"workflow_id": workflow_id, "title": "Orphan"}), 404)


@pytest.mark.parametrize("raw", NOT_JSON_BODIES + NOT_OBJECT_BODIES)
def test_start_run_with_body_that_is_not_a_json_object_answers_400(api: Api, raw: bytes) -> None:
    assert_error(api.post("/runs", raw=raw), 400)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"title": "x"}, id="workflow_id-missing"),
        pytest.param({"workflow_id": None, "title": "x"}, id="workflow_id-null"),
        pytest.param({"workflow_id": WID_AS_STRING, "title": "x"}, id="workflow_id-string"),
        pytest.param({"workflow_id": True, "title": "x"}, id="workflow_id-true"),
        pytest.param({"workflow_id": False, "title": "x"}, id="workflow_id-false"),
        pytest.param({"workflow_id": 1.5, "title": "x"}, id="workflow_id-fraction"),
        pytest.param({"workflow_id": 0, "title": "x"}, id="workflow_id-zero"),
        pytest.param({"workflow_id": -1, "title": "x"}, id="workflow_id-negative"),
        pytest.param({"workflow_id": [1], "title": "x"}, id="workflow_id-list"),
        pytest.param({"workflow_id": WID}, id="title-missing"),
        pytest.param({"workflow_id": WID, "title": None}, id="title-null"),
        pytest.param({"workflow_id": WID, "title": ""}, id="title-empty"),
        pytest.param({"workflow_id": WID, "title": "  \t"}, id="title-whitespace"),
        pytest.param({"workflow_id": WID, "title": 42}, id="title-number"),
        pytest.param({"workflow_id": WID, "title": True}, id="title-bool"),
        pytest.param({"workflow_id": WID, "title": "t" * 501}, id="title-501-chars"),
        pytest.param({"workflow_id": WID, "title": "x", "status": "completed"}, id="unknown-field"),
    ],
)
def test_start_run_with_invalid_fields_answers_400(api: Api, body: dict[str, Any]) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    real = {WID: workflow["id"], WID_AS_STRING: str(workflow["id"])}
    body = {
        key: real.get(value, value) if isinstance(value, str) else value
        for key, value in body.items()
    }

    assert_error(api.post("/runs", body), 400)

    assert api.get_workflow(workflow["id"]) == workflow


def test_start_run_with_lone_surrogate_in_title_answers_400(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    raw = b'{"workflow_id": %d, "title": "\\ud800"}' % workflow["id"]

    assert_error(api.post("/runs", raw=raw), 400)


def test_start_run_with_text_plain_content_type_answers_415(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    response = api.post(
        "/runs",
        {"workflow_id": workflow["id"], "title": "x"},
        headers={"Content-Type": "text/plain"},
    )

    assert_error(response, 415)


# -- GET /runs/{id} ------------------------------------------------------------


def test_get_missing_run_answers_404(api: Api) -> None:
    api.started_run()

    assert_error(api.get(f"/runs/{MISSING_ID}"), 404)


@pytest.mark.parametrize("raw_id", BAD_PATH_IDS)
def test_get_run_with_malformed_id_answers_404(api: Api, raw_id: str) -> None:
    assert_error(api.get(f"/runs/{raw_id}"), 404)


def test_get_run_lists_full_history_oldest_first_with_step_names(api: Api) -> None:
    _, run = api.started_run(steps=["Manager", "Finance", "Legal"])
    api.approve(run["id"], "alice", "fine by me")
    api.approve(run["id"], "carol")
    api.reject(run["id"], "dave", "over budget")

    fetched = api.get_run(run["id"])

    assert_run(fetched)
    assert history(fetched) == [
        ("approve", "Manager", "alice"),
        ("approve", "Finance", "carol"),
        ("reject", "Legal", "dave"),
    ]
    assert [a["comment"] for a in fetched["actions"]] == ["fine by me", "", "over budget"]


# -- approve -------------------------------------------------------------------


def test_approve_on_first_step_advances_to_the_next_step(api: Api) -> None:
    workflow, run = api.started_run(steps=["Manager", "Finance", "Legal"])

    response = api.post(f"/runs/{run['id']}/approve", {"actor": "alice", "comment": "ok"})

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    moved = response.json_body
    assert_run(moved)
    assert moved["status"] == "in_progress"
    assert moved["current_step"] == workflow["steps"][1]
    assert moved["current_step_id"] == workflow["steps"][1]["id"]
    assert {k: moved[k] for k in ("id", "workflow_id", "title", "created_at")} == {
        k: run[k] for k in ("id", "workflow_id", "title", "created_at")
    }
    [action] = moved["actions"]
    assert_action(action, run["id"])
    assert {
        k: action[k] for k in ("run_id", "step_id", "step_name", "action", "actor", "comment")
    } == {
        "run_id": run["id"],
        "step_id": workflow["steps"][0]["id"],
        "step_name": "Manager",
        "action": "approve",
        "actor": "alice",
        "comment": "ok",
    }
    assert api.get_run(run["id"]) == moved


def test_approve_without_comment_records_an_empty_comment(api: Api) -> None:
    _, run = api.started_run()

    moved = api.approve(run["id"], "alice")

    assert moved["actions"][0]["comment"] == ""


def test_approve_on_middle_step_advances_to_the_last_step(api: Api) -> None:
    workflow, run = api.started_run(steps=["Manager", "Finance", "Legal"])
    api.approve(run["id"])

    moved = api.approve(run["id"], "carol")

    assert moved["status"] == "in_progress"
    assert moved["current_step"] == workflow["steps"][2]
    assert history(moved) == [("approve", "Manager", "alice"), ("approve", "Finance", "carol")]


def test_approve_on_last_step_completes_run(api: Api) -> None:
    _, run = api.started_run(steps=["Manager", "Finance"])
    api.approve(run["id"], "alice")

    done = api.approve(run["id"], "carol")

    assert_run(done)
    assert done["status"] == "completed"
    assert done["current_step_id"] is None
    assert done["current_step"] is None
    assert history(done) == [("approve", "Manager", "alice"), ("approve", "Finance", "carol")]
    assert api.get_run(run["id"]) == done


def test_approve_on_single_step_workflow_completes_run(api: Api) -> None:
    _, run = api.started_run(steps=["Only"])

    done = api.approve(run["id"])

    assert done["status"] == "completed" and done["current_step"] is None
    assert history(done) == [("approve", "Only", "alice")]


def test_approve_moves_by_step_order_through_every_step(api: Api) -> None:
    workflow, run = api.started_run(steps=[f"Step {n}" for n in range(1, 6)])

    seen = []
    for _ in workflow["steps"]:
        seen.append(api.get_run(run["id"])["current_step"])
        api.approve(run["id"])

    assert seen == workflow["steps"]
    assert api.get_run(run["id"])["status"] == "completed"


def test_step_appended_mid_run_is_part_of_the_remaining_path(api: Api) -> None:
    workflow, run = api.started_run(steps=["Manager", "Finance"])
    api.approve(run["id"], "alice")
    legal = api.append_step(workflow["id"], "Legal")

    at_legal = api.approve(run["id"], "carol")
    done = api.approve(run["id"], "dave")

    assert at_legal["status"] == "in_progress"
    assert at_legal["current_step"] == legal
    assert done["status"] == "completed"
    assert history(done) == [
        ("approve", "Manager", "alice"),
        ("approve", "Finance", "carol"),
        ("approve", "Legal", "dave"),
    ]


def test_step_appended_after_completion_does_not_reopen_the_run(api: Api) -> None:
    workflow, run = api.started_run(steps=["Manager"])
    done = api.approve(run["id"])

    api.append_step(workflow["id"], "Late")

    assert api.get_run(run["id"]) == done
    assert_error(api.post(f"/runs/{run['id']}/approve", {"actor": "x"}), 409, NOT_IN_PROGRESS)


# -- reject --------------------------------------------------------------------


@pytest.mark.parametrize(
    "approvals, step_name",
    [
        pytest.param(0, "Manager", id="first-step"),
        pytest.param(1, "Finance", id="middle-step"),
        pytest.param(2, "Legal", id="last-step"),
    ],
)
def test_reject_at_any_step_ends_the_run_as_rejected(
    api: Api, approvals: int, step_name: str
) -> None:
    workflow, run = api.started_run(steps=["Manager", "Finance", "Legal"])
    for _ in range(approvals):
        api.approve(run["id"], "alice")

    response = api.post(f"/runs/{run['id']}/reject", {"actor": "bob", "comment": "no"})

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    rejected = response.json_body
    assert_run(rejected)
    assert rejected["status"] == "rejected"
    assert rejected["current_step_id"] is None
    assert rejected["current_step"] is None
    assert history(rejected) == [
        ("approve", s, "alice") for s in ("Manager", "Finance")[:approvals]
    ] + [("reject", step_name, "bob")]
    last = rejected["actions"][-1]
    assert last["step_id"] == workflow["steps"][approvals]["id"]
    assert last["comment"] == "no"
    assert api.get_run(run["id"]) == rejected


# -- decisions on finished runs ------------------------------------------------


@pytest.fixture(params=["completed", "rejected"])
def finished_run(request: pytest.FixtureRequest, api: Api) -> dict[str, Any]:
    _, run = api.started_run(steps=["Manager", "Finance"])
    api.approve(run["id"])
    if request.param == "completed":
        return api.approve(run["id"])
    return api.reject(run["id"])


@pytest.mark.parametrize("decision", DECISIONS)
def test_decision_on_finished_run_answers_409_not_in_progress_and_changes_nothing(
    api: Api, finished_run: dict[str, Any], decision: str
) -> None:
    response = api.post(f"/runs/{finished_run['id']}/{decision}", {"actor": "mallory"})

    assert_error(response, 409, NOT_IN_PROGRESS)
    assert response.json_body == {"error": NOT_IN_PROGRESS}
    assert api.get_run(finished_run["id"]) == finished_run


# -- decision failures ---------------------------------------------------------


@pytest.mark.parametrize("decision", DECISIONS)
def test_decision_on_missing_run_answers_404(api: Api, decision: str) -> None:
    api.started_run()

    assert_error(api.post(f"/runs/{MISSING_ID}/{decision}", {"actor": "alice"}), 404)


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("raw_id", BAD_PATH_IDS)
def test_decision_with_malformed_run_id_answers_404(api: Api, raw_id: str, decision: str) -> None:
    assert_error(api.post(f"/runs/{raw_id}/{decision}", {"actor": "alice"}), 404)


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize(
    "raw",
    NOT_JSON_BODIES
    + NOT_OBJECT_BODIES
    + [
        pytest.param(b"{}", id="actor-missing"),
        pytest.param(b'{"comment": "ok"}', id="actor-missing-with-comment"),
        pytest.param(b'{"actor": null}', id="actor-null"),
        pytest.param(b'{"actor": ""}', id="actor-empty"),
        pytest.param(b'{"actor": "   "}', id="actor-spaces"),
        pytest.param(b'{"actor": "\\n\\t"}', id="actor-whitespace"),
        pytest.param(b'{"actor": 12}', id="actor-number"),
        pytest.param(b'{"actor": true}', id="actor-bool"),
        pytest.param(b'{"actor": ["alice"]}', id="actor-list"),
        pytest.param(b'{"actor": "' + b"a" * 201 + b'"}', id="actor-201-chars"),
        pytest.param(b'{"actor": "alice", "comment": 3}', id="comment-number"),
        pytest.param(b'{"actor": "alice", "comment": false}', id="comment-bool"),
        pytest.param(
            b'{"actor": "alice", "comment": "' + b"c" * 5001 + b'"}', id="comment-5001-chars"
        ),
        pytest.param(b'{"actor": "\\ud800"}', id="actor-lone-surrogate"),
        pytest.param(b'{"actor": "alice", "comment": "\\udbff"}', id="comment-lone-surrogate"),
        pytest.param(b'{"actor": "alice", "step_id": 2}', id="unknown-field"),
    ],
)
def test_invalid_decision_answers_400_and_leaves_the_run_unchanged(
    api: Api, raw: bytes, decision: str
) -> None:
    _, run = api.started_run()

    assert_error(api.post(f"/runs/{run['id']}/{decision}", raw=raw), 400)

    assert api.get_run(run["id"]) == run


@pytest.mark.parametrize("decision", DECISIONS)
def test_decision_with_text_plain_content_type_answers_415_and_changes_nothing(
    api: Api, decision: str
) -> None:
    _, run = api.started_run()

    response = api.post(
        f"/runs/{run['id']}/{decision}", {"actor": "alice"}, headers={"Content-Type": "text/plain"}
    )

    assert_error(response, 415)
    assert api.get_run(run["id"]) == run


@pytest.mark.parametrize("decision", DECISIONS)
def test_decision_accepts_actor_of_200_and_comment_of_5000_characters(
    api: Api, decision: str
) -> None:
    _, run = api.started_run()

    response = api.post(
        f"/runs/{run['id']}/{decision}", {"actor": "a" * 200, "comment": "c" * 5000}
    )

    assert response.status_code == 200, response.body
    [action] = response.json_body["actions"]
    assert (action["action"], action["actor"], action["comment"]) == (
        decision,
        "a" * 200,
        "c" * 5000,
    )


# -- methods that no route answers ---------------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [
        ("PUT", "/runs"),
        ("DELETE", "/runs"),
        ("DELETE", "/runs/{id}"),
        ("PUT", "/runs/{id}"),
        ("POST", "/runs/{id}"),
        ("GET", "/runs/{id}/approve"),
        ("PUT", "/runs/{id}/approve"),
        ("GET", "/runs/{id}/reject"),
        ("DELETE", "/runs/{id}/reject"),
    ],
)
def test_run_routes_answer_405_to_other_methods_and_change_nothing(
    api: Api, method: str, path: str
) -> None:
    _, run = api.started_run()

    assert_error(api.request(method, path.format(id=run["id"]), {"actor": "x"}), 405)

    assert api.get_run(run["id"]) == run
