"""Package the app for CloudFormation: `chalice package` plus the DynamoDB table.

    python scripts/package.py [--stage prod] [--out dist]

writes OUT/sam.json and OUT/deployment.zip. The merge template given to
`chalice package --merge-template` is generated from `dynamodb_schema.TABLE_KEYS` and
`dynamodb_schema.TTL_ATTRIBUTE`, the definition `make dynamodb-table` creates, so keys,
indexes and Time to Live cannot drift. It
adds the table, passes its name to the function, and grants the function's role
the adapter's DynamoDB actions on that table (and its indexes) only.

Runs offline: no AWS credentials are needed, a placeholder region is set when
none is configured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from chalicelib.storage import dynamodb_schema  # noqa: E402

# Logical ids in the template. Chalice names the API function `APIHandler` and,
# with `autogen_policy: false`, its role `ApiHandlerRole` (function name + _role).
TABLE = "WorkflowTable"
FUNCTION = "APIHandler"
ROLE = "ApiHandlerRole"
REST_API = "RestAPI"
CURSOR_SECRET = "CursorSecret"
TABLE_POLICY = "WorkflowTableAccess"

# The DynamoDB calls the adapter makes at run time, as IAM actions. There is no
# IAM action for TransactWriteItems: DynamoDB authorises each Put/Update inside
# a transaction as PutItem/UpdateItem (and a ConditionCheck as
# dynamodb:ConditionCheckItem, which the adapter does not use). DeleteItem
# releases an Idempotency-Key after a failed request.
TABLE_ACTIONS = ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
# On an index only reads are possible, and the adapter's only read is Query.
INDEX_ACTIONS = ("dynamodb:Query",)

# CreateTable parameters that AWS::DynamoDB::Table takes unchanged. Anything
# else in TABLE_KEYS (StreamSpecification, SSESpecification, ...) is spelled
# differently in CloudFormation: fail rather than emit a wrong template.
SAME_IN_CLOUDFORMATION = (
    "KeySchema",
    "AttributeDefinitions",
    "BillingMode",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "TableClass",
)

PLACEHOLDER_REGION = "us-east-1"


def has_indexes(table_keys: dict[str, Any]) -> bool:
    return bool(table_keys.get("GlobalSecondaryIndexes") or table_keys.get("LocalSecondaryIndexes"))


def table_properties(table_keys: dict[str, Any]) -> dict[str, Any]:
    """AWS::DynamoDB::Table properties for the CreateTable parameters `table_keys`,
    with the Time to Live that `make dynamodb-table` turns on."""
    unknown = sorted(set(table_keys) - set(SAME_IN_CLOUDFORMATION))
    if unknown:
        raise ValueError(
            f"scripts/package.py cannot translate {', '.join(unknown)} "
            "from TABLE_KEYS into CloudFormation yet"
        )
    if table_keys.get("BillingMode") != "PAY_PER_REQUEST":
        raise ValueError(
            "The deployed table is on-demand: TABLE_KEYS must say BillingMode PAY_PER_REQUEST"
        )
    return {
        **json.loads(json.dumps(table_keys)),  # a deep copy
        # UpdateTimeToLive's TimeToLiveSpecification is CloudFormation's too.
        "TimeToLiveSpecification": dynamodb_schema.time_to_live_specification(),
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "DeletionProtectionEnabled": True,
    }


def table_policy(table_keys: dict[str, Any]) -> dict[str, Any]:
    """The policy document that lets the function use the table, and nothing else."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "WorkflowTable",
            "Effect": "Allow",
            "Action": list(TABLE_ACTIONS),
            "Resource": [{"Fn::GetAtt": [TABLE, "Arn"]}],
        }
    ]
    if has_indexes(table_keys):
        statements.append(
            {
                "Sid": "WorkflowTableIndexes",
                "Effect": "Allow",
                "Action": list(INDEX_ACTIONS),
                "Resource": [{"Fn::Sub": f"${{{TABLE}.Arn}}/index/*"}],
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def merge_template(table_keys: dict[str, Any]) -> dict[str, Any]:
    """What `chalice package --merge-template` deep-merges into its SAM template."""
    return {
        "Resources": {
            TABLE: {
                "Type": "AWS::DynamoDB::Table",
                # The data outlives the stack: deleting or replacing the stack
                # leaves the table, and the table refuses DeleteTable.
                "DeletionPolicy": "Retain",
                "UpdateReplacePolicy": "Retain",
                "Properties": table_properties(table_keys),
            },
            # A policy of its own rather than in the role's inline policy, which
            # chalice writes from the stage's iam_policy_file verbatim.
            TABLE_POLICY: {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyName": TABLE_POLICY,
                    "Roles": [{"Ref": ROLE}],
                    "PolicyDocument": table_policy(table_keys),
                },
            },
            FUNCTION: {
                # The function must not run before it may use its table.
                "DependsOn": [TABLE_POLICY],
                "Properties": {
                    "Environment": {
                        "Variables": {
                            "WORKFLOW_STORAGE": "dynamodb",
                            "WORKFLOW_TABLE": {"Ref": TABLE},
                            "WORKFLOW_CURSOR_SECRET": {"Ref": CURSOR_SECRET},
                        }
                    }
                },
            },
            **gateway_errors(),
        },
        "Parameters": {
            CURSOR_SECRET: {
                "Type": "String",
                "NoEcho": True,
                "MinLength": 32,
                "Description": "Signs list cursors: a long random secret, kept across deploys",
            }
        },
        "Outputs": {"WorkflowTableName": {"Value": {"Ref": TABLE}}},
    }


def gateway_errors() -> dict[str, Any]:
    """API Gateway's own answers (unknown route, throttling, timeouts) in the
    service's error shape, {"error": "..."}, instead of {"message": "..."}."""
    return {
        f"GatewayResponse{kind}": {
            "Type": "AWS::ApiGateway::GatewayResponse",
            "Properties": {
                "RestApiId": {"Ref": REST_API},
                "ResponseType": f"DEFAULT_{kind}",
                # messageString is already a quoted JSON string.
                "ResponseTemplates": {
                    "application/json": '{"error": $context.error.messageString}'
                },
            },
        }
        for kind in ("4XX", "5XX")
    }


def check_packaged(template: dict[str, Any]) -> None:
    """Fail if chalice named things otherwise than the merge template assumes."""
    resources = template["Resources"]
    functions = sorted(
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
    )
    if functions != [FUNCTION]:
        raise RuntimeError(
            f"Expected one function {FUNCTION!r}, chalice made {functions}: "
            "give each the table's environment and policy in scripts/package.py"
        )
    if resources.get(REST_API, {}).get("Type") != "AWS::Serverless::Api":
        raise RuntimeError(f"Expected the REST API {REST_API!r}: the gateway responses need it")
    role = resources[FUNCTION]["Properties"].get("Role")
    if role != {"Fn::GetAtt": [ROLE, "Arn"]}:
        raise RuntimeError(
            f"{FUNCTION} does not use the role {ROLE!r} (it has {role}); "
            "is autogen_policy false for this stage?"
        )


def package(out_dir: Path, stage: str) -> Path:
    """Run `chalice package` with the generated merge template; the SAM template's path."""
    import botocore.session

    env = dict(os.environ)
    # Chalice wants a region (it picks the partition's service principals by
    # it) but calls no AWS API here; the configured one wins if there is one.
    if botocore.session.Session().get_config_variable("region") is None:
        env["AWS_DEFAULT_REGION"] = env.get("AWS_REGION") or PLACEHOLDER_REGION
    with tempfile.TemporaryDirectory() as tmp:
        merge_file = Path(tmp) / "merge-template.json"
        merge_file.write_text(json.dumps(merge_template(dynamodb_schema.TABLE_KEYS), indent=2))
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from chalice.cli import main; sys.exit(main())",
                "--project-dir",
                str(PROJECT_DIR),
                "package",
                "--stage",
                stage,
                "--merge-template",
                str(merge_file),
                str(out_dir),
            ],
            check=True,
            env=env,
        )
    sam = out_dir / "sam.json"
    check_packaged(json.loads(sam.read_text()))
    return sam


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="prod")
    parser.add_argument("--out", type=Path, default=PROJECT_DIR / "dist")
    args = parser.parse_args(argv)
    try:
        sam = package(args.out.resolve(), args.stage)
    except subprocess.CalledProcessError as exc:
        return exc.returncode  # chalice has said why
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"Wrote {sam} and {sam.with_name('deployment.zip')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
