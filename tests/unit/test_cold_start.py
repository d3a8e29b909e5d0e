"""Importing the app stays light: Lambda pays for every module on a cold start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    # The state machine's enums (2.8 million instructions to make): for the
    # rules and the parsers, not for a read (chalicelib/domain/lifecycle.py).
    "chalicelib.domain.lifecycle",
    "chalicelib.api.page",
    # Needed by a request with an Idempotency-Key and by event delivery.
    "chalicelib.domain.idempotency",
    "chalicelib.delivery.dispatch",
    # Needed where a workflow's input schema is checked or applied (20 ms).
    "jsonschema_rs",
    # Needed by the delegation routes and by decisions for someone else.
    "chalicelib.delegations",
    "chalicelib.domain.delegations",
    # Needed by the routes of a workflow's versions and retirement.
    "chalicelib.versions",
    "bisect",
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


def test_importing_the_app_leaves_the_collector_alone() -> None:
    """app.py no longer pauses or freezes the garbage collector (issue 43)."""
    probe = "import gc, json, app; print(json.dumps([gc.isenabled(), gc.get_freeze_count()]))"
    assert printed_by(probe, dict(os.environ)) == [True, 0]


def test_a_request_that_applies_no_schema_never_loads_the_validator(tmp_path: Path) -> None:
    """Defining a workflow, starting and deciding its runs, with conditions but
    without an input schema: the schema validator stays unloaded."""
    probe = (
        "import json, sys\n"
        "from chalice.test import Client\n"
        "import app\n"
        "h = {'Content-Type': 'application/json'}\n"
        "with Client(app.app) as c:\n"
        "    w = {'name': 'W', 'steps': ['A', {'name': 'B', 'when': {'>': [{'var': 'n'}, 1]}}]}\n"
        "    c.http.post('/workflows', headers=h, body=json.dumps(w))\n"
        "    r = {'workflow_id': 1, 'title': 't', 'input': {'n': 2}}\n"
        "    c.http.post('/runs', headers=h, body=json.dumps(r))\n"
        "    c.http.post('/runs/1/approve', headers=h, body=json.dumps({'actor': 'a'}))\n"
        "    assert json.loads(c.http.get('/runs/1').body)['current_step']['name'] == 'B'\n"
        "print(json.dumps('jsonschema_rs' in sys.modules))\n"
    )
    assert printed_by(probe, sqlite_env(tmp_path)) is False


# What a cold start's usual first request, GET /runs/{id} on a file already at
# the latest schema, still leaves unloaded (it loads sqlite3 and the adapter),
# and so `import app` too: needed by requests with a body or a query string, by
# decisions, audits and writes, by a file that needs migrating, by a failing
# storage and by the checks of a name (a verified caller's, a delegation's),
# each 50 to 300 µs.
NOT_READ_BY_ID = (
    "chalicelib.api.validation",
    "chalicelib.api.queries",
    "chalicelib.domain.decision",
    "chalicelib.domain.audit",
    "chalicelib.domain.transitions",
    "chalicelib.domain.events",
    "chalicelib.domain.changes",
    "chalicelib.domain.lifecycle",
    "chalicelib.domain.replay",
    "chalicelib.storage.protocols",
    "chalicelib.storage.failures",
    "chalicelib.storage.sqlite.migrations",
    "chalicelib.domain.names",
)


def test_reading_a_run_by_id_loads_no_parser_rule_or_migration(tmp_path: Path) -> None:
    env = sqlite_env(tmp_path)
    setup = (
        "from chalicelib import engine\n"
        "from chalicelib.storage import create_storage\n"
        "storage = create_storage()\n"
        "workflow = engine.create_workflow(storage, 'W', steps=['A'])\n"
        "engine.start_run(storage, workflow.id, 'T')\n"
    )
    subprocess.run([sys.executable, "-c", setup], cwd=PROJECT_DIR, check=True, env=env)
    probe = (
        "import json, sys\n"
        "from chalice.test import Client\n"
        "import app\n"
        "with Client(app.app) as c:\n"
        "    assert c.http.get('/runs/1').status_code == 200\n"
        f"print(json.dumps([name for name in {NOT_READ_BY_ID!r} if name in sys.modules]))\n"
    )
    assert printed_by(probe, env) == []


def sqlite_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a service on a SQLite file of its own, in `none` mode."""
    env = {**os.environ, "WORKFLOW_SQLITE_PATH": str(tmp_path / "w.sqlite3")}
    env["WORKFLOW_STORAGE"] = "sqlite"
    env.pop("WORKFLOW_AUTH", None)
    return env


def printed_by(probe: str, env: dict[str, str]) -> Any:
    """What the program `probe` prints last, as JSON, run in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=PROJECT_DIR,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(done.stdout.splitlines()[-1])
