"""A client generated from the OpenAPI document (openapi-python-client) parses
every error the service or API Gateway can give: each is `{"error": ...}`, and
each status is documented, so no generated client meets an answer it cannot read."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads((PROJECT_DIR / "chalicelib" / "openapi.json").read_text())
# What API Gateway answers itself, in the service's shape (make package's gateway responses).
GATEWAY_STATUSES = {"403", "429", "502", "504"}
PACKAGE = "approval_workflows_client"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    out = tmp_path_factory.mktemp("client")
    bin_dir = Path(sys.executable).parent
    subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--path",
            str(PROJECT_DIR / "chalicelib" / "openapi.json"),
            "--meta",
            "none",
            "--output-path",
            str(out / PACKAGE),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=out,
        # It formats what it writes with ruff, found on PATH.
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(out))


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in DOCUMENT["paths"].items()
        for method, operation in item.items()
    ]


def json_answer(operation: dict[str, Any], status: str) -> bool:
    """Whether the answer is JSON; a page for people (a one-time link's) is HTML."""
    response = operation["responses"][status]
    if "$ref" in response:
        response = DOCUMENT["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    return "application/json" in response.get("content", {"application/json": None})


def snake(operation_id: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation_id).lstrip("_")


@pytest.mark.parametrize(
    "method, path, operation", operations(), ids=[f"{m} {p}" for m, p, _ in operations()]
)
def test_every_documented_error_parses_as_the_error_shape(
    generated: ModuleType, method: str, path: str, operation: dict[str, Any]
) -> None:
    module = importlib.import_module(f"{PACKAGE}.api.default.{snake(operation['operationId'])}")
    client = importlib.import_module(PACKAGE).Client(base_url="https://api.example.test")
    error_model = importlib.import_module(f"{PACKAGE}.models").Error

    for status in (s for s in operation["responses"] if s >= "400" and json_answer(operation, s)):
        answer = httpx.Response(int(status), json={"error": f"what went wrong ({status})"})
        parsed = module._parse_response(client=client, response=answer)
        assert isinstance(parsed, error_model), (status, parsed)
        assert parsed.error == f"what went wrong ({status})"


@pytest.mark.parametrize(
    "method, path, operation", operations(), ids=[f"{m} {p}" for m, p, _ in operations()]
)
def test_api_gateways_own_answers_are_documented(
    method: str, path: str, operation: dict[str, Any]
) -> None:
    if path == "/openapi.json":
        return  # served whole or not at all
    expected = GATEWAY_STATUSES | ({"413"} if method == "post" else set())
    assert expected <= set(operation["responses"]), sorted(operation["responses"])
