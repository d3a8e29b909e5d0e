"""Contacts on every backend: set, read, listed by page, removed; one
principal however its name is spelled; the jwt rules of who manages which."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Api
from tests.support.shapes import assert_error
from tests.support.tokens import admin_token, as_, claims, hs256


def put(api: Api, principal: str, body: Any) -> Any:
    return api.request("PUT", f"/contacts/{principal}", body)


def test_a_contact_is_set_read_replaced_and_removed(api: Api) -> None:
    made = put(api, "user:rita", {"email": "rita@example.com", "slack": "U0RITA"})
    assert made.status_code == 200, made.body
    assert made.json_body["principal"] == "user:rita"
    assert made.json_body["email"] == "rita@example.com"
    assert api.get("/contacts/user:RITA").json_body == made.json_body
    replaced = put(api, "user:Rita", {"email": "r@example.com"})
    assert replaced.json_body["slack"] is None
    assert api.get("/contacts/user:rita").json_body["email"] == "r@example.com"
    assert api.delete("/contacts/user:rita").json_body["email"] == "r@example.com"
    none = {"principal": "user:rita", "email": None, "slack": None, "updated_at": None}
    assert api.get("/contacts/user:rita").json_body == {**none, "updated_by": None}
    assert api.get("/contacts/user%3Arita").json_body["principal"] == "user:rita"
    assert_error(api.delete("/contacts/user:rita"), 404)


def test_contacts_are_listed_by_page(api: Api) -> None:
    for name in ("cy", "al", "bo"):
        assert put(api, f"user:{name}", {"email": f"{name}@example.com"}).status_code == 200
    assert put(api, "group:finance", {"slack": "C0FIN"}).status_code == 200
    first = api.get("/contacts?limit=3").json_body
    assert [c["principal"] for c in first["items"]] == ["group:finance", "user:al", "user:bo"]
    rest = api.get(f"/contacts?limit=3&cursor={first['next_cursor']}").json_body
    assert [c["principal"] for c in rest["items"]] == ["user:cy"]
    assert rest["next_cursor"] is None


@pytest.mark.parametrize(
    "principal, body, status",
    [
        ("user:rita", {}, 422),
        ("user:rita", {"slack": "C0CHAN"}, 422),
        ("group:finance", {"slack": "U0RITA"}, 422),
        ("user:rita", {"email": "not an address"}, 400),
        ("user:rita", {"email": "a@b.c\r\nBcc: x@y.z"}, 400),
        ("user:rita", {"slack": "xoxb-1"}, 400),
        ("user:rita", {"phone": "1"}, 400),
        ("rita", {"email": "rita@example.com"}, 400),
        ("system:x", {"email": "rita@example.com"}, 400),
    ],
)
def test_bad_contacts_are_refused_and_store_nothing(
    api: Api, principal: str, body: Any, status: int
) -> None:
    assert_error(put(api, principal, body), status)
    assert api.get("/contacts").json_body["items"] == []


def test_with_tokens_a_user_manages_their_own_and_an_admin_any(api: Api, secret_mode: None) -> None:
    rita, bob = hs256(claims("rita")), hs256(claims("bob"))
    mine = {"email": "rita@example.com"}
    assert as_(api, rita, "PUT", "/contacts/user:Rita", mine).status_code == 200
    assert as_(api, rita, "GET", "/contacts/user:rita").json_body["updated_by"] == "rita"
    assert_error(as_(api, bob, "GET", "/contacts/user:rita"), 403)
    assert_error(as_(api, bob, "PUT", "/contacts/user:rita", {"email": "b@example.com"}), 403)
    assert_error(as_(api, bob, "DELETE", "/contacts/user:rita"), 403)
    assert_error(as_(api, rita, "PUT", "/contacts/group:finance", {"slack": "C0FIN"}), 403)
    assert_error(as_(api, rita, "GET", "/contacts"), 403)
    admin = admin_token()
    assert as_(api, admin, "PUT", "/contacts/group:finance", {"slack": "C0FIN"}).status_code == 200
    assert len(as_(api, admin, "GET", "/contacts").json_body["items"]) == 2
    assert as_(api, admin, "DELETE", "/contacts/user:rita").status_code == 200


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_principal_no_pattern_refuses_is_422_on_reading_and_removing(
    api: Api, method: str
) -> None:
    # U+4B894 is unassigned, and two scripts in one name: rules no pattern states.
    for principal in ("user:r\U0004b894", "user:r\u0456ta"):
        refused = api.request(method, f"/contacts/{principal}", None)
        assert_error(refused, 422)
