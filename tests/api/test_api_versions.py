"""A workflow's versions and retirement through chalice.test.Client, on every
backend: POST/GET /workflows/{id}/versions, GET .../versions/{n}, POST
.../retire and .../reinstate, and runs that keep the version they started on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.support.shapes import assert_error, assert_workflow

if TYPE_CHECKING:
    from tests.support.api import Api


def step(name: str, *approvers: str, **rules: Any) -> dict[str, Any]:
    return {"name": name, "approvers": [f"user:{who}" for who in approvers], **rules}


def publish(api: Api, workflow_id: int, steps: list[Any], **fields: Any) -> dict[str, Any]:
    response = api.post(f"/workflows/{workflow_id}/versions", {"steps": steps, **fields})
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def start(api: Api, workflow_id: int, requested_by: str = "rita") -> dict[str, Any]:
    response = api.post(
        "/runs", {"workflow_id": workflow_id, "title": "Laptop", "requested_by": requested_by}
    )
    assert response.status_code == 201, response.body
    return dict(response.json_body)


def names(workflow: dict[str, Any]) -> list[str]:
    return [step["name"] for step in workflow["steps"]]


def test_publishing_answers_201_with_the_workflow_at_its_next_version(api: Api) -> None:
    created = api.create_workflow("Purchase", steps=["Manager"])
    assert (created["version"], created["retired"]) == (1, False)

    response = api.post(
        f"/workflows/{created['id']}/versions",
        {"description": "Two steps now", "steps": ["Manager", "Finance"]},
    )

    assert response.status_code == 201
    published = response.json_body
    assert_workflow(published)
    assert response.headers["Location"] == f"/workflows/{created['id']}/versions/2"
    assert (published["version"], published["name"]) == (2, "Purchase")
    assert published["description"] == "Two steps now"
    assert names(published) == ["Manager", "Finance"]
    assert [s["step_order"] for s in published["steps"]] == [1, 2]
    assert api.get_workflow(created["id"]) == published
    assert api.get(f"/workflows/{created['id']}/versions/2").json_body == published
    first = api.get(f"/workflows/{created['id']}/versions/1").json_body
    assert (first["version"], names(first), first["description"]) == (1, ["Manager"], "")


def test_versions_list_oldest_first_page_by_page(api: Api) -> None:
    workflow = api.create_workflow(steps=["A"])
    for steps in (["B"], ["C"], ["D"]):
        publish(api, workflow["id"], steps)

    first = api.get(f"/workflows/{workflow['id']}/versions?limit=3").json_body
    rest = api.get(
        f"/workflows/{workflow['id']}/versions?limit=3&cursor={first['next_cursor']}"
    ).json_body

    assert [v["version"] for v in first["items"]] == [1, 2, 3]
    assert [names(v) for v in first["items"]] == [["A"], ["B"], ["C"]]
    assert ([v["version"] for v in rest["items"]], rest["next_cursor"]) == ([4], None)


def test_an_unknown_version_or_workflow_is_404(api: Api) -> None:
    workflow = api.create_workflow(steps=["A"])

    for path in (
        f"/workflows/{workflow['id']}/versions/2",
        f"/workflows/{workflow['id']}/versions/0",
        "/workflows/999999/versions/1",
        "/workflows/999999/versions",
    ):
        assert_error(api.get(path), 404)
    assert_error(api.post("/workflows/999999/versions", {"steps": ["A"]}), 404)


def test_a_stale_editor_is_refused_409_and_nothing_is_published(api: Api) -> None:
    workflow = api.create_workflow(steps=["A"])
    publish(api, workflow["id"], ["B"], expected_version=1)

    stale = api.post(
        f"/workflows/{workflow['id']}/versions", {"steps": ["C"], "expected_version": 1}
    )

    assert stale.status_code == 409
    assert "version 2" in stale.json_body["error"]
    assert api.get_workflow(workflow["id"])["version"] == 2
    assert publish(api, workflow["id"], ["C"], expected_version=2)["version"] == 3


def test_a_version_takes_no_name_and_its_steps_are_checked_as_a_workflow_s(api: Api) -> None:
    workflow = api.create_workflow(steps=["A"])

    named = api.post(f"/workflows/{workflow['id']}/versions", {"name": "Other", "steps": []})
    unmeetable = api.post(
        f"/workflows/{workflow['id']}/versions",
        {"steps": [step("A", "ann", required_approvals=2)]},
    )

    assert named.status_code == 400
    assert unmeetable.status_code == 422
    assert api.get_workflow(workflow["id"])["version"] == 1


def test_a_version_naming_two_steps_alike_is_refused_422(api: Api) -> None:
    workflow = api.create_workflow(steps=["A"])

    twice = api.post(f"/workflows/{workflow['id']}/versions", {"steps": ["A", "B", "A"]})

    assert_error(twice, 422)
    assert "'A' appears twice" in twice.json_body["error"]
    assert api.get_workflow(workflow["id"])["version"] == 1


def test_runs_before_and_after_a_publish_follow_their_own_versions_to_the_end(api: Api) -> None:
    workflow = api.create_workflow(
        steps=[step("Manager", "ann"), step("Finance", "bob"), step("CFO", "cfo")]
    )
    wid = workflow["id"]
    before = start(api, wid)
    # Version 2: Legal before Finance, another Finance approver, the CFO only
    # above 25,000 (version 1 asks the CFO for every run).
    publish(
        api,
        wid,
        [
            step("Legal", "lee"),
            step("Finance", "fay"),
            step("CFO", "cfo", when={">": [{"var": "amount"}, 25000]}),
        ],
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}},
    )
    after = start(api, wid)
    assert (before["workflow_version"], after["workflow_version"]) == (1, 2)
    assert (before["current_step"]["name"], after["current_step"]["name"]) == ("Manager", "Legal")

    # The run of version 1 awaits its own approvers: fay may not decide it.
    api.approve(before["id"], "ann")
    assert api.post(f"/runs/{before['id']}/approve", {"actor": "fay"}).status_code == 403
    api.approve(before["id"], "bob")
    assert api.get_run(before["id"])["current_step"]["name"] == "CFO"
    done_before = api.approve(before["id"], "cfo")

    api.approve(after["id"], "lee")
    assert api.post(f"/runs/{after['id']}/approve", {"actor": "bob"}).status_code == 403
    done_after = api.approve(after["id"], "fay")  # no amount: the CFO step is skipped

    assert done_before["status"] == done_after["status"] == "completed"
    assert [a["step_name"] for a in done_before["actions"]] == ["Manager", "Finance", "CFO"]
    assert [(a["step_name"], a["action"]) for a in done_after["actions"]] == [
        ("Legal", "approve"),
        ("Finance", "approve"),
        ("CFO", "skip"),
    ]
    assert done_before["workflow_version"] == 1 and done_after["workflow_version"] == 2
    for run in (done_before, done_after):
        assert api.get(f"/runs/{run['id']}/audit").json_body["valid"] is True


def test_the_seed_s_append_extends_the_newest_version_only(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    wid = workflow["id"]
    old = start(api, wid)
    publish(api, wid, ["Manager"])
    new = start(api, wid)

    appended = api.append_step(wid, "Finance")

    assert appended["step_order"] == 2
    assert names(api.get_workflow(wid)) == ["Manager", "Finance"]
    assert names(api.get(f"/workflows/{wid}/versions/1").json_body) == ["Manager"]
    assert api.approve(old["id"])["status"] == "completed"
    moved_on = api.approve(new["id"])
    assert (moved_on["status"], moved_on["current_step"]["name"]) == ("in_progress", "Finance")


def test_a_resubmitted_run_starts_its_next_round_on_its_own_version(api: Api) -> None:
    workflow = api.create_workflow(steps=[step("Manager", "ann")])
    run = start(api, workflow["id"])
    api.post(f"/runs/{run['id']}/return", {"actor": "ann", "comment": "Add a quote"})
    publish(api, workflow["id"], [step("Director", "dora")])

    again = api.post(f"/runs/{run['id']}/resubmit", {"actor": "rita"})

    assert again.status_code == 200, again.body
    assert again.json_body["current_step"]["name"] == "Manager"
    assert again.json_body["workflow_version"] == 1
    assert api.approve(run["id"], "ann")["status"] == "completed"


def test_retiring_refuses_new_runs_and_lets_running_ones_finish(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])
    wid = workflow["id"]
    running = start(api, wid)

    retired = api.post(f"/workflows/{wid}/retire")
    refused = api.post("/runs", {"workflow_id": wid, "title": "Too late"})
    again = api.post(f"/workflows/{wid}/retire")

    assert retired.status_code == 200
    assert retired.json_body["retired"] is True
    assert api.get_workflow(wid)["retired"] is True
    assert refused.status_code == 409
    assert "retired" in refused.json_body["error"]
    assert again.status_code == 409
    assert api.approve(running["id"])["status"] == "completed"

    reinstated = api.post(f"/workflows/{wid}/reinstate")
    assert (reinstated.status_code, reinstated.json_body["retired"]) == (200, False)
    assert api.post(f"/workflows/{wid}/reinstate").status_code == 409
    assert start(api, wid)["status"] == "in_progress"


def test_the_workflow_list_filters_by_retirement_page_by_page(api: Api) -> None:
    made = [api.create_workflow(steps=["A"])["id"] for _ in range(5)]
    for wid in made[1::2]:
        api.post(f"/workflows/{wid}/retire")

    active = api.get("/workflows?retired=false&limit=2").json_body
    rest = api.get(f"/workflows?retired=false&limit=2&cursor={active['next_cursor']}").json_body
    retired = api.get("/workflows?retired=true").json_body

    assert [w["id"] for w in active["items"]] == [made[0], made[2]]
    assert ([w["id"] for w in rest["items"]], rest["next_cursor"]) == ([made[4]], None)
    assert [w["id"] for w in retired["items"]] == [made[1], made[3]]
    assert all(w["retired"] for w in retired["items"])
    assert_error(api.get("/workflows?retired=yes"), 400)
    mixed = api.get(f"/workflows?retired=true&cursor={active['next_cursor']}")
    assert_error(mixed, 400)  # a cursor is bound to its filter
