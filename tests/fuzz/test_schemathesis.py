"""A property-based run of schemathesis against the served OpenAPI document.

The app runs on `make run`'s local server in a thread (real HTTP on 127.0.0.1, a
free port), once per storage backend: a fresh SQLite file, and a fresh table on
the one-request-at-a-time moto server. Its CLI reads GET /openapi.json and
sends generated valid and invalid requests, single and chained through the
document's links, for about FUZZ_SECONDS, with every check but one that does
not apply (EXCLUDED_CHECKS): any 5xx, undocumented status, response that
breaks its schema, content type or headers, valid request refused (but with
422, which the document gives to the rules no schema can state) or invalid one
accepted fails the test.

One worker: schemathesis's workers are threads, and hypothesis builds `ast`
nodes on each; CPython before 3.11.8 races there (gh-106905: "SystemError: AST
constructor recursion depth mismatch"). The run is time-bound, and run as
`make test` runs it, both backends at once on 2 cores, one worker sent as many
test cases as two did (SQLite 4,582 against 4,163, DynamoDB 2,094 against
1,953, in 55 s each): what bounds it is the server answering in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage import Backend
from tests.support.access import silenced
from tests.support.serving import served

FUZZ_SECONDS = int(os.environ.get("FUZZ_SECONDS", "55"))  # per backend
MAX_EXAMPLES = 200
CHECKS = ["all"]
# Methods sent to paths that do not list them, expecting 405. Not TRACE or QUERY:
# chalice's local server (Python's http.server) answers those 501 itself and API
# Gateway does not forward them; not OPTIONS: the gateway answers CORS preflights.
# A request the schema allows may still be refused, as the document says: 409
# for the state (the run has ended, the name is taken) and 422 for a rule no
# schema can state (a quorum its approvers could never meet, a rejection
# without the comment its workflow requires, an Idempotency-Key the fuzzer
# reuses for another request). Not 400: what a schema can state, the
# document's schemas state (tests/unit/test_document_rules.py).
CONFIG = """
[phases.coverage]
unexpected-methods = ["get", "put", "post", "delete", "patch"]

[checks.positive_data_acceptance]
expected-statuses = ["2XX", "3XX", "401", "403", "404", "409", "422", "429", "5XX"]
"""
# The one check left out: that a deleted resource is gone. The document's only
# DELETE revokes a delegation, which stays readable (its GET answers it with
# revoked_at). Left out on the command line: `--checks all` names every check,
# and a check named there is on whatever the configuration file says of it,
# for one operation or all.
EXCLUDED_CHECKS = ["use_after_free"]
PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def served_app(race_storage_factory: Callable[[], Backend], serve: None) -> Iterator[str]:
    """The base URL of the app on the local server `make run` uses, on fresh storage."""
    with silenced(), served(race_storage_factory()) as port:
        yield f"http://127.0.0.1:{port}"


def test_schemathesis_finds_no_server_error_undocumented_status_or_schema_violation(
    served_app: str, tmp_path: Path
) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{served_app}/openapi.json",
        "--checks",
        ",".join(CHECKS),
        "--exclude-checks",
        ",".join(EXCLUDED_CHECKS),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--max-time",
        str(FUZZ_SECONDS),
        "--workers",
        "1",
        "--continue-on-failure",
        "--generation-database",
        "none",
        "--no-color",
    ]
    # The hooks (schemathesis_hooks.py) issue cursors with the service's own code:
    # no document can say which strings are cursors it issued.
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.fuzz.schemathesis_hooks",
        "PYTHONPATH": str(PROJECT_DIR),
    }
    result = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=FUZZ_SECONDS + 120, env=env
    )
    # The summary names each failure with a curl line to reproduce it, and the seed.
    assert result.returncode == 0, result.stdout[-30_000:] + result.stderr[-5_000:]


def test_the_run_has_every_check_on_but_the_one_left_out(tmp_path: Path) -> None:
    """What the command line and CONFIG make of the checks, for each operation in
    each phase, as the run's CLI combines them."""
    import schemathesis
    from schemathesis.checks import CHECKS as REGISTERED
    from schemathesis.config import SchemathesisConfig
    from schemathesis.core.result import Ok

    config_file = tmp_path / "schemathesis.toml"
    config_file.write_text(CONFIG)
    config = SchemathesisConfig.from_path(str(config_file))
    config.projects.override.checks.update(
        included_check_names=CHECKS, excluded_check_names=EXCLUDED_CHECKS, max_response_time=None
    )
    schema = schemathesis.openapi.from_path(
        str(PROJECT_DIR / "chalicelib" / "openapi.json"), config=config
    )
    names = {check.__name__ for check in REGISTERED.get_all()} - {"max_response_time"}
    assert "use_after_free" in names and "positive_data_acceptance" in names
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operations.append(result.ok())
    assert any(op.method.upper() == "DELETE" for op in operations)
    for operation in operations:
        for phase in ("examples", "coverage", "fuzzing", "stateful"):
            checks = schema.config.checks_config_for(operation=operation, phase=phase)
            off = {name for name in names if not checks.get_by_name(name=name).enabled}
            assert off == {"use_after_free"}, (operation.label, phase)


def test_a_cursor_is_replaced_with_one_issued_for_the_query_as_sent() -> None:
    """The hook runs before every request of every phase (before_call: the
    stateful phase's steps never reach map_case). A field the stateful phase
    fills from a link whose response lacks it is None, and requests leaves it
    out: the cursor is issued for the query without it."""
    from chalicelib import cursors

    query = {"workflow_id": None, "cursor": "FALSE", "status": "returned", "limit": 63}
    issued = _hooked("/runs", query)["cursor"]
    assert issued != "FALSE"
    assert cursors.position(issued, "runs", {"workflow_id": None, "status": "returned"}) == 1


def test_an_inbox_cursor_is_issued_for_the_groups_as_sent() -> None:
    """requests leaves a None out of a list as well: a group the stateful phase
    filled with None is not one the cursor binds."""
    from chalicelib import cursors, engine

    query = {"actor": "rita", "group": [None, "finance"], "cursor": "FALSE"}
    issued = _hooked("/inbox", query)["cursor"]
    filters = engine.inbox_filters("rita", frozenset({"finance"}))
    assert cursors.position(issued, "inbox", filters) == ["2030-01-01T00:00:00.000Z", 1]


def _hooked(path: str, query: dict[str, Any]) -> dict[str, Any]:
    """The query of a GET to `path` as the hooks send it."""
    import schemathesis

    from tests.fuzz import schemathesis_hooks

    schema = schemathesis.openapi.from_path(str(PROJECT_DIR / "chalicelib" / "openapi.json"))
    case = schema[path]["GET"].Case(query=query)
    schemathesis_hooks.before_call(None, case, {})
    return dict(case.query)
