"""`make screenshots` writes the README's pictures: the inbox, a run page, the
delegations and a workflow's figures, at 360 and 1280 px wide; and
docs/notifications.md's, an email and the page its link opens."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

from tests.support.processes import PROJECT_DIR, command_env


def png_width(path: Path) -> int:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return int(struct.unpack(">I", header[16:20])[0])


def test_the_screenshots_script_writes_both_views_at_both_widths(tmp_path: Path) -> None:
    env = command_env(tmp_path, CHROMIUM=os.environ.get("CHROMIUM", ""))
    result = subprocess.run(
        [sys.executable, "scripts/screenshots.py", str(tmp_path / "shots")],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    written = {path.name: png_width(path) for path in (tmp_path / "shots").iterdir()}
    assert written == {
        "inbox-360.png": 360,
        "inbox-1280.png": 1280,
        "run-360.png": 360,
        "run-1280.png": 1280,
        "delegations-360.png": 360,
        "delegations-1280.png": 1280,
        "versions-360.png": 360,
        "versions-1280.png": 1280,
        "signin-1280.png": 1280,
        "signed-in-1280.png": 1280,
        "stats-360.png": 360,
        "stats-1280.png": 1280,
        "email-1280.png": 1280,
        "act-360.png": 360,
    }
