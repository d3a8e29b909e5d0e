"""Importing the app stays light: Lambda pays for every module on a cold start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
# Modules the code keeps out of `import app` (each measured at 1 to 7 ms, or for
# boto3 hundreds): imported lazily where a request needs them.
KEPT_OUT = (
    "boto3",
    "botocore",
    "uuid",
    "unicodedata",
    "hashlib",
    "pathlib",
    "dataclasses",
    "sqlite3",
    "chalicelib.storage.sqlite.adapter",
    "chalicelib.storage.dynamodb.adapter",
    # Needed by writes, the event pages and the approvers' page, not by a read.
    "chalicelib.domain.events",
    "chalicelib.api.page",
    # Needed by a request with an Idempotency-Key and by event delivery.
    "chalicelib.domain.idempotency",
    "chalicelib.delivery.dispatch",
)


def test_importing_the_app_loads_none_of_the_heavy_modules() -> None:
    probe = (
        "import json, sys; import app; "
        f"print(json.dumps([name for name in {KEPT_OUT!r} if name in sys.modules]))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_DIR, check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(loaded) == []
