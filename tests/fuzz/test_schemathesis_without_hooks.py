"""schemathesis as anyone would run it: every check, without this project's
hooks, against GET /openapi.json. What it finds refused
with 400 must be what the document says is refused: the only failure it may
report is the made-up cursor's 400, which no document can prevent (a cursor
is a token the service signs; the hooks of test_schemathesis.py issue real
ones). Every other refusal of a request valid by the document is a 422 (a
rule no schema states) or the document states it.

On SQLite only: which requests are refused, and with which status, is decided
at the edge and in the domain before either store is asked (the hooked run of
test_schemathesis.py covers both stores for server errors), and a second
backend doubled the suite's longest test. Bounded to about a minute of a core:
the operations whose
bodies carry the rules the document states (a workflow's input_schema and
conditions, a step, a run's input, a resubmit's, a delegation's times) and
one list that takes a cursor, at --max-examples 60, every phase (the
stateful one chains them through the document's links)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.test_schemathesis import CONFIG, EXCLUDED_CHECKS, PROJECT_DIR
from tests.support.access import silenced
from tests.support.backends import RACE_BACKENDS
from tests.support.serving import served

MAX_EXAMPLES = 60
OPERATIONS = [
    "createWorkflow",
    "appendStep",
    "startRun",
    "returnRun",
    "resubmitRun",
    "createDelegation",
    "listDelegations",
]
CURSOR_REFUSED = "'cursor' is not one this service issued"


@pytest.fixture
def served_app(tmp_path: Path, serve: None) -> Iterator[str]:
    with (
        RACE_BACKENDS["sqlite"](tmp_path) as open_storage,
        silenced(),
        served(open_storage()) as port,
    ):
        yield f"http://127.0.0.1:{port}"


def test_without_hooks_the_only_schema_valid_request_refused_with_400_is_a_made_up_cursor(
    served_app: str, tmp_path: Path
) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    report = tmp_path / "report.ndjson"
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{served_app}/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        ",".join(EXCLUDED_CHECKS),
        *(option for name in OPERATIONS for option in ("--include-operation-id", name)),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--workers",
        "1",
        "--continue-on-failure",
        "--generation-database",
        "none",
        "--no-color",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(report),
    ]
    env = {name: value for name, value in os.environ.items() if name != "SCHEMATHESIS_HOOKS"}
    env["PYTHONPATH"] = str(PROJECT_DIR)
    result = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    said = result.stdout[-30_000:] + result.stderr[-5_000:]

    failures, errors = outcomes(report)

    assert errors == [], said
    assert failures, "the made-up cursor is refused, as the document says: " + said
    others = [
        f
        for f in failures
        if f[:2] != ("positive_data_acceptance", 400) or CURSOR_REFUSED not in f[2]
    ]
    assert others == [], said


def outcomes(report: Path) -> tuple[list[tuple[str, int, str]], list[str]]:
    """Each failed check of the run (its name, the answer's status and body),
    and each error (a schema it could not generate from, a request it could
    not send)."""
    failures, errors = [], []
    for line in report.read_text().splitlines():
        ((kind, event),) = json.loads(line).items()
        if kind == "NonFatalError":
            errors.append(json.dumps(event["value"]))
        if kind != "ScenarioFinished" or event["status"] not in ("failure", "error"):
            continue
        recorder = event["recorder"]
        for case_id, checks in recorder["checks"].items():
            for check in checks:
                if check["status"] == "success":
                    continue
                response = recorder["interactions"].get(case_id, {}).get("response") or {}
                failures.append((check["name"], response.get("status_code", 0), _body(response)))
    return failures, errors


def _body(response: dict[str, Any]) -> str:
    content = response.get("content") or {}
    raw = content.get("$base64")
    return base64.b64decode(raw).decode("utf-8", "replace") if raw else str(content)
