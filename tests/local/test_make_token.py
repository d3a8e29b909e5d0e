"""`make token` as a user runs it: the token's actor is the USER given on make's
command line, never the login name make finds in the environment's USER."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.processes import command_env, make
from tests.support.tokens import ISSUER, SECRET

JWT = {"WORKFLOW_AUTH": "jwt", "WORKFLOW_JWT_ISSUER": ISSUER, "WORKFLOW_JWT_SECRET": SECRET}


def decoded(token: str) -> dict[str, Any]:
    import jwt

    claims: dict[str, Any] = jwt.decode(token, SECRET, algorithms=["HS256"], issuer=ISSUER)
    return claims


def test_the_token_is_for_the_user_named_on_the_command_line(tmp_path: Path) -> None:
    env = command_env(tmp_path, USER="root", **JWT)

    result = make("token", env, "-s", "USER=maria", "GROUPS=finance,workflow-admins")

    assert result.returncode == 0, result.stderr
    claims = decoded(result.stdout.strip())
    assert claims["sub"] == "maria"
    assert claims["groups"] == ["finance", "workflow-admins"]


def test_without_a_user_on_the_command_line_it_refuses_rather_than_take_the_login(
    tmp_path: Path,
) -> None:
    env = command_env(tmp_path, USER="root", **JWT)

    result = make("token", env, "-s", "GROUPS=finance")

    assert result.returncode != 0
    assert result.stdout == ""
    assert "USER=<actor>" in result.stderr
    assert "not your login's USER" in result.stderr


def test_a_blank_user_is_refused(tmp_path: Path) -> None:
    result = make("token", command_env(tmp_path, **JWT), "-s", "USER= ")

    assert result.returncode != 0
    assert result.stdout == ""
    assert "USER=<actor>" in result.stderr
