"""The deployable bundle: `make package`'s template against `make dynamodb-table`.

The bundle is built once per module by scripts/package.py (what `make package`
runs) on a copy of the project, offline: no AWS credentials or region, and a
requirements.txt without packages, so pip needs no package index (the template
does not depend on the app's third-party requirements, only the zip does).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# One worker builds the bundle once for the whole module (pytest-xdist).
pytestmark = pytest.mark.xdist_group("packaging")

PROJECT_DIR = Path(__file__).resolve().parents[2]
TABLE = "WorkflowTable"
FUNCTION = "APIHandler"

# What the adapter calls (Query, PutItem, UpdateItem, DeleteItem, TransactWriteItems)
# as IAM actions: a transaction's Put and Update are authorised as PutItem and
# UpdateItem, and there is no IAM action named TransactWriteItems.
ADAPTER_ACTIONS = {
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
}
LOG_ACTIONS = {"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}
TABLE_ARN = {"Fn::GetAtt": [TABLE, "Arn"]}
INDEX_ARNS = {"Fn::Sub": f"${{{TABLE}.Arn}}/index/*"}
# Properties only the deployed table has; the rest must equal CreateTable's.
DEPLOY_ONLY = {"PointInTimeRecoverySpecification", "DeletionProtectionEnabled"}


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"scripts_{name}", PROJECT_DIR / "scripts" / f"{name}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def offline_env(home: Path) -> dict[str, str]:
    """The caller's environment without any AWS configuration."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=str(home / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "no-credentials"),
    )
    return env


@pytest.fixture(scope="module")
def sam_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("project")
    skip = shutil.ignore_patterns("__pycache__", "deployments", "venv")
    shutil.copy(PROJECT_DIR / "app.py", project)
    for folder in ("chalicelib", "scripts", ".chalice"):
        shutil.copytree(PROJECT_DIR / folder, project / folder, ignore=skip)
    (project / "requirements.txt").write_text("# no packages: pip stays offline\n")
    subprocess.run(
        [
            sys.executable,
            str(project / "scripts" / "package.py"),
            "--stage",
            "prod",
            "--out",
            str(project / "dist"),
        ],
        check=True,
        cwd=project,
        env=offline_env(project),
        capture_output=True,
    )
    assert (project / "dist" / "deployment.zip").is_file()
    return project / "dist" / "sam.json"


@pytest.fixture(scope="module")
def template(sam_path: Path) -> dict[str, Any]:
    return json.loads(sam_path.read_text())


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto's in-process DynamoDB, reached through boto3's environment."""
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("WORKFLOW_TABLE", "workflows-test")
    with mock_aws():
        yield


def role_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Every IAM statement that applies to the API function's role."""
    resources = template["Resources"]
    role_name = resources[FUNCTION]["Properties"]["Role"]["Fn::GetAtt"][0]
    role = resources[role_name]["Properties"]
    assert "ManagedPolicyArns" not in role
    documents = [policy["PolicyDocument"] for policy in role.get("Policies", [])]
    documents += [
        resource["Properties"]["PolicyDocument"]
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy"
        and {"Ref": role_name} in resource["Properties"].get("Roles", [])
    ]
    return [statement for document in documents for statement in document["Statement"]]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_packaged_table_is_the_table_make_dynamodb_table_creates(
    aws: None, template: dict[str, Any]
) -> None:
    import boto3

    client = boto3.client("dynamodb")
    sent: list[dict[str, Any]] = []
    time_to_live: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.dynamodb.CreateTable", lambda params, **_: sent.append(dict(params))
    )
    client.meta.events.register(
        "provide-client-params.dynamodb.UpdateTimeToLive",
        lambda params, **_: time_to_live.append(dict(params)),
    )
    assert load_script("create_table").main(client) == 0

    (created,) = sent
    created.pop("TableName")
    deployed = dict(template["Resources"][TABLE]["Properties"])
    deploy_only = {key: deployed.pop(key) for key in DEPLOY_ONLY}
    (ttl_update,) = time_to_live
    assert deployed.pop("TimeToLiveSpecification") == ttl_update["TimeToLiveSpecification"]
    assert sorted(deployed) == sorted(created)
    for key, value in created.items():
        assert deployed[key] == value, key
    assert deploy_only == {
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "DeletionProtectionEnabled": True,
    }


def test_packaged_table_is_on_demand_and_outlives_its_stack(template: dict[str, Any]) -> None:
    table = template["Resources"][TABLE]
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert table["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"
    # CloudFormation names the table, so stacks in one account do not collide.
    assert "TableName" not in table["Properties"]


def test_function_is_told_to_use_the_packaged_table(template: dict[str, Any]) -> None:
    functions = [
        name
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    ]
    assert functions == [FUNCTION]
    variables = template["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]
    assert variables["WORKFLOW_STORAGE"] == "dynamodb"
    assert variables["WORKFLOW_TABLE"] == {"Ref": TABLE}


def test_cursor_secret_is_a_hidden_deploy_parameter(template: dict[str, Any]) -> None:
    parameter = template["Parameters"]["CursorSecret"]
    assert parameter["NoEcho"] is True and parameter["MinLength"] >= 32
    variables = template["Resources"]["APIHandler"]["Properties"]["Environment"]["Variables"]
    assert variables["WORKFLOW_CURSOR_SECRET"] == {"Ref": "CursorSecret"}


def test_api_gateways_own_errors_answer_in_the_service_error_shape(
    template: dict[str, Any],
) -> None:
    responses = {
        resource["Properties"]["ResponseType"]: resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::ApiGateway::GatewayResponse"
    }
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX"}
    for properties in responses.values():
        assert properties["RestApiId"] == {"Ref": "RestAPI"}
        assert properties["ResponseTemplates"] == {
            "application/json": '{"error": $context.error.messageString}'
        }


def test_packaged_template_passes_cfn_lint(sam_path: Path) -> None:
    from cfnlint.api import lint_file

    errors = [
        f"{match.rule.id} {match.message} ({match.path})"
        for match in lint_file(sam_path)
        if match.rule.id.startswith("E")
    ]
    assert errors == []


def test_role_may_use_only_the_adapters_actions_on_its_table(template: dict[str, Any]) -> None:
    statements = role_statements(template)
    assert all(
        statement["Effect"] == "Allow" and set(statement) <= {"Sid", "Effect", "Action", "Resource"}
        for statement in statements
    )
    granted: set[str] = set()
    for statement in statements:
        actions = set(as_list(statement["Action"]))
        resources = as_list(statement["Resource"])
        if any(action.startswith("dynamodb:") for action in actions):
            assert actions <= ADAPTER_ACTIONS
            assert all(resource in (TABLE_ARN, INDEX_ARNS) for resource in resources)
            granted |= actions
        else:
            assert actions <= LOG_ACTIONS
            assert "*" not in resources
    assert granted == ADAPTER_ACTIONS


def test_role_policies_name_only_real_iam_actions(template: dict[str, Any]) -> None:
    # cfn-lint skips its action check (W3037) in SAM templates, so check here.
    from cfnlint.data import AdditionalSpecs
    from cfnlint.helpers import load_resource

    known = load_resource(AdditionalSpecs, "Policies.json")
    for statement in role_statements(template):
        for action in as_list(statement["Action"]):
            service, name = action.lower().split(":", 1)
            assert name in known[service]["Actions"], action


def test_indexes_in_table_keys_reach_table_and_policy() -> None:
    package = load_script("package")
    keys = {
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"} for name in ("PK", "SK", "GSI1PK")
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "GSI1",
                "KeySchema": [{"AttributeName": "GSI1PK", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    }
    merged = package.merge_template(keys)["Resources"]
    assert merged[TABLE]["Properties"]["GlobalSecondaryIndexes"] == keys["GlobalSecondaryIndexes"]
    statements = merged["WorkflowTableAccess"]["Properties"]["PolicyDocument"]["Statement"]
    assert {
        "Effect": "Allow",
        "Sid": "WorkflowTableIndexes",
        "Action": ["dynamodb:Query"],
        "Resource": [INDEX_ARNS],
    } in statements


def test_table_keys_cloudformation_spells_otherwise_are_refused() -> None:
    package = load_script("package")
    with pytest.raises(ValueError, match="StreamSpecification"):
        package.merge_template(
            {"BillingMode": "PAY_PER_REQUEST", "StreamSpecification": {"StreamEnabled": True}}
        )


def test_create_table_is_idempotent(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    import boto3

    create_table = load_script("create_table")
    assert create_table.main() == 0
    assert create_table.main() == 0

    out = capsys.readouterr().out.splitlines()
    assert "'workflows-test' created" in out[0]
    assert "'workflows-test' already exists" in out[1]
    assert boto3.client("dynamodb").list_tables()["TableNames"] == ["workflows-test"]


def test_create_table_turns_time_to_live_on_once_also_on_an_older_table(aws: None) -> None:
    import boto3

    from chalicelib.storage import dynamodb_schema

    client = boto3.client("dynamodb")
    # A table made before idempotency keys: the same keys, no Time to Live.
    client.create_table(TableName="workflows-test", **dynamodb_schema.TABLE_KEYS)
    updates: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.dynamodb.UpdateTimeToLive",
        lambda params, **_: updates.append(dict(params)),
    )

    assert load_script("create_table").main(client) == 0
    assert load_script("create_table").main(client) == 0

    assert len(updates) == 1
    ttl = client.describe_time_to_live(TableName="workflows-test")["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == (
        "ENABLED",
        dynamodb_schema.TTL_ATTRIBUTE,
    )


def test_no_request_outlives_an_idempotency_keys_lease(template: dict[str, Any]) -> None:
    # API Gateway stops waiting after 29 s, but the function runs on to its own
    # timeout: past the lease, a retry would take the key over and run again.
    from chalicelib import idempotency

    timeout = template["Resources"][FUNCTION]["Properties"]["Timeout"]
    assert timeout < idempotency.LEASE_SECONDS
