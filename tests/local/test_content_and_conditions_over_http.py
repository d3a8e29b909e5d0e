"""Content and conditions over real HTTP: the server of `make run` (and of
`make run-dynamodb`, on the single-request moto server) routes a tiered
purchase order by its amount, refuses an input that breaks the schema or the
size limit, and binds the input into the audit chain the offline verifier
checks; an input changed in the database makes the audit invalid."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage import Backend
from tests.support import chain, tamper
from tests.support.http import request
from tests.support.serving import served

PROJECT_DIR = Path(__file__).resolve().parents[2]
PURCHASE_ORDER = {
    "name": "Purchase order",
    "input_schema": {
        "type": "object",
        "required": ["amount", "supplier"],
        "properties": {
            "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
            "supplier": {"type": "string", "minLength": 1},
            "link": {"type": "string", "format": "uri"},
        },
    },
    "steps": [
        "Manager",
        {"name": "Finance", "when": {">=": [{"var": "amount"}, 1000]}},
        {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}},
    ],
}


@pytest.fixture
def served_storage(
    race_storage_factory: Callable[[], Backend], serve: None
) -> Iterator[tuple[int, Backend]]:
    storage = race_storage_factory()
    with served(storage) as port:
        yield port, storage


def call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    answer = request(port, method, path, body)
    return answer.status, answer.json()


def test_a_tiered_purchase_order_over_http(
    served_storage: tuple[int, Backend], tmp_path: Path
) -> None:
    port, storage = served_storage
    status, workflow = call(port, "POST", "/workflows", PURCHASE_ORDER)
    assert status == 201, workflow

    decisions = {}
    runs = {}
    for amount in (500, 5_000, 50_000):
        data = {"amount": amount, "supplier": "Acme", "link": "https://erp.example/po/1042"}
        status, run = call(
            port, "POST", "/runs", {"workflow_id": workflow["id"], "title": "PO", "input": data}
        )
        assert status == 201, run
        count = 0
        while run["status"] == "in_progress":
            status, run = call(port, "POST", f"/runs/{run['id']}/approve", {"actor": f"a{count}"})
            assert status == 200, run
            count += 1
        decisions[amount], runs[amount] = count, run
    assert decisions == {500: 1, 5_000: 2, 50_000: 3}

    for amount, run in runs.items():
        status, stored = call(port, "GET", f"/runs/{run['id']}")
        chain.assert_chained(stored)
        status, audit = call(port, "GET", f"/runs/{run['id']}/audit")
        assert audit["valid"] and audit["state_valid"] and chain.first_broken(audit) is None
        saved = tmp_path / f"audit-{amount}.json"
        saved.write_text(json.dumps(audit, ensure_ascii=False), encoding="utf-8")
        # With the version its chain binds, as an auditor fetches it beside the audit.
        status, version = call(port, "GET", f"/workflows/{run['workflow_id']}/versions/1")
        given = tmp_path / f"version-{amount}.json"
        given.write_text(json.dumps(version, ensure_ascii=False), encoding="utf-8")
        verified = subprocess.run(
            [sys.executable, "-m", "chalicelib.domain.audit", "verify", str(saved), str(given)],
            cwd=PROJECT_DIR,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verified.returncode == 0, verified.stdout

    tamper.edit_input(storage, runs[50_000]["id"], {"amount": 50, "supplier": "Acme"})
    status, audit = call(port, "GET", f"/runs/{runs[50_000]['id']}/audit")
    assert (status, audit["valid"], audit["first_invalid_seq"]) == (200, False, 1)


def test_refused_inputs_over_http(served_storage: tuple[int, Backend]) -> None:
    port, _ = served_storage
    _, workflow = call(port, "POST", "/workflows", PURCHASE_ORDER)
    base = {"workflow_id": workflow["id"], "title": "PO"}

    status, body = call(port, "POST", "/runs", {**base, "input": {"amount": -1, "supplier": "A"}})
    assert (status, body["error"]) == (
        422,
        "'input' does not meet the workflow's schema at /amount: -1 is less than the minimum of 0",
    )
    status, body = call(port, "POST", "/runs", {**base, "input": {"amount": 5}})
    assert status == 422 and " at /supplier: " in body["error"], body
    status, body = call(
        port, "POST", "/runs", {**base, "input": {"amount": 5, "supplier": "A", "link": "no uri"}}
    )
    assert status == 422 and " at /link: " in body["error"], body
    big = {"amount": 5, "supplier": "x" * (33 * 1024)}
    status, body = call(port, "POST", "/runs", {**base, "input": big})
    assert status == 413 and "bytes in its canonical form; at most 32,768" in body["error"], body
    _, listed = call(port, "GET", "/runs")
    assert listed["items"] == []
