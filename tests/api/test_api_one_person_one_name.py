"""One person, one name, over HTTP on every backend and in both auth modes: a
name spelt in another case or width is the same person to every rule, and
names are kept and shown as they were given."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Api
from tests.support.shapes import assert_error
from tests.support.tokens import admin_token, as_, claims, hs256

# How the same person's name can come back: case, width, both.
SPELLINGS = ["rita", "RITA", "Ｒｉｔａ", "rIｔa"]


def workflow(api: Api, *steps: Any, **flags: Any) -> int:
    body = {"name": f"W{len(api.get('/workflows').json_body['items'])}", "steps": list(steps)}
    return int(api._expect(201, api.post("/workflows", {**body, **flags}))["id"])


def started(api: Api, flow: int, requested_by: str = "Rita") -> int:
    body = {"workflow_id": flow, "title": "Laptops", "requested_by": requested_by}
    return int(api._expect(201, api.post("/runs", body))["id"])


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_requester_is_the_requester_however_her_name_is_spelt(api: Api, spelling: str) -> None:
    run = started(api, workflow(api, "Manager"))
    refused = api.post(f"/runs/{run}/approve", {"actor": spelling})
    assert_error(refused, 403)
    assert "requested this run" in refused.json_body["error"]
    permissions = api.get(f"/runs/{run}/permissions?actor={spelling}").json_body
    assert permissions["approve"]["reason"] == "requester_may_not_decide"
    assert permissions["cancel"]["allowed"] is True
    assert api._expect(200, api.post(f"/runs/{run}/cancel", {"actor": spelling}))["status"] == (
        "cancelled"
    )


@pytest.mark.parametrize("second", ["Fay", "ｆａｙ", "FAY"])
def test_one_person_fills_one_seat_of_a_quorum(api: Api, second: str) -> None:
    board = {"name": "Board", "approvers": ["group:board"], "required_approvals": 2}
    run = started(api, workflow(api, board))
    api._expect(200, api.post(f"/runs/{run}/approve", {"actor": "fay", "groups": ["board"]}))
    again = api.post(f"/runs/{run}/approve", {"actor": second, "groups": ["Board"]})
    assert_error(again, 409)
    assert "already approved" in again.json_body["error"]
    assert api.get(f"/runs/{run}").json_body["current_step_approved_by"] == ["fay"]


def test_distinct_approvers_are_distinct_people(api: Api) -> None:
    run = started(api, workflow(api, "Manager", "Finance", distinct_approvers=True))
    api._expect(200, api.post(f"/runs/{run}/approve", {"actor": "lee"}))
    assert_error(api.post(f"/runs/{run}/approve", {"actor": "Lee"}), 403)
    assert_error(api.post(f"/runs/{run}/approve", {"actor": "ＬＥＥ"}), 403)


def test_a_step_names_its_approvers_as_given_and_admits_them_however_spelt(api: Api) -> None:
    steps = [{"name": "CFO", "approvers": ["user:Ｃfo", "group:Finance"]}]
    flow = workflow(api, *steps)
    assert api.get(f"/workflows/{flow}").json_body["steps"][0]["approvers"] == [
        "user:Ｃfo",
        "group:Finance",
    ]
    first = started(api, flow)
    assert [run["id"] for run in api.get("/inbox?actor=CFO").json_body["items"]] == [first]
    assert [run["id"] for run in api.get("/inbox?actor=gus&group=FINANCE").json_body["items"]] == [
        first
    ]
    approved = api._expect(200, api.post(f"/runs/{first}/approve", {"actor": "cfo"}))
    assert approved["status"] == "completed"
    assert approved["actions"][0]["actor"] == "cfo"  # as given


def test_an_idempotency_key_is_one_person_s_however_their_name_is_spelt(
    api: Api, secret_mode: None
) -> None:
    admin = admin_token()
    flow = as_(api, admin, "POST", "/workflows", {"name": "Pay", "steps": ["Any"]}).json_body
    body = {"workflow_id": flow["id"], "title": "Laptops"}
    keyed = {"Content-Type": "application/json", "Idempotency-Key": "po-7"}

    def start(actor: str) -> Any:
        token = hs256(claims(actor))
        headers = {**keyed, "Authorization": f"Bearer {token}"}
        return api.request("POST", "/runs", body, headers=headers)

    first = start("Rita")
    again = start("rita")
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json_body == first.json_body
    assert start("ritb").json_body["id"] != first.json_body["id"]


def test_tokens_for_one_person_spelt_two_ways_fill_one_seat(api: Api, secret_mode: None) -> None:
    admin = admin_token()
    quorum = {"name": "Board", "required_approvals": 2}
    flow = as_(api, admin, "POST", "/workflows", {"name": "Pay", "steps": [quorum]}).json_body
    run = as_(
        api, hs256(claims("someone")), "POST", "/runs", {"workflow_id": flow["id"], "title": "t"}
    ).json_body
    path = f"/runs/{run['id']}/approve"
    assert as_(api, hs256(claims("Rita")), "POST", path, {}).status_code == 200
    assert_error(as_(api, hs256(claims("ritａ")), "POST", path, {}), 409)
    # And the requester's own tokens, however spelt, may not decide.
    requested = as_(
        api, hs256(claims("rita")), "POST", "/runs", {"workflow_id": flow["id"], "title": "t"}
    ).json_body
    refused = as_(api, hs256(claims("RITA")), "POST", f"/runs/{requested['id']}/approve", {})
    assert_error(refused, 403)
    # A body naming the caller in another spelling is the caller.
    body = {"actor": "Ｒita"}
    cancelled = as_(api, hs256(claims("rita")), "POST", f"/runs/{requested['id']}/cancel", body)
    assert cancelled.status_code == 200 and cancelled.json_body["status"] == "cancelled"


def test_the_admin_group_is_one_group_however_a_token_spells_it(
    api: Api, secret_mode: None
) -> None:
    token = hs256(claims("ada", groups=["Workflow-Admins"]))
    created = as_(api, token, "POST", "/workflows", {"name": "Pay", "steps": ["Any"]})
    assert created.status_code == 201


@pytest.mark.parametrize(
    ("actor", "reason"),
    [
        ("\u200b", "invisible"),
        ("ma\u0000ria", "control character"),
        ("m" * 300, "longer than 200"),
        ("system:deadline", "reserved"),
        ("System:Deadline", "reserved"),
        ("Ri\u202eta", "bidirectional"),
        ("\u2800", "renders blank"),
    ],
)
def test_a_token_whose_actor_no_body_could_name_is_401_and_writes_nothing(
    api: Api, secret_mode: None, actor: str, reason: str
) -> None:
    admin = admin_token()
    flow = as_(api, admin, "POST", "/workflows", {"name": "Pay", "steps": ["Any"]}).json_body
    run = as_(api, admin, "POST", "/runs", {"workflow_id": flow["id"], "title": "t"}).json_body
    refused = as_(api, hs256(claims(actor)), "POST", f"/runs/{run['id']}/approve", {})
    assert_error(refused, 401)
    assert reason in refused.json_body["error"]
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    assert as_(api, admin, "GET", f"/runs/{run['id']}").json_body["actions"] == []


@pytest.mark.parametrize("group", ["fin\u200bance", "\u202efinance", "fin\u0007ance"])
def test_a_token_whose_groups_no_body_could_name_is_401(
    api: Api, secret_mode: None, group: str
) -> None:
    refused = as_(api, hs256(claims("fay", groups=[group])), "GET", "/inbox")
    assert_error(refused, 401)
    assert "group" in refused.json_body["error"]


# Names that show as rita but are not the string rita: each would be another
# person to every rule while the page shows "Approved by rita".
RITA_LOOKALIKES = [
    "rita\ufff9",  # interlinear annotation anchor (format)
    "rita\ufffa",  # interlinear annotation separator (format)
    "rita\u0605",  # Arabic number mark above (format)
    "rita\u070f",  # Syriac abbreviation mark (format)
    "rita\U00013430",  # Egyptian hieroglyph vertical joiner (format)
    "rita\U00016fe4",  # Khitan small script filler (renders blank)
    "rita\ue000",  # private use
    "\U0001d42b\U0001d422\U0001d42d\U0001d41a",  # mathematical bold: a presentation form
]
# Names whose every character is allowed, but not together: 422.
MIXED_SCRIPTS = ["r\u0456ta", "\u0440ita", "rit\u0430"]  # Cyrillic і, р, а


@pytest.mark.parametrize("lookalike", RITA_LOOKALIKES, ids=ascii)
def test_a_name_that_passes_for_another_is_400_and_writes_nothing(api: Api, lookalike: str) -> None:
    run = started(api, workflow(api, "Manager"), requested_by="rita")

    refused = api.post(f"/runs/{run}/approve", {"actor": lookalike})
    not_started = api.post("/runs", {"workflow_id": 1, "title": "t", "requested_by": lookalike})

    assert_error(refused, 400)
    assert_error(not_started, 400)
    assert api.get(f"/runs/{run}").json_body["actions"] == []
    assert len(api.get("/runs").json_body["items"]) == 1


@pytest.mark.parametrize("mixed", MIXED_SCRIPTS, ids=ascii)
def test_a_name_that_mixes_scripts_is_422_and_writes_nothing(api: Api, mixed: str) -> None:
    board = {"name": "Board", "approvers": ["group:board"], "required_approvals": 2}
    run = started(api, workflow(api, board), requested_by="ann")
    api._expect(200, api.post(f"/runs/{run}/approve", {"actor": "rita", "groups": ["board"]}))

    refused = api.post(f"/runs/{run}/approve", {"actor": mixed, "groups": ["board"]})

    assert_error(refused, 422)
    assert "mixes scripts" in refused.json_body["error"]
    assert api.get(f"/runs/{run}").json_body["current_step_approved_by"] == ["rita"]
    assert_error(
        api.post(
            "/workflows", {"name": "X", "steps": [{"name": "S", "approvers": [f"user:{mixed}"]}]}
        ),
        422,
    )
    assert_error(api.get(f"/inbox?actor={mixed}"), 422)


@pytest.mark.parametrize("actor", [*RITA_LOOKALIKES, *MIXED_SCRIPTS], ids=ascii)
def test_a_token_for_a_name_that_passes_for_another_is_401(
    api: Api, secret_mode: None, actor: str
) -> None:
    refused = as_(api, hs256(claims(actor)), "GET", "/inbox")

    assert_error(refused, 401)
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]


def test_a_token_may_name_its_user_with_the_prefix(api: Api, secret_mode: None) -> None:
    admin = admin_token()
    flow = as_(api, admin, "POST", "/workflows", {"name": "Pay", "steps": ["Any"]}).json_body
    run = as_(
        api, hs256(claims("user:rita")), "POST", "/runs", {"workflow_id": flow["id"], "title": "t"}
    )

    assert run.json_body["requested_by"] == "rita"
    refused = as_(api, hs256(claims("rita")), "POST", f"/runs/{run.json_body['id']}/approve", {})
    assert_error(refused, 403)
