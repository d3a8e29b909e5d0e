"""GET /workflows and GET /runs: pages, filters and cursors, through chalice.test.Client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import pytest

from tests.support.shapes import RUN_FIELDS, assert_error, assert_run, assert_workflow

if TYPE_CHECKING:
    from tests.support.api import Api

EMPTY_PAGE: dict[str, Any] = {"items": [], "next_cursor": None}


def page(api: Api, path: str) -> dict[str, Any]:
    """The body of a 200 list response, checked for the page shape."""
    response = api.get(path)
    assert response.status_code == 200, (path, response.body)
    assert response.headers["Content-Type"] == "application/json"
    body = response.json_body
    assert set(body) == {"items", "next_cursor"}, body
    assert isinstance(body["items"], list)
    assert body["next_cursor"] is None or isinstance(body["next_cursor"], str)
    return body


def walk(api: Api, path: str, limits: Optional[list[int]] = None) -> list[list[dict[str, Any]]]:
    """The items of every page of a list, following next_cursor to the end
    (with the limit of each page from `limits`, if given)."""
    pages: list[list[dict[str, Any]]] = []
    cursor: Optional[str] = None
    while True:
        params = [f"limit={limits[len(pages)]}"] if limits else []
        if cursor:
            params.append(f"cursor={cursor}")
        separator = "&" if "?" in path else "?"
        body = page(api, path + (separator + "&".join(params) if params else ""))
        pages.append(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 1000, "the walk does not end"


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)] or [[]]


def listed_run(api: Api, run_id: int) -> dict[str, Any]:
    """A run as lists show it: as GET /runs/{id} shows it, without its actions."""
    run = api.get_run(run_id)
    del run["actions"]
    return run


def mixed_runs(api: Api) -> tuple[int, int, list[dict[str, Any]]]:
    """Two workflows, and runs of both that are in progress, completed or
    rejected, as lists show them."""
    first = api.create_workflow("First", steps=["Manager", "Finance"])["id"]
    second = api.create_workflow("Second", steps=["Manager"])["id"]
    run_ids = []
    for i in range(11):
        run = api.start_run((first, second)[i % 3 == 2], f"Run {i}")
        if i % 4 == 1:
            api.approve(run["id"])
        elif i % 4 == 2:
            api.reject(run["id"])
        elif i % 4 == 3:
            api.approve(run["id"])
            if run["workflow_id"] == first:
                api.approve(run["id"])
        run_ids.append(run["id"])
    return first, second, [listed_run(api, run_id) for run_id in run_ids]


# -- shapes and empty lists -----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/workflows",
        "/runs",
        "/runs?status=completed",
        "/runs?workflow_id=1",
        "/runs?workflow_id=1&status=rejected",
        "/workflows?limit=1",
        "/runs?limit=100",
    ],
)
def test_lists_of_an_empty_service_are_empty_with_no_cursor(api: Api, path: str) -> None:
    assert page(api, path) == EMPTY_PAGE


def test_workflow_list_items_are_workflows_as_get_workflow_shows_them(api: Api) -> None:
    ids = [
        api.create_workflow(f"W{i}", steps=["A", "B"][:i], description=f"d{i}")["id"]
        for i in range(3)
    ]
    api.append_step(ids[0], "Appended")

    body = page(api, "/workflows")

    for workflow in body["items"]:
        assert_workflow(workflow)
    assert body == {"items": [api.get_workflow(wid) for wid in sorted(ids)], "next_cursor": None}
    assert [step["name"] for step in body["items"][0]["steps"]] == ["Appended"]


def test_run_list_items_are_runs_as_get_run_shows_them_without_actions(api: Api) -> None:
    _, run = api.started_run(steps=["Manager", "Finance"])
    api.approve(run["id"], comment="fine")
    _, done = api.started_run(steps=["Manager"])
    api.reject(done["id"])

    body = page(api, "/runs")

    for item in body["items"]:
        assert set(item) == RUN_FIELDS - {"actions"}
        assert_run({**item, "actions": []})
    assert body == {
        "items": [listed_run(api, done["id"]), listed_run(api, run["id"])],
        "next_cursor": None,
    }
    assert body["items"][1]["current_step"]["name"] == "Finance"


# -- limit ------------------------------------------------------------------------


def test_workflow_pages_hold_50_by_default_and_up_to_100(api: Api) -> None:
    ids = sorted(api.create_workflow(f"W{i}")["id"] for i in range(101))

    assert [w["id"] for w in page(api, "/workflows")["items"]] == ids[:50]
    assert [[w["id"] for w in items] for items in walk(api, "/workflows", [100, 100])] == [
        ids[:100],
        ids[100:],
    ]


def test_run_pages_hold_50_by_default_and_up_to_100(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])["id"]
    ids = sorted((api.start_run(workflow)["id"] for _ in range(101)), reverse=True)

    assert [run["id"] for run in page(api, "/runs")["items"]] == ids[:50]
    assert [[run["id"] for run in items] for items in walk(api, "/runs", [100, 100])] == [
        ids[:100],
        ids[100:],
    ]


# -- walking every page -------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 5, 6, 7])
def test_walking_workflows_yields_each_once_by_id(api: Api, limit: int) -> None:
    created = [api.create_workflow(f"W{i}", steps=["A"] * (i % 3))["id"] for i in range(6)]
    expected = [api.get_workflow(wid) for wid in sorted(created)]

    # A full last page has no cursor: next_cursor is null exactly when nothing follows.
    assert walk(api, f"/workflows?limit={limit}") == chunks(expected, limit)


# Every filter: the runs are set up once per limit and walked under each of them.
RUN_FILTERS = [
    (None, None),
    ("first", None),
    ("second", None),
    (None, "in_progress"),
    (None, "completed"),
    (None, "rejected"),
    ("first", "in_progress"),
    ("first", "completed"),
    ("second", "rejected"),
]


@pytest.mark.parametrize("limit", [2, 3])
def test_walking_runs_yields_each_match_once_newest_first(api: Api, limit: int) -> None:
    first, second, runs = mixed_runs(api)
    for workflow, status in RUN_FILTERS:
        workflow_id = {"first": first, "second": second, None: None}[workflow]
        expected = [
            run
            for run in sorted(runs, key=lambda run: -run["id"])
            if workflow_id in (None, run["workflow_id"]) and status in (None, run["status"])
        ]
        filters = "&".join(
            f"{name}={value}"
            for name, value in (("workflow_id", workflow_id), ("status", status))
            if value is not None
        )

        pages = walk(api, f"/runs?limit={limit}" + (f"&{filters}" if filters else ""))

        assert pages == chunks(expected, limit), (workflow, status)


def test_a_cursor_stays_valid_when_the_limit_changes(api: Api) -> None:
    _, _, runs = mixed_runs(api)
    newest_first = sorted(runs, key=lambda run: -run["id"])

    pages = walk(api, "/runs", [1, 4, 2, 100])

    assert [len(items) for items in pages] == [1, 4, 2, len(runs) - 7]
    assert [run for items in pages for run in items] == newest_first


def test_workflows_created_during_a_walk_appear_at_its_end(api: Api) -> None:
    before = [api.create_workflow(f"Before {i}")["id"] for i in range(3)]
    first = page(api, "/workflows?limit=2")
    during = api.create_workflow("During")["id"]

    rest = walk(api, f"/workflows?limit=2&cursor={first['next_cursor']}")

    assert [w["id"] for w in first["items"] + [w for items in rest for w in items]] == [
        *sorted(before),
        during,
    ]


def test_runs_created_during_a_walk_do_not_appear_in_it(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])["id"]
    before = sorted((api.start_run(workflow)["id"] for _ in range(3)), reverse=True)
    first = page(api, "/runs?limit=2")
    api.start_run(workflow)

    rest = walk(api, f"/runs?limit=2&cursor={first['next_cursor']}")

    assert [r["id"] for r in first["items"] + [r for items in rest for r in items]] == before


# -- filters that match nothing -------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "workflow_id=999999",
        "workflow_id=9007199254740991",
        "workflow_id=9007199254740992",
        "workflow_id=" + "9" * 5000,
        "workflow_id=999999&status=completed",
    ],
)
def test_filters_that_match_nothing_give_an_empty_list(api: Api, query: str) -> None:
    api.started_run()

    assert page(api, f"/runs?{query}") == EMPTY_PAGE


# -- 400 ----------------------------------------------------------------------------

BAD_LIMITS = [
    "0",
    "101",
    "-1",
    "abc",
    "1.5",
    "",
    "+5",
    "%205",
    "1e3",
    "2.5",
    "%EF%BC%95",
    "99999999999999999999",
]


@pytest.mark.parametrize("path", ["/workflows", "/runs"])
def test_a_limit_outside_1_to_100_answers_400(api: Api, path: str) -> None:
    for limit in BAD_LIMITS:
        response = api.get(f"{path}?limit={limit}")
        assert_error(response, 400, "'limit' must be an integer from 1 to 100")


def test_an_unknown_status_answers_400_naming_the_statuses(api: Api) -> None:
    # pending is in the spec's schema, but no run is ever pending.
    for status in ["bogus", "IN_PROGRESS", "", "completed%20", "approved", "pending"]:
        response = api.get(f"/runs?status={status}")
        assert_error(response, 400)
        assert "in_progress, completed, rejected" in response.json_body["error"]


def test_a_workflow_id_that_is_not_a_positive_integer_answers_400(api: Api) -> None:
    for workflow_id in [
        "0",
        "000",
        "-1",
        "abc",
        "1.5",
        "",
        "0x1",
        "1%20",
        "%EF%BC%91",
        "0.0",
        "1e-3",
    ]:
        response = api.get(f"/runs?workflow_id={workflow_id}")
        assert_error(response, 400, "'workflow_id' must be a positive integer")


@pytest.mark.parametrize(
    "path, name",
    [
        ("/workflows?status=completed", "status"),
        ("/workflows?workflow_id=1", "workflow_id"),
        ("/workflows?page=2", "page"),
        ("/runs?Limit=5", "Limit"),
        ("/runs?offset=5", "offset"),
        ("/runs?limit=5&sort=asc", "sort"),
        ("/runs?cursor", "cursor"),
    ],
)
def test_an_unknown_or_valueless_query_parameter_answers_400(
    api: Api, path: str, name: str
) -> None:
    response = api.get(path)

    assert_error(response, 400)
    assert repr(name) in response.json_body["error"]


@pytest.mark.parametrize(
    "query", ["limit=1&limit=2", "status=completed&status=rejected", "workflow_id=1&workflow_id=1"]
)
def test_a_repeated_query_parameter_answers_400(api: Api, query: str) -> None:
    assert_error(api.get(f"/runs?{query}"), 400)


@pytest.mark.parametrize("path", ["/workflows", "/runs"])
def test_a_cursor_we_did_not_issue_answers_400(api: Api, path: str) -> None:
    for cursor in ["garbage", "a.b", "W10.AAAA", "x" * 2000]:
        response = api.get(f"{path}?cursor={cursor}")
        assert_error(response, 400)
        assert "omit cursor" in response.json_body["error"]


def test_a_tampered_cursor_answers_400(api: Api) -> None:
    for i in range(3):
        api.create_workflow(f"W{i}")
    cursor = page(api, "/workflows?limit=1")["next_cursor"]

    for index in (0, len(cursor) // 2, len(cursor) - 1):
        flipped = "A" if cursor[index] != "A" else "B"
        tampered = cursor[:index] + flipped + cursor[index + 1 :]
        assert_error(api.get(f"/workflows?limit=1&cursor={tampered}"), 400)
    assert page(api, f"/workflows?limit=1&cursor={cursor}")["items"]


@pytest.mark.parametrize(
    "issued_for, used_with",
    [
        ("", "status=in_progress"),
        ("status=in_progress", ""),
        ("status=in_progress", "status=completed"),
        ("workflow_id={wid}", "workflow_id={other}"),
        ("workflow_id={wid}", "workflow_id={wid}&status=in_progress"),
        ("workflow_id={wid}&status=in_progress", "status=in_progress"),
    ],
)
def test_a_cursor_reused_with_other_filters_answers_400(
    api: Api, issued_for: str, used_with: str
) -> None:
    workflow = api.create_workflow(steps=["Manager"])["id"]
    other = api.create_workflow(steps=["Manager"])["id"]
    for _ in range(3):
        api.start_run(workflow)
    ids = {"wid": workflow, "other": other}
    cursor = page(api, f"/runs?limit=1&{issued_for.format(**ids)}")["next_cursor"]
    assert cursor

    response = api.get(f"/runs?limit=1&{used_with.format(**ids)}&cursor={cursor}")

    assert_error(response, 400)
    assert "filters" in response.json_body["error"]


def test_a_cursor_of_one_list_answers_400_on_the_other(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])["id"]
    api.create_workflow("Second")
    api.start_run(workflow)
    api.start_run(workflow)
    workflows_cursor = page(api, "/workflows?limit=1")["next_cursor"]
    runs_cursor = page(api, "/runs?limit=1")["next_cursor"]

    assert_error(api.get(f"/runs?cursor={workflows_cursor}"), 400)
    assert_error(api.get(f"/workflows?cursor={runs_cursor}"), 400)


@pytest.mark.parametrize("spelling", ["2", "002", "2.0", "2e0", "0.2e1"])
def test_an_integral_number_in_a_query_is_the_integer_it_spells(api: Api, spelling: str) -> None:
    # As in bodies: JSON Schema's integer accepts 2.0, and so does the service.
    _, second, _ = mixed_runs(api)
    expected = page(api, f"/runs?workflow_id={second}&limit=2")

    assert page(api, f"/runs?workflow_id={second}&limit={spelling}") == expected
    assert page(api, f"/runs?workflow_id={second}.0&limit=2") == expected
