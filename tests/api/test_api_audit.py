"""GET /runs/{id}/audit through chalice.test.Client, on each backend: a run's
history verifies, and stays verifiable offline; changed in the database behind
the service's back, it does not, and the first bad seq is named.

Every hash is recomputed here from the README's definition (tests/support/chain.py),
never through chalicelib/domain/audit.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage import Backend
from tests.support import chain, tamper, verifiers
from tests.support.api import Api
from tests.support.shapes import BAD_PATH_IDS, MISSING_ID, assert_error, assert_hash

PROJECT_DIR = Path(__file__).resolve().parents[2]
# The chain's fields, and the state's beside them (the state the history leads to).
AUDIT_FIELDS = {"run_id", "genesis", "head_hash", "valid", "first_invalid_seq", "entries"} | {
    "input",
    "state_valid",
    "state_mismatches",
    "digest_mismatches",
}
GENESIS_FIELDS = {"run_id", "workflow_id", "title", "requested_by", "created_at", "hash"}
ENTRY_FIELDS = {
    "run_id",
    "seq",
    "step_id",
    "step_name",
    "action",
    "actor",
    "comment",
    "created_at",
    "hash",
}
# Only in the entries of the actions that have them.
OPTIONAL = {"on_behalf_of", "round", "input_digest", "next_step_digest"}
# The definition its version had at the start: in the genesis of every run started since.
BOUND = {"definition_digest", "definition_steps"}


def audited(api: Api, run_id: int) -> dict[str, Any]:
    response = api.get(f"/runs/{run_id}/audit")
    assert response.status_code == 200, response.body
    body: dict[str, Any] = response.json_body
    assert set(body) == AUDIT_FIELDS, body
    assert (
        GENESIS_FIELDS | BOUND <= set(body["genesis"]) <= GENESIS_FIELDS | BOUND | {"input_digest"}
    )
    assert all(ENTRY_FIELDS <= set(entry) <= ENTRY_FIELDS | OPTIONAL for entry in body["entries"])
    return body


def decided_run(api: Api) -> dict[str, Any]:
    """A run requested by ada, approved twice (a comment in other scripts) and rejected."""
    workflow = api.create_workflow(steps=["Manager", "Finance", "CFO"])
    started = api.post(
        "/runs",
        {
            "workflow_id": workflow["id"],
            "title": "PO-1042: 12 Laptops für Zürich",
            "requested_by": "ada",
        },
    )
    assert started.status_code == 201, started.body
    run_id = started.json_body["id"]
    api.approve(run_id, "maria", "Within budget ✓ 予算内")
    api.approve(run_id, "finn")
    return api.reject(run_id, "cfo", "Not this quarter")


def bound_versions(api: Api, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answers of the versions whose definitions the audit's chain binds,
    as an auditor fetches them beside it."""
    workflow_id = answer["genesis"]["workflow_id"]
    return [
        api.get(f"/workflows/{workflow_id}/versions/{version}").json_body
        for version in verifiers.bound_versions(answer)
    ]


def agree(api: Api, tmp_path: Path, answer: dict[str, Any], valid: Any = None) -> None:
    """verifiers.assert_agree, given the versions the answer binds as they are now."""
    verifiers.assert_agree(tmp_path, answer, valid, bound_versions(api, answer))


def verify_offline(
    api: Api, tmp_path: Path, answer: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """What an auditor gets from the saved answer (and the versions it binds),
    with the verifier the README names."""
    saved = tmp_path / "audit.json"
    saved.write_text(json.dumps(answer, ensure_ascii=False), encoding="utf-8")
    versions = [
        verifiers.saved(tmp_path, v, f"v{n}.json")
        for n, v in enumerate(bound_versions(api, answer))
    ]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "chalicelib.domain.audit",
            "verify",
            str(saved),
            *map(str, versions),
        ],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_runs_audit_verifies_with_the_hashes_the_definition_gives(
    api: Api, tmp_path: Path
) -> None:
    run = decided_run(api)

    answer = audited(api, run["id"])

    assert (answer["valid"], answer["first_invalid_seq"]) == (True, None)
    chain.assert_chained(run)
    genesis, *hashes = chain.hashes_of(run)
    assert answer["genesis"] == {
        "run_id": run["id"],
        "workflow_id": run["workflow_id"],
        "title": run["title"],
        "requested_by": "ada",
        "created_at": run["created_at"],
        "definition_digest": run["definition_digest"],
        "definition_steps": 3,
        "hash": genesis,
    }
    assert [entry["seq"] for entry in answer["entries"]] == [1, 2, 3]
    assert [entry["hash"] for entry in answer["entries"]] == hashes
    assert answer["head_hash"] == hashes[-1] == api.get_run(run["id"])["head_hash"]
    listed = api.get(f"/runs?workflow_id={run['workflow_id']}").json_body["items"]
    assert [item["head_hash"] for item in listed] == [hashes[-1]]
    offline = verify_offline(api, tmp_path, answer)
    assert (offline.returncode, offline.stdout) == (
        0,
        f"valid: run {run['id']}, 3 entries, head_hash {hashes[-1]}\n",
    )
    agree(api, tmp_path, answer)


def test_a_run_just_started_audits_as_its_genesis(api: Api) -> None:
    _, run = api.started_run()

    answer = audited(api, run["id"])

    assert answer["valid"] and answer["entries"] == []
    assert answer["head_hash"] == answer["genesis"]["hash"] == chain.genesis_of(run)
    assert_hash(run["head_hash"])


def test_each_decision_answers_the_run_with_its_new_link(api: Api) -> None:
    _, run = api.started_run(steps=["Manager", "Finance"])

    approved = api.approve(run["id"], "maria")

    chain.assert_chained(approved)
    assert approved["head_hash"] != run["head_hash"]
    assert api.get_run(run["id"]) == approved


@pytest.mark.parametrize(
    "field, seq",
    [("actor", 2), ("comment", 1), ("comment", 3)],
    ids=["actor-2", "comment-1", "comment-3"],
)
def test_an_action_edited_in_the_database_breaks_the_chain_at_its_seq(
    api: Api, storage: Backend, tmp_path: Path, field: str, seq: int
) -> None:
    run = decided_run(api)

    tamper.edit_action(storage, run["id"], seq, field, "mallory")

    answer = audited(api, run["id"])
    assert (answer["valid"], answer["first_invalid_seq"]) == (False, seq)
    assert answer["entries"][seq - 1][field] == "mallory"
    assert chain.first_broken(answer) == seq
    offline = verify_offline(api, tmp_path, answer)
    assert (offline.returncode, offline.stdout) == (
        1,
        f"invalid: run {run['id']}, first invalid seq {seq}\n",
    )
    agree(api, tmp_path, answer)


@pytest.mark.parametrize("seq", [1, 2, 3])
def test_an_action_deleted_from_the_database_breaks_the_chain_at_its_seq(
    api: Api, storage: Backend, tmp_path: Path, seq: int
) -> None:
    run = decided_run(api)

    tamper.delete_action(storage, run["id"], seq)

    answer = audited(api, run["id"])
    assert (answer["valid"], answer["first_invalid_seq"]) == (False, seq)
    assert len(answer["entries"]) == 2
    offline = verify_offline(api, tmp_path, answer)
    assert (offline.returncode, offline.stdout) == (
        1,
        f"invalid: run {run['id']}, first invalid seq {seq}\n",
    )
    agree(api, tmp_path, answer)


def test_actions_reordered_in_the_database_break_the_chain_where_the_order_changes(
    api: Api, storage: Backend, tmp_path: Path
) -> None:
    run = decided_run(api)

    tamper.swap_actions(storage, run["id"], 2, 3)

    answer = audited(api, run["id"])
    assert [entry["actor"] for entry in answer["entries"]] == ["maria", "cfo", "finn"]
    assert (answer["valid"], answer["first_invalid_seq"]) == (False, 2)
    agree(api, tmp_path, answer)


# -- what it refuses -----------------------------------------------------------------


def test_the_audit_of_a_missing_run_answers_404(api: Api) -> None:
    assert_error(api.get(f"/runs/{MISSING_ID}/audit"), 404)


@pytest.mark.parametrize("raw_id", BAD_PATH_IDS)
def test_the_audit_with_a_malformed_run_id_answers_404(api: Api, raw_id: str) -> None:
    assert_error(api.get(f"/runs/{raw_id}/audit"), 404)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_the_audit_answers_405_to_other_methods_and_changes_nothing(api: Api, method: str) -> None:
    run = decided_run(api)

    assert_error(api.request(method, f"/runs/{run['id']}/audit", {"actor": "x"}), 405)

    assert audited(api, run["id"])["valid"]


# -- the input in force, after a resubmit ------------------------------------------------

SCHEMA = {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}
CFO = {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}


def resubmitted_smaller(api: Api) -> dict[str, Any]:
    """A run of 50,000 sent back and resubmitted at 5,000 (its CFO step no
    longer applies): return is seq 1, the resubmit that binds 5,000 seq 2."""
    workflow = api.post(
        "/workflows", {"name": "PO", "steps": ["Manager", CFO], "input_schema": SCHEMA}
    ).json_body
    started = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "PO", "input": {"amount": 50000}}
    ).json_body
    returned = api.post(f"/runs/{started['id']}/return", {"actor": "mo", "comment": "Split it"})
    assert returned.status_code == 200, returned.body
    again = api.post(
        f"/runs/{started['id']}/resubmit", {"actor": "rita", "input": {"amount": 5000}}
    )
    assert again.status_code == 200, again.body
    return dict(again.json_body)


def test_an_input_edited_after_a_resubmit_breaks_the_chain_at_the_resubmit_that_bound_it(
    api: Api, storage: Backend, tmp_path: Path
) -> None:
    run = resubmitted_smaller(api)
    assert audited(api, run["id"])["valid"]

    tamper.edit_input(storage, run["id"], {"amount": 50000})

    answer = audited(api, run["id"])
    assert answer["input"] == {"amount": 50000}
    assert (answer["valid"], answer["first_invalid_seq"]) == (False, 2)
    agree(api, tmp_path, answer)


def test_an_input_edited_without_a_resubmit_breaks_the_chain_at_its_first_entry(
    api: Api, storage: Backend, tmp_path: Path
) -> None:
    workflow = api.post(
        "/workflows", {"name": "PO", "steps": ["Manager", CFO], "input_schema": SCHEMA}
    ).json_body
    run = api.post(
        "/runs", {"workflow_id": workflow["id"], "title": "PO", "input": {"amount": 5000}}
    ).json_body
    api.approve(run["id"], "mo")

    tamper.edit_input(storage, run["id"], {"amount": 50000})

    answer = audited(api, run["id"])
    assert (answer["valid"], answer["first_invalid_seq"]) == (False, 1)
    agree(api, tmp_path, answer)


def test_an_input_of_numbers_and_keys_where_json_dumps_and_rfc_8785_differ_verifies_everywhere(
    api: Api, tmp_path: Path
) -> None:
    data = {"big": 1e16, "small": 1e-7, "whole": 1200.0, "\ue000": 1, "\U0001f600": 2}
    workflow = api.create_workflow(steps=["Manager"])
    started = api.post("/runs", {"workflow_id": workflow["id"], "title": "PO", "input": data})
    assert started.status_code == 201, started.body
    run = api.approve(started.json_body["id"], "maria")

    answer = audited(api, run["id"])

    assert answer["genesis"]["input_digest"] == chain.sha256(chain.canonical(data))
    assert chain.canonical(data) == (
        '{"big":10000000000000000,"small":1e-7,"whole":1200,"\U0001f600":2,"\ue000":1}'
    )
    chain.assert_chained(run)
    assert answer["valid"] and answer["state_valid"]
    agree(api, tmp_path, answer)
    agree(api, tmp_path, {**answer, "input": {**data, "whole": 1201}}, valid=False)
