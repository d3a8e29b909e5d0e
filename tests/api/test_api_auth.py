"""Verified callers (WORKFLOW_AUTH=jwt): every way a token can fail is a 401 with
a Bearer challenge, the token decides who acts, and none mode is unchanged."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest
from chalice.test import HTTPResponse

from chalicelib.api import identity
from chalicelib.domain import errors
from tests.support.api import JSON_HEADERS, Api
from tests.support.shapes import assert_error
from tests.support.tokens import (
    ADMIN,
    AUDIENCE,
    ISSUER,
    SECRET,
    KeySet,
    admin_token,
    as_,
    bearer,
    claims,
    hs256,
)


@pytest.fixture
def key_set(monkeypatch: pytest.MonkeyPatch) -> Iterator[KeySet]:
    keys = KeySet()
    monkeypatch.setenv("WORKFLOW_AUTH", "jwt")
    monkeypatch.setenv("WORKFLOW_JWT_ISSUER", ISSUER)
    monkeypatch.setenv("WORKFLOW_JWT_AUDIENCE", AUDIENCE)
    monkeypatch.setenv("WORKFLOW_JWKS_URL", keys.url)
    yield keys
    keys.close()


def started(api: Api, steps: tuple[str, ...] = ("Manager", "Finance")) -> dict[str, Any]:
    """A run started by maria, of a workflow ada defined."""
    workflow = as_(api, admin_token(), "POST", "/workflows", {"name": "PO", "steps": list(steps)})
    assert workflow.status_code == 201, workflow.body
    run = as_(
        api,
        hs256(claims("maria")),
        "POST",
        "/runs",
        {"workflow_id": workflow.json_body["id"], "title": "Laptops"},
    )
    assert run.status_code == 201, run.body
    return dict(run.json_body)


def assert_401(response: HTTPResponse, reason: Optional[str], token_given: bool) -> None:
    assert_error(response, 401)
    if reason is not None:
        assert reason in response.json_body["error"], response.json_body
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert ('error="invalid_token"' in challenge) is token_given


def unsigned(payload: dict[str, Any], header: dict[str, Any], key: bytes = b"") -> str:
    """A token made by hand, as an attacker would: alg none, or HMAC with any key."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    signing_input = f"{part(header)}.{part(payload)}"
    if header["alg"] == "none":
        return signing_input + "."
    mac = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


# -- 401: every reason, on every route but the document ---------------------------------

ROUTES = [
    ("GET", "/workflows"),
    ("POST", "/workflows"),
    ("GET", "/workflows/1"),
    ("POST", "/workflows/1/steps"),
    ("GET", "/runs"),
    ("POST", "/runs"),
    ("GET", "/runs/1"),
    ("GET", "/runs/1/audit"),
    ("POST", "/runs/1/approve"),
    ("POST", "/runs/1/reject"),
]


@pytest.mark.parametrize("method, path", ROUTES)
def test_every_route_needs_a_token(api: Api, secret_mode: None, method: str, path: str) -> None:
    response = api.request(method, path, raw=b'{"name": "x"}')

    assert_401(response, "Bearer", token_given=False)


def test_the_openapi_document_needs_no_token(api: Api, secret_mode: None) -> None:
    assert api.get("/openapi.json").status_code == 200


@pytest.mark.parametrize("header", ["Basic bWFyaWE6c2VjcmV0", "Bearer", "Bearer   ", "token abc"])
def test_an_authorization_that_is_not_a_bearer_token_is_401(
    api: Api, secret_mode: None, header: str
) -> None:
    response = api.request("GET", "/runs", headers={**JSON_HEADERS, "Authorization": header})

    assert_error(response, 401)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


# Tokens are made when the test runs, not when it is collected: under `make
# test` the slow tiers run first, and a token that is "not valid yet" for two
# minutes from collection is valid (60 s of skew) by the time its test runs.
@pytest.mark.parametrize(
    "make_token, reason",
    [
        (lambda: "not-a-token", "malformed"),
        (lambda: hs256(claims(), secret="another secret, also at least 32 bytes"), "signature"),
        (lambda: hs256(claims(exp=int(time.time()) - 120)), "expired"),
        (lambda: hs256(claims(nbf=int(time.time()) + 120)), "not valid yet"),
        (lambda: hs256(claims(iss="https://elsewhere.example.test")), "another issuer"),
        (lambda: hs256({k: v for k, v in claims().items() if k != "exp"}), "'exp'"),
        (lambda: hs256({k: v for k, v in claims().items() if k != "sub"}), "no actor"),
        (lambda: hs256(claims(actor="   ")), "no actor"),
        (lambda: unsigned(claims(), {"alg": "none", "typ": "JWT"}), None),
    ],
    ids=[
        "malformed",
        "other-secret",
        "expired",
        "not-yet-valid",
        "other-issuer",
        "no-exp",
        "no-sub",
        "blank-sub",
        "alg-none",
    ],
)
def test_a_token_that_does_not_verify_is_401_and_writes_nothing(
    api: Api, secret_mode: None, make_token: Callable[[], str], reason: Optional[str]
) -> None:
    token = make_token()

    response = as_(api, token, "POST", "/workflows", {"name": "Forged"})

    assert_401(response, reason, token_given=True)
    assert token not in response.body.decode()
    listed = as_(api, admin_token(), "GET", "/workflows")
    assert listed.json_body["items"] == []


def test_clock_skew_within_60_seconds_is_tolerated(api: Api, secret_mode: None) -> None:
    now = int(time.time())
    skewed = hs256(claims(exp=now - 30, nbf=now + 30, groups=[ADMIN]))

    assert as_(api, skewed, "GET", "/runs").status_code == 200


# -- 401: the key set ----------------------------------------------------------------------


def test_a_token_signed_by_the_issuers_key_is_accepted(api: Api, key_set: KeySet) -> None:
    token = key_set.sign(claims("ada", groups=[ADMIN], aud=AUDIENCE))

    assert as_(api, token, "POST", "/workflows", {"name": "Signed"}).status_code == 201


@pytest.mark.parametrize(
    "forge, reason",
    [
        (lambda keys: keys.sign(claims(aud=AUDIENCE), key="unpublished"), "signature"),
        (lambda keys: keys.sign(claims(aud="someone-else")), "another audience"),
        (lambda keys: keys.sign(claims()), "'aud'"),
        (lambda keys: keys.sign(claims(aud=AUDIENCE), kid="unpublished"), "key"),
        # The classic key confusion: HMAC keyed with the issuer's public key.
        (
            lambda keys: unsigned(
                claims(aud=AUDIENCE), {"alg": "HS256", "kid": "key-1"}, keys.public_pem()
            ),
            "algorithm",
        ),
        (lambda keys: unsigned(claims(aud=AUDIENCE), {"alg": "none", "kid": "key-1"}), None),
    ],
    ids=["other-key", "other-audience", "no-audience", "unknown-kid", "key-confusion", "alg-none"],
)
def test_a_forged_token_is_refused_by_the_key_set(
    api: Api, key_set: KeySet, forge: Any, reason: Optional[str]
) -> None:
    response = as_(api, forge(key_set), "GET", "/runs")

    assert_401(response, reason, token_given=True)


def no_kid(payload: dict[str, Any], key: Any) -> str:
    """An RS256 token whose header names no key, as some providers sign ID tokens."""
    import jwt

    return jwt.encode(payload, key, algorithm="RS256")


def test_a_token_naming_no_key_is_taken_when_the_key_set_holds_just_one(
    api: Api, key_set: KeySet
) -> None:
    token = no_kid(claims("ada", aud=AUDIENCE), key_set.keys["key-1"])
    forged = no_kid(claims("ada", aud=AUDIENCE), key_set.keys["unpublished"])

    assert as_(api, token, "GET", "/runs").status_code == 200
    assert_401(as_(api, forged, "GET", "/runs"), "signature", token_given=True)


def test_a_token_naming_no_key_is_refused_when_the_key_set_holds_more(
    api: Api, key_set: KeySet
) -> None:
    key_set.published.append("key-2")

    response = as_(api, no_kid(claims("ada", aud=AUDIENCE), key_set.keys["key-1"]), "GET", "/runs")

    assert_401(response, "names no key", token_given=True)


def test_a_rotated_key_is_fetched_once_for_an_unknown_kid(
    api: Api, key_set: KeySet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(identity, "JWKS_REFETCH_SECONDS", 0.0)
    assert as_(api, key_set.sign(claims(aud=AUDIENCE)), "GET", "/runs").status_code == 200
    fetched = key_set.fetches
    key_set.published.append("key-2")

    rotated = key_set.sign(claims(aud=AUDIENCE), kid="key-2")

    assert as_(api, rotated, "GET", "/runs").status_code == 200
    assert key_set.fetches == fetched + 1
    assert as_(api, rotated, "GET", "/runs").status_code == 200
    assert key_set.fetches == fetched + 1


def test_unknown_kids_fetch_the_key_set_at_most_every_30_seconds(api: Api, key_set: KeySet) -> None:
    assert as_(api, key_set.sign(claims(aud=AUDIENCE)), "GET", "/runs").status_code == 200
    fetched = key_set.fetches

    for n in range(5):
        forged = key_set.sign(claims(aud=AUDIENCE), kid=f"made-up-{n}", key="unpublished")
        assert_401(as_(api, forged, "GET", "/runs"), "key", token_given=True)

    assert key_set.fetches == fetched


# -- who acts -----------------------------------------------------------------------------


def test_decisions_record_the_verified_actor(api: Api, secret_mode: None) -> None:
    run = started(api)

    approved = as_(api, hs256(claims("finn")), "POST", f"/runs/{run['id']}/approve", {})
    same = as_(
        api,
        hs256(claims("lena")),
        "POST",
        f"/runs/{run['id']}/reject",
        {"actor": "lena", "comment": "No"},
    )

    assert approved.status_code == 200 and same.status_code == 200
    assert [a["actor"] for a in same.json_body["actions"]] == ["finn", "lena"]


def test_any_verified_caller_may_audit_a_run_whose_chain_covers_the_verified_names(
    api: Api, secret_mode: None
) -> None:
    run = started(api)
    as_(api, hs256(claims("finn")), "POST", f"/runs/{run['id']}/approve", {})

    response = as_(api, hs256(claims("auditor")), "GET", f"/runs/{run['id']}/audit")

    assert response.status_code == 200, response.body
    answer = response.json_body
    assert answer["valid"] and answer["genesis"]["requested_by"] == "maria"
    assert [entry["actor"] for entry in answer["entries"]] == ["finn"]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_body_actor_other_than_the_caller_is_403_and_writes_nothing(
    api: Api, secret_mode: None, decision: str
) -> None:
    run = started(api)

    response = as_(
        api, hs256(claims("mallory")), "POST", f"/runs/{run['id']}/{decision}", {"actor": "cfo"}
    )

    assert_error(response, 403)
    reread = as_(api, admin_token(), "GET", f"/runs/{run['id']}")
    assert reread.json_body["actions"] == []


@pytest.mark.parametrize("path", ["/workflows", "/workflows/{id}/steps"])
def test_defining_workflows_needs_the_admin_group(api: Api, secret_mode: None, path: str) -> None:
    workflow = as_(api, admin_token(), "POST", "/workflows", {"name": "PO", "steps": ["A"]})
    target = path.format(id=workflow.json_body["id"])

    refused = as_(api, hs256(claims("maria", groups=["finance"])), "POST", target, {"name": "B"})

    assert_error(refused, 403)
    assert ADMIN in refused.json_body["error"]
    steps = as_(api, admin_token(), "GET", f"/workflows/{workflow.json_body['id']}")
    assert [s["name"] for s in steps.json_body["steps"]] == ["A"]


@pytest.mark.parametrize(
    "groups",
    [["finance", ADMIN], f"finance, {ADMIN}", f"finance {ADMIN}"],
    ids=["list", "commas", "spaces"],
)
def test_groups_come_as_a_list_or_a_separated_string(
    api: Api, secret_mode: None, groups: Any
) -> None:
    token = hs256({**claims("ada"), "groups": groups})

    assert as_(api, token, "POST", "/workflows", {"name": "Grouped"}).status_code == 201


@pytest.mark.parametrize(
    "groups",
    [[], "", None],
    ids=["empty-list", "empty-string", "null"],
)
def test_a_groups_claim_may_name_no_group(api: Api, secret_mode: None, groups: Any) -> None:
    token = hs256({**claims("ada"), "groups": groups})

    assert as_(api, token, "GET", "/inbox").status_code == 200


@pytest.mark.parametrize("groups", [[f"group:{ADMIN}"], f"finance group:{ADMIN}"], ids=repr)
def test_a_token_may_spell_a_group_with_its_prefix(
    api: Api, secret_mode: None, groups: Any
) -> None:
    token = hs256({**claims("ada"), "groups": groups})

    assert as_(api, token, "POST", "/workflows", {"name": "Prefixed"}).status_code == 201


def test_a_token_without_a_groups_claim_names_no_group(api: Api, secret_mode: None) -> None:
    token = hs256({k: v for k, v in claims("ada").items() if k != "groups"})

    assert as_(api, token, "GET", "/inbox").status_code == 200
    refused = as_(api, token, "POST", "/workflows", {"name": "Not an admin"})
    assert_error(refused, 403)


@pytest.mark.parametrize(
    "groups, reason",
    [
        ([""], "blank"),
        (["finance", "  "], "blank"),
        ([1, 2], "a list of group names"),
        ([["finance"]], "a list of group names"),
        ([None], "a list of group names"),
        ({"finance": True}, "a list of group names"),
        (True, "a list of group names"),
        (7, "a list of group names"),
        (["user:fay"], "names a user"),
    ],
    ids=repr,
)
def test_a_malformed_groups_claim_is_401_with_the_reason(
    api: Api, secret_mode: None, groups: Any, reason: str
) -> None:
    token = hs256({**claims("ada"), "groups": groups})

    refused = as_(api, token, "GET", "/inbox")

    assert_401(refused, reason, token_given=True)
    assert "'groups'" in refused.json_body["error"]


def test_the_actor_and_groups_claims_are_configurable(
    api: Api, secret_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a Cognito ID token carries them.
    monkeypatch.setenv("WORKFLOW_JWT_ACTOR_CLAIM", "cognito:username")
    monkeypatch.setenv("WORKFLOW_JWT_GROUPS_CLAIM", "cognito:groups")
    token = hs256({**claims("sub-uuid"), "cognito:username": "ada", "cognito:groups": [ADMIN]})

    created = as_(api, token, "POST", "/workflows", {"name": "Cognito", "steps": ["A"]})
    run = as_(api, token, "POST", "/runs", {"workflow_id": created.json_body["id"], "title": "t"})

    assert created.status_code == 201
    assert run.json_body["requested_by"] == "ada"


# -- the requester --------------------------------------------------------------------------


def test_the_requester_is_the_verified_caller(api: Api, secret_mode: None) -> None:
    run = started(api)
    workflow_id = run["workflow_id"]

    named = as_(
        api,
        hs256(claims("maria")),
        "POST",
        "/runs",
        {"workflow_id": workflow_id, "title": "t", "requested_by": "maria"},
    )
    other = as_(
        api,
        hs256(claims("maria")),
        "POST",
        "/runs",
        {"workflow_id": workflow_id, "title": "t", "requested_by": "ceo"},
    )

    assert run["requested_by"] == "maria"
    assert named.json_body["requested_by"] == "maria"
    assert_error(other, 403)


def test_in_none_mode_the_requester_is_asserted_or_null(api: Api) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    named = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "t", "requested_by": " maria "}
    )
    anonymous = api.start_run(workflow["id"])

    assert named.json_body["requested_by"] == "maria"
    assert anonymous["requested_by"] is None
    assert api.get_run(named.json_body["id"])["requested_by"] == "maria"
    listed = api.get("/runs").json_body["items"]
    assert [r["requested_by"] for r in listed] == [None, "maria"]


@pytest.mark.parametrize("requested_by", ["", "   ", 7, "x" * 201, "a\x00b"], ids=repr)
def test_in_none_mode_a_bad_requester_is_400(api: Api, requested_by: Any) -> None:
    workflow = api.create_workflow(steps=["Manager"])

    response = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "t", "requested_by": requested_by}
    )

    assert_error(response, 400)


# -- Idempotency-Keys belong to their caller --------------------------------------------------


def test_one_callers_key_is_not_anothers(api: Api, secret_mode: None) -> None:
    run = started(api)
    body = {"workflow_id": run["workflow_id"], "title": "Same key"}
    keyed = {"Idempotency-Key": "4d0c0e9e-1f3a-4d52-9c1e-6f0a2b7c8d90"}

    first = api.request("POST", "/runs", body, headers={**bearer(hs256(claims("maria"))), **keyed})
    other = api.request("POST", "/runs", body, headers={**bearer(hs256(claims("finn"))), **keyed})

    assert (first.status_code, other.status_code) == (201, 201)
    assert first.json_body["id"] != other.json_body["id"]
    assert "Idempotent-Replayed" not in other.headers


# -- configuration ------------------------------------------------------------------------------


def test_a_short_secret_is_refused_with_a_clear_log_line(
    api: Api, secret_mode: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("WORKFLOW_JWT_SECRET", "too short")

    with caplog.at_level(logging.ERROR, logger="approval-workflows"):
        response = as_(api, hs256(claims()), "GET", "/runs")

    assert_error(response, 503)
    assert "WORKFLOW_JWT_SECRET" not in response.json_body["error"]
    assert any("at least 32" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    "environ, fix",
    [
        ({"WORKFLOW_AUTH": "jwt", "WORKFLOW_JWT_SECRET": SECRET}, "WORKFLOW_JWT_ISSUER"),
        ({"WORKFLOW_AUTH": "jwt", "WORKFLOW_JWT_ISSUER": ISSUER}, "exactly one"),
        (
            {
                "WORKFLOW_AUTH": "jwt",
                "WORKFLOW_JWT_ISSUER": ISSUER,
                "WORKFLOW_JWT_SECRET": SECRET,
                "WORKFLOW_JWKS_URL": "https://x",
            },
            "exactly one",
        ),
        ({"WORKFLOW_AUTH": "oauth"}, "WORKFLOW_AUTH"),
    ],
)
def test_settings_say_what_to_fix(
    environ: dict[str, str], fix: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.ERROR, logger="approval-workflows"),
        pytest.raises(errors.Unavailable),
    ):
        identity.settings(environ)
    assert fix in caplog.text


def test_cors_never_allows_every_origin_beside_authentication(
    api: Api, secret_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = hs256(claims())
    assert as_(api, token, "GET", "/runs").headers["Access-Control-Allow-Origin"] == "null"

    monkeypatch.setenv("WORKFLOW_CORS_ORIGIN", "https://approvals.example.com")
    allowed = as_(api, token, "GET", "/runs").headers["Access-Control-Allow-Origin"]

    assert allowed == "https://approvals.example.com"


def test_make_tokens_development_token_is_accepted(
    api: Api, secret_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "dev_token.py"
    printed = subprocess.run(
        [sys.executable, str(script), "ada", "finance,workflow-admins"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()

    created = as_(api, printed, "POST", "/workflows", {"name": "By make token"})

    assert created.status_code == 201
