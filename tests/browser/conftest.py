"""The browser tier's fixtures: one headless Chromium per test process, the app
served over HTTP by an in-process server (port 0) on the test's backend, and a
fresh tab per test whose console must stay free of errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from chalice.test import Client

from chalicelib.storage import Backend
from scripts import browser
from tests.support.access import silenced
from tests.support.browser import PageUnderTest
from tests.support.serving import served

if TYPE_CHECKING:
    from playwright.sync_api import Browser

WAIT_MS = 20_000


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Debian's chromium-headless-shell (scripts/browser.py), once per test process."""
    from playwright.sync_api import expect, sync_playwright

    # Generous waits, never asserted on: a decision answers in milliseconds, but
    # on a loaded 2-core machine in-process moto's transactions can take seconds.
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        try:
            launched = browser.launch(playwright)
        except FileNotFoundError as exc:
            pytest.fail(str(exc))
        yield launched
        launched.close()


@pytest.fixture
def width() -> int:
    """The window's width in px; tests that check both widths parametrize it."""
    return 1280


@pytest.fixture
def timezone() -> str | None:
    """The tab's time zone (None: the machine's); tests of local times parametrize it."""
    return None


@pytest.fixture
def base_url(storage: Backend, client: Client, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The app as `make run` serves it, on the test's storage (which `api` sees too)."""
    with silenced(), served(storage) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def tab(
    chromium: Browser, base_url: str, width: int, timezone: str | None
) -> Iterator[PageUnderTest]:
    """A new tab on the served app; the test fails if the page logged an error."""
    page = PageUnderTest(chromium, base_url, width, timezone)
    yield page
    page.close()
    assert page.console_errors == [], page.console_errors
