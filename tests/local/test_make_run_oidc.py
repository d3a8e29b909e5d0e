"""`make run-oidc` as a developer runs it: the test OpenID provider and the
service signing in through it, both on loopback; Ctrl-C stops both."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.support.http import request
from tests.support.processes import command_env, free_port, listening, started, wait_listening

START_SECONDS = 60


def test_make_run_oidc_signs_in_through_its_own_provider(tmp_path: Path) -> None:
    port, provider_port = free_port(), free_port()
    command = [
        "make",
        "--no-print-directory",
        "run-oidc",
        f"PORT={port}",
        f"OIDC_PORT={provider_port}",
    ]
    with started(command, command_env(tmp_path), tmp_path) as run:
        wait_listening(port, run, START_SECONDS)
        page = request(port, "GET", "/")
        signin = request(port, "GET", "/auth/signin?next=%23%2Fruns%2F1")
        to_provider = urlsplit(signin.headers["Location"])
        form = request(provider_port, "GET", f"{to_provider.path}?{to_provider.query}")
        unsigned = request(port, "GET", "/inbox")
    assert not listening(port) and not listening(provider_port)

    assert '<meta name="sign-in" content="oidc">' in page.body.decode()
    assert signin.status == 302
    sent = parse_qs(to_provider.query)
    assert signin.headers["Location"].startswith(f"http://127.0.0.1:{provider_port}/oauth2/")
    assert sent["code_challenge_method"] == ["S256"]
    assert form.status == 200 and b"ada" in form.body  # OIDC_USERS, one click each
    assert unsigned.status == 401
