"""Debian's headless Chromium, driven by Playwright for Python: the browser of the
browser tests (tests/browser/) and of `make screenshots` (docs/development.md says
how it is installed, and how CHROMIUM picks another).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

DEBIAN_CHROMIUM = "/usr/lib/chromium/chromium-headless-shell"


def chromium_path() -> str:
    return os.environ.get("CHROMIUM", "").strip() or DEBIAN_CHROMIUM


def launch(playwright: Playwright) -> Browser:
    """A headless Chromium; FileNotFoundError saying how to get one if there is none."""
    path = chromium_path()
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"No Chromium at {path}: `make browser` installs Debian's chromium-headless-shell "
            "(as root, with apt-get), or set CHROMIUM to a Chromium or Chrome binary"
        )
    # Chromium refuses to start as root with its sandbox, which needs user namespaces that
    # containers often lack; without it is fine for a browser that loads 127.0.0.1 alone.
    return playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
