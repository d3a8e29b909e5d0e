"""The browser tier's fixtures: one headless Chromium per test process, the app
served over HTTP by an in-process server (port 0) on the test's backend, and a
fresh tab per test whose console must stay free of errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from chalice.config import Config
from chalice.test import Client

import app as app_module
from chalicelib import access_log
from scripts import browser, local_server
from tests.support.browser import PageUnderTest

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Debian's chromium-headless-shell (scripts/browser.py), once per test process."""
    from playwright.sync_api import sync_playwright

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
def served(client: Client, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The base URL of the app, served as `make run` serves it, on the test's storage."""
    monkeypatch.setattr(access_log.LOGGER, "disabled", True)
    with local_server.serving(app_module.app, Config.create()) as base_url:
        yield base_url


@pytest.fixture
def tab(chromium: Browser, served: str, width: int) -> Iterator[PageUnderTest]:
    """A new tab on the served app; the test fails if the page logged an error."""
    page = PageUnderTest(chromium, served, width)
    yield page
    page.close()
    assert page.console_errors == [], page.console_errors
