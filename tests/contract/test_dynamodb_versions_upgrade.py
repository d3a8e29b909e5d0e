"""DynamoDB only: the versions' upgrade (chalicelib/storage/dynamodb/versions_upgrade.py)
of a table written by the release before versions, then served by this one.

dynamodb_before_versions.json is that table, item for item: what main at
3cedfb3 (the merge before versions, 3420af5) wrote in moto through its own API
for: define Purchase (Manager: alice, Finance: bob), append CFO (carol),
define Onboarding without steps, start run 'Laptop' of Purchase and approve
its Manager step as alice; then every item, scanned (B values in base64). Its
workflow items have no version attributes, their steps are under STEP#<order>,
Purchase's event_seq is on its appended step item, and the run waits at
Finance with no workflow_version.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chalice.test import Client

import app as app_module
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import keys, versions_upgrade
from tests.support.api import Api
from tests.support.dynamodb_requests import RequestLog

BEFORE_VERSIONS = Path(__file__).with_name("dynamodb_before_versions.json")
PROJECT_DIR = Path(__file__).resolve().parents[2]
PURCHASE, ONBOARDING, RUN = 1, 2, 1


def stored(value: Any, name: str = "") -> Any:
    """A value of the JSON file as DynamoDB takes it (its B values as bytes)."""
    if name == "B":
        return base64.b64decode(value)
    if isinstance(value, dict):
        return {member: stored(part, member) for member, part in value.items()}
    if isinstance(value, list):
        return [stored(entry) for entry in value]
    return value


@pytest.fixture
def old_table(ddb: dynamodb.DynamoDBStorage) -> dynamodb.DynamoDBStorage:
    """The app's table, holding what the release before versions wrote."""
    for item in json.loads(BEFORE_VERSIONS.read_text(encoding="utf-8")):
        ddb.client.put_item(TableName=ddb.table, Item=stored(item))
    return ddb


@pytest.fixture
def api(old_table: dynamodb.DynamoDBStorage) -> Iterator[Api]:
    with Client(app_module.app) as client:
        yield Api(client)


def table_items(storage: dynamodb.DynamoDBStorage) -> list[dict[str, Any]]:
    found = storage.client.scan(TableName=storage.table, ConsistentRead=True)["Items"]
    return sorted(found, key=lambda item: (item["PK"]["S"], item["SK"]["S"]))


def upgrade(
    storage: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, str, str]:
    """The upgrade's exit status, output and errors, run on the storage's table."""
    capsys.readouterr()
    status = versions_upgrade.main(["--table", storage.table, *flags], client=storage.client)
    out, err = capsys.readouterr()
    return status, out, err


def step_names(workflow: dict[str, Any]) -> list[str]:
    return [step["name"] for step in workflow["steps"]]


def test_an_upgraded_table_serves_its_workflows_and_the_run_in_progress_to_the_end(
    old_table: dynamodb.DynamoDBStorage, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = upgrade(old_table, capsys)

    assert status == 0
    assert "1 'Purchase': wrote its version 1 item and 3 step items; event_seq 1 -> 2" in out
    assert "2 workflows; 2 upgraded, 0 had their version 1 already, 0 could not" in out
    purchase = api.get_workflow(PURCHASE)
    assert (purchase["version"], purchase["retired"]) == (1, False)
    assert step_names(purchase) == ["Manager", "Finance", "CFO"]
    assert api.get(f"/workflows/{PURCHASE}/versions/1").json_body == purchase
    log = RequestLog(old_table)
    run = api.get_run(RUN)
    assert log.counts == {"Query": 1}
    assert (run["workflow_version"], run["current_step"]["name"]) == (1, "Finance")

    # Its next step is read from the version item the upgrade wrote.
    assert api.approve(RUN, "bob")["current_step"]["name"] == "CFO"
    done = api.approve(RUN, "carol")
    assert (done["status"], [a["actor"] for a in done["actions"]]) == (
        "completed",
        ["alice", "bob", "carol"],
    )
    audit = api.get(f"/runs/{RUN}/audit").json_body
    assert (audit["valid"], audit["state_valid"]) == (True, True)

    # Publishing numbers the workflow's next event after the append's.
    response = api.post(f"/workflows/{PURCHASE}/versions", {"steps": ["Legal", "CFO"]})
    assert response.status_code == 201, response.body
    assert response.json_body["version"] == 2
    second = api.start_run(PURCHASE)
    assert (second["workflow_version"], second["current_step"]["name"]) == (2, "Legal")
    assert api.append_step(ONBOARDING, "HR")["step_order"] == 1
    assert step_names(api.get(f"/workflows/{ONBOARDING}/versions/1").json_body) == ["HR"]
    told = [i for i in table_items(old_table) if i["PK"]["S"] == keys.event_pk("workflows/1")]
    assert [(i["SK"]["S"], i["type"]["S"]) for i in told][2:] == [
        (keys.event_sk(3), "approval.workflow.version_published")
    ]


def test_before_the_upgrade_a_decision_refuses_rather_than_skip_the_steps_it_cannot_read(
    api: Api,
) -> None:
    # The run waits at Finance, step 2 of 3; with no stored version its next
    # steps are unknown, and "none" would complete it past CFO.
    refused = api.post(f"/runs/{RUN}/approve", {"actor": "bob"})

    assert refused.status_code == 503, refused.body
    assert "versions_upgrade" in refused.json_body["error"]
    run = api.get_run(RUN)
    assert (run["status"], run["current_step"]["name"]) == ("in_progress", "Finance")


def test_the_second_run_changes_nothing_and_a_dry_run_writes_nothing(
    old_table: dynamodb.DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    before = table_items(old_table)

    status, out, _ = upgrade(old_table, capsys, "--dry-run")

    assert status == 0
    assert "workflow 2 'Onboarding': would write its version 1 item and 0 step items" in out
    assert "2 would upgrade" in out
    assert table_items(old_table) == before

    assert upgrade(old_table, capsys)[0] == 0
    upgraded = table_items(old_table)
    status, out, _ = upgrade(old_table, capsys)

    assert status == 0
    assert out.strip() == (
        "table 'workflows': 2 workflows; 0 upgraded, 2 had their version 1 already, "
        "0 could not be upgraded"
    )
    assert table_items(old_table) == upgraded
    # What it added; the release before's step items stay (the new one reads none).
    added = {(i["PK"]["S"], i["SK"]["S"]) for i in upgraded} - {
        (i["PK"]["S"], i["SK"]["S"]) for i in before
    }
    assert added == {
        ("WF#1", keys.version_sk(1)),
        *(("WF#1", keys.step_sk(order, 1)) for order in (1, 2, 3)),
        ("WF#2", keys.version_sk(1)),
    }


def test_an_append_of_the_release_before_during_the_upgrade_is_in_its_version_1(
    old_table: dynamodb.DynamoDBStorage, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """The release before appends a step (its write: the step item, the
    workflow item's list) between the upgrade's read and its write."""
    append_when_the_upgrade_writes(old_table)
    log = RequestLog(old_table)

    status, out, _ = upgrade(old_table, capsys)

    assert status == 0
    # The append's, the upgrade's that it refused, its retry, Onboarding's.
    assert log.counts["TransactWriteItems"] == 4
    assert "wrote its version 1 item and 4 step items; event_seq 1 -> 3" in out
    first = api.get(f"/workflows/{PURCHASE}/versions/1").json_body
    assert step_names(first) == ["Manager", "Finance", "CFO", "Board"]


def append_when_the_upgrade_writes(storage: dynamodb.DynamoDBStorage) -> None:
    """Before the upgrade's first transaction: the release before's append of
    step 4 to Purchase, as 3cedfb3 wrote it (its step item, carrying the
    workflow's event_seq, and the workflow item's list; its events and step
    counts left out)."""
    step: dict[str, Any] = {"id": {"N": "4"}, "name": {"S": "Board"}, "step_order": {"N": "4"}}
    step |= {"approvers": {"L": [{"S": "user:dan"}]}, "required_approvals": {"N": "1"}}
    old_key = {"PK": {"S": "WF#1"}, "SK": {"S": "STEP#0000000004"}}
    listed: Any = {
        "TableName": storage.table,
        "Key": {"PK": {"S": "WF#1"}, "SK": {"S": keys.WORKFLOW_SK}},
        "UpdateExpression": "SET #steps = list_append(#steps, :step)",
        "ExpressionAttributeNames": {"#steps": "steps"},
        "ExpressionAttributeValues": {":step": {"L": [{"M": step}]}},
    }
    put: Any = {
        "TableName": storage.table,
        "Item": {**old_key, **step, "event_seq": {"N": "3"}},
    }
    event = "before-call.dynamodb.TransactWriteItems"

    def append(**_: Any) -> None:
        storage.client.meta.events.unregister(event, append)
        storage.client.transact_write_items(TransactItems=[{"Put": put}, {"Update": listed}])

    storage.client.meta.events.register(event, append)


def test_a_workflow_published_before_the_upgrade_is_reported_and_the_exit_is_1(
    old_table: dynamodb.DynamoDBStorage, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """The new release served first: a publish on Onboarding left its workflow
    item at version 2, and version 1 nowhere."""
    assert api.post(f"/workflows/{ONBOARDING}/versions", {"steps": ["HR"]}).status_code == 201

    status, out, err = upgrade(old_table, capsys)

    assert status == 1
    assert "workflow 2: NOT upgraded: version 2 was published before the upgrade ran" in err
    assert "2 workflows; 1 upgraded, 0 had their version 1 already, 1 could not" in out


def test_a_missing_table_is_one_line_and_exit_1(
    ddb: dynamodb.DynamoDBStorage,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    capsys.readouterr()
    status = versions_upgrade.main(["--table", "no-such-table"], client=ddb.client)
    out, _ = capsys.readouterr()

    assert status == 1
    assert "the table does not exist there" in caplog.text
    assert "0 workflows" in out and "stopped: DynamoDB failed" in out


def test_without_credentials_the_command_says_so_without_a_traceback() -> None:
    environment = {
        "PATH": "/usr/bin:/bin",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chalicelib.storage.dynamodb.versions_upgrade",
            "--table",
            "workflows",
            "--endpoint-url",
            "http://127.0.0.1:9",
        ],
        cwd=PROJECT_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1, done
    assert "no AWS credentials were found" in done.stderr
    assert "Traceback" not in done.stderr
