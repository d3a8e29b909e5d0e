"""The deployable bundle: `make package`'s template against `make dynamodb-table`,
and what an operator asks of a deployment (docs/deploy.md).

The bundle is built once per module by scripts/package.py (what `make package`
runs) on a copy of the project, offline: no AWS credentials or region, and a
requirements.txt without packages, so pip needs no package index (the template
does not depend on the app's third-party requirements, only the zip does).
It is then expanded once by scripts/expand_template.py (SAM's own translator,
as CloudFormation runs it on deploy), and each deployment property is checked
on the SAM template and on the CloudFormation that really deploys.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.task_root import cold_import

# One worker builds the bundle once for the whole module (pytest-xdist).
pytestmark = pytest.mark.xdist_group("packaging")

PROJECT_DIR = Path(__file__).resolve().parents[2]
TABLE = "WorkflowTable"
FUNCTION = "APIHandler"
RELAY = "OnDynamodbRecord"
SENDER = "DeliverWebhooks"
SWEEPER = "SweepDeadlines"
NOTIFIER = "NotifyPeople"
REST_API = "RestAPI"
HTTP_API = "HttpAPI"
FUNCTION_LOG_GROUP = "FunctionLogGroup"
ACCESS_LOG_GROUP = "ApiAccessLogGroup"
ERROR_TEMPLATE = {"application/json": '{"error": $context.error.messageString}'}

# What the adapter calls (Query, BatchGetItem, PutItem, UpdateItem, DeleteItem,
# TransactWriteItems) as IAM actions: a transaction's Put, Update, Delete and
# ConditionCheck are authorised as PutItem, UpdateItem, DeleteItem and
# ConditionCheckItem, and there is no IAM action named TransactWriteItems.
ADAPTER_ACTIONS = {
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
}
TABLE_ARN = {"Fn::GetAtt": [TABLE, "Arn"]}
INDEX_ARNS = {"Fn::Sub": f"${{{TABLE}.Arn}}/index/*"}
# Every other grant: its actions, and the only resources they may name. The
# log group exists before the function, so the role needs no CreateLogGroup;
# X-Ray has no resource-level permissions, so "*" is allowed there only.
SECRET_ARN = {
    "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
    ":parameter${CursorSecretParameter}"
}
GRANTS: dict[str, tuple[set[str], list[Any]]] = {
    "logs": (
        {"logs:CreateLogStream", "logs:PutLogEvents"},
        [{"Fn::GetAtt": [FUNCTION_LOG_GROUP, "Arn"]}],
    ),
    "ssm": ({"ssm:GetParameter"}, [SECRET_ARN]),
    "kms": ({"kms:Decrypt"}, [{"Ref": "CursorSecretKmsKeyArn"}]),
    "xray": ({"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, ["*"]),
}
# Sign-in's client secret, where the stack names one (OidcClientSecretParameter).
OIDC_SECRET_ARN = {
    "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
    ":parameter${OidcClientSecretParameter}"
}
# Slack's signing secret (the API function) and bot token (the notifier), where named.
SLACK_SECRET_ARN, SLACK_TOKEN_ARN = (
    {
        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
        f":parameter${{{parameter}}}"
    }
    for parameter in ("SlackSigningSecretParameter", "SlackTokenParameter")
)
ALSO_GRANTED = {
    "ssm": [({"ssm:GetParameter"}, [OIDC_SECRET_ARN]), ({"ssm:GetParameter"}, [SLACK_SECRET_ARN])]
}
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


def copy_of_the_project(project: Path) -> Path:
    """The files `make package` reads, with a requirements.txt that keeps pip offline."""
    skip = shutil.ignore_patterns("__pycache__", "deployments", "venv")
    shutil.copy(PROJECT_DIR / "app.py", project)
    for folder in ("chalicelib", "scripts", ".chalice", "deploy"):
        shutil.copytree(PROJECT_DIR / folder, project / folder, ignore=skip)
    (project / "requirements.txt").write_text("# no packages: pip stays offline\n")
    return project


def run_package(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(project / "scripts" / "package.py"),
            "--stage",
            "prod",
            "--out",
            str(project / "dist"),
            *extra,
        ],
        cwd=project,
        env=offline_env(project),
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def sam_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_of_the_project(tmp_path_factory.mktemp("project"))
    packaged = run_package(project)
    assert packaged.returncode == 0, packaged.stderr
    assert (project / "dist" / "deployment.zip").is_file()
    return project / "dist" / "sam.json"


@pytest.fixture(scope="module")
def template(sam_path: Path) -> dict[str, Any]:
    return json.loads(sam_path.read_text())


@pytest.fixture(scope="module")
def expanded(template: dict[str, Any]) -> dict[str, Any]:
    """The CloudFormation that SAM's transform makes of the template on deploy."""
    return load_script("expand_template").expand(template)


@pytest.fixture(scope="module")
def expanded_path(expanded: dict[str, Any], sam_path: Path) -> Path:
    path = sam_path.with_name("cloudformation.json")
    path.write_text(json.dumps(expanded, indent=2))
    return path


@pytest.fixture(scope="module")
def rest_expanded_path(template: dict[str, Any], sam_path: Path) -> Path:
    """The CloudFormation of a stack given ApiType=rest (as `make scan` writes it)."""
    script = load_script("expand_template")
    rest = script.expand(script.with_defaults(template, ["ApiType=rest"]))
    path = sam_path.with_name("cloudformation-rest.json")
    path.write_text(json.dumps(rest, indent=2))
    return path


@pytest.fixture(params=["sam", "expanded"])
def each(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The SAM template, then the CloudFormation it expands to."""
    return request.getfixturevalue({"sam": "template", "expanded": "expanded"}[request.param])


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
    """Every IAM statement that may apply to the API function's role: with every
    condition true, so the most the role can ever be granted."""
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
    return [
        statement
        for document in documents
        for entry in document["Statement"]
        for statement in if_true(entry)
    ]


def if_true(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A statement, or the one an Fn::If gives when its condition holds."""
    if "Fn::If" not in entry:
        return [entry]
    _, statement, otherwise = entry["Fn::If"]
    assert otherwise == {"Ref": "AWS::NoValue"}
    return [statement]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def function_properties(template: dict[str, Any]) -> dict[str, Any]:
    return template["Resources"][FUNCTION]["Properties"]


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == kind
    }


def stage_settings(template: dict[str, Any]) -> dict[str, Any]:
    """The API stage's settings: on the API in SAM, on its one Stage once expanded."""
    api = template["Resources"][REST_API]
    if api["Type"] == "AWS::Serverless::Api":
        return api["Properties"]
    (stage,) = of_type(template, "AWS::ApiGateway::Stage").values()
    return stage["Properties"]


def parameter(template: dict[str, Any], name: str) -> dict[str, Any]:
    return template["Parameters"][name]


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
    # The stream as well: `make dynamodb-table` leaves it out (nothing reads it
    # where that table is used), scripts/create_table.py --stream adds it.
    assert load_script("create_table").main(client, stream=True) == 0

    (created,) = sent
    created.pop("TableName")
    deployed = dict(template["Resources"][TABLE]["Properties"])
    deploy_only = {key: deployed.pop(key) for key in DEPLOY_ONLY}
    (ttl_update,) = time_to_live
    assert deployed.pop("TimeToLiveSpecification") == ttl_update["TimeToLiveSpecification"]
    # The stream CreateTable turns on is CloudFormation's, spelt without StreamEnabled.
    assert created["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    assert deployed["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    deployed["StreamSpecification"] = created["StreamSpecification"]
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
    assert sorted(functions) == sorted([FUNCTION, RELAY, SENDER, SWEEPER, NOTIFIER])
    for function in (FUNCTION, SENDER, NOTIFIER):
        variables = template["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert variables["WORKFLOW_STORAGE"] == "dynamodb"
        assert variables["WORKFLOW_TABLE"] == {"Ref": TABLE}
        assert variables["WORKFLOW_STAGE"] == "prod"


def test_cursor_secret_reaches_the_function_by_reference_only(each: dict[str, Any]) -> None:
    variables = function_properties(each)["Environment"]["Variables"]
    assert variables["WORKFLOW_CURSOR_SECRET_PARAMETER"] == {"Ref": "CursorSecretParameter"}
    assert "WORKFLOW_CURSOR_SECRET" not in variables
    # No secret passes through the template: nothing to hide, nothing to leak.
    assert not any(value.get("NoEcho") for value in each["Parameters"].values())
    name = parameter(each, "CursorSecretParameter")
    assert name["Type"] == "String" and name["Default"] == "/approval-workflows/cursor-secret"
    # Path-style names only: SECRET_ARN (":parameter" + name) is then the ARN.
    pattern = re.compile(name["AllowedPattern"])
    assert pattern.fullmatch(name["Default"])
    assert not pattern.fullmatch("cursor-secret")  # its ARN is ...:parameter/cursor-secret


def test_role_may_read_only_the_cursor_secrets_parameter(each: dict[str, Any]) -> None:
    policy = each["Resources"]["CursorSecretAccess"]["Properties"]
    assert policy["Roles"] == [{"Ref": "ApiHandlerRole"}]
    read, decrypt = policy["PolicyDocument"]["Statement"]
    assert read == {
        "Sid": "CursorSecretParameter",
        "Effect": "Allow",
        "Action": ["ssm:GetParameter"],
        "Resource": [SECRET_ARN],
    }
    # kms:Decrypt only for a customer-managed key, only that key, only via SSM.
    condition, statement, _ = decrypt["Fn::If"]
    assert each["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "CursorSecretKmsKeyArn"}, ""]}]
    }
    assert parameter(each, "CursorSecretKmsKeyArn")["Default"] == ""
    assert statement["Action"] == ["kms:Decrypt"]
    assert statement["Resource"] == [{"Ref": "CursorSecretKmsKeyArn"}]
    assert statement["Condition"] == {
        "StringEquals": {"kms:ViaService": {"Fn::Sub": "ssm.${AWS::Region}.${AWS::URLSuffix}"}}
    }


def test_api_gateways_own_errors_answer_in_the_service_error_shape(
    template: dict[str, Any], expanded: dict[str, Any]
) -> None:
    # A property of the API, not resources beside it that a redeployment can drop.
    no_route = {"application/json": '{"error": "No route matches this path"}'}
    # The allowed origin too, so a browser page can read the error.
    cors = {"Headers": {"Access-Control-Allow-Origin": {"Fn::Sub": "'${CorsOrigin}'"}}}
    assert template["Resources"][REST_API]["Properties"]["GatewayResponses"] == {
        "DEFAULT_4XX": {"ResponseParameters": cors, "ResponseTemplates": ERROR_TEMPLATE},
        "DEFAULT_5XX": {"ResponseParameters": cors, "ResponseTemplates": ERROR_TEMPLATE},
        # An unknown route is 404, as make run answers it.
        "MISSING_AUTHENTICATION_TOKEN": {
            "StatusCode": "404",
            "ResponseParameters": cors,
            "ResponseTemplates": no_route,
        },
    }
    for each in (template, expanded):
        assert of_type(each, "AWS::ApiGateway::GatewayResponse") == {}
    # Expanded, they are in the API's definition, which every deployment of it
    # carries (the deployment's logical id is a hash of that definition).
    body = expanded["Resources"][REST_API]["Properties"]["Body"]
    responses = body["x-amazon-apigateway-gateway-responses"]
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX", "MISSING_AUTHENTICATION_TOKEN"}
    for kind in ("DEFAULT_4XX", "DEFAULT_5XX"):
        assert responses[kind]["responseTemplates"] == ERROR_TEMPLATE
    for response in responses.values():
        assert response["responseParameters"] == {
            "gatewayresponse.header.Access-Control-Allow-Origin": {"Fn::Sub": "'${CorsOrigin}'"}
        }
    assert responses["MISSING_AUTHENTICATION_TOKEN"]["statusCode"] == "404"
    assert json.loads(
        responses["MISSING_AUTHENTICATION_TOKEN"]["responseTemplates"]["application/json"]
    ) == {"error": "No route matches this path"}
    (deployment,) = of_type(expanded, "AWS::ApiGateway::Deployment").values()
    assert deployment["Properties"]["RestApiId"] == {"Ref": REST_API}


def definition(template: dict[str, Any]) -> dict[str, Any]:
    """The REST API's Swagger definition, in SAM and once expanded."""
    properties = template["Resources"][REST_API]["Properties"]
    body: dict[str, Any] = properties.get("DefinitionBody") or properties["Body"]
    return body


def test_browsers_preflights_allow_the_stack_s_origin(each: dict[str, Any]) -> None:
    """API Gateway answers OPTIONS itself: with the origin chalice saw while
    packaging ("null" in jwt mode) a page on CorsOrigin could send no request
    with a token. The deploy rehearsal found it."""
    preflights = [
        methods["options"]["x-amazon-apigateway-integration"]
        for methods in definition(each)["paths"].values()
        if "options" in methods
    ]
    assert len(preflights) == len(definition(each)["paths"])
    for integration in preflights:
        assert integration["type"] == "mock"
        parameters = integration["responses"]["default"]["responseParameters"]
        assert parameters["method.response.header.Access-Control-Allow-Origin"] == {
            "Fn::Sub": "'${CorsOrigin}'"
        }


def test_a_method_a_path_lacks_reaches_the_function_for_its_405(each: dict[str, Any]) -> None:
    """API Gateway would answer it as a missing route (404); the OpenAPI document
    promises 405 with an Allow header, which the function answers, as make run
    does. The deploy rehearsal found it."""
    for path, methods in definition(each)["paths"].items():
        proxied = [
            m["x-amazon-apigateway-integration"]
            for name, m in methods.items()
            if name != "options" and m["x-amazon-apigateway-integration"]["type"] == "aws_proxy"
        ]
        other = methods["x-amazon-apigateway-any-method"]["x-amazon-apigateway-integration"]
        assert other["type"] == "aws_proxy", path
        assert all(other["uri"] == integration["uri"] for integration in proxied), path


@pytest.mark.parametrize("which", ["sam_path", "expanded_path", "rest_expanded_path"])
def test_both_templates_pass_cfn_lint_without_a_warning(
    request: pytest.FixtureRequest, which: str
) -> None:
    from cfnlint.api import lint_file

    findings = [
        f"{match.rule.id} {match.message} ({match.path})"
        for match in lint_file(request.getfixturevalue(which))
        if match.rule.id[0] in "EW"
    ]
    assert findings == []


def test_the_api_has_exactly_one_stage(template: dict[str, Any], expanded: dict[str, Any]) -> None:
    api = template["Resources"][REST_API]["Properties"]
    # Without OpenApiVersion SAM adds a stage named "Stage" beside ours.
    assert api["OpenApiVersion"] == api["DefinitionBody"]["swagger"] == "2.0"
    (stage,) = of_type(expanded, "AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["StageName"] == api["StageName"] == "api"
    # A deployment with a StageName would make a stage of its own.
    for deployment in of_type(expanded, "AWS::ApiGateway::Deployment").values():
        assert "StageName" not in deployment["Properties"]
        assert "StageDescription" not in deployment["Properties"]


def test_package_refuses_a_definition_of_another_openapi_version(
    template: dict[str, Any],
) -> None:
    package = load_script("package")
    changed = json.loads(json.dumps(template))
    body = changed["Resources"][REST_API]["Properties"]["DefinitionBody"]
    body["openapi"] = "3.0.1"
    del body["swagger"]
    with pytest.raises(RuntimeError, match="OpenApiVersion"):
        package.check_packaged(changed)


def test_stage_is_throttled_by_parameters(each: dict[str, Any]) -> None:
    assert stage_settings(each)["MethodSettings"] == [
        {
            "ResourcePath": "/*",
            "HttpMethod": "*",
            "ThrottlingRateLimit": {"Ref": "ApiThrottlingRateLimit"},
            "ThrottlingBurstLimit": {"Ref": "ApiThrottlingBurstLimit"},
        }
    ]
    rate = parameter(each, "ApiThrottlingRateLimit")
    burst = parameter(each, "ApiThrottlingBurstLimit")
    assert rate["Type"] == burst["Type"] == "Number"
    assert (rate["Default"], burst["Default"]) == (50, 100)
    assert rate["MinValue"] == burst["MinValue"] == 1


def test_function_concurrency_is_reserved_by_parameter(each: dict[str, Any]) -> None:
    reserved = function_properties(each)["ReservedConcurrentExecutions"]
    condition, value, otherwise = reserved["Fn::If"]
    assert (value, otherwise) == ({"Ref": "FunctionReservedConcurrency"}, {"Ref": "AWS::NoValue"})
    # -1 reserves nothing (an account with a small concurrency quota); 0 stops the function.
    assert each["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "FunctionReservedConcurrency"}, "-1"]}]
    }
    concurrency = parameter(each, "FunctionReservedConcurrency")
    assert (concurrency["Type"], concurrency["Default"], concurrency["MinValue"]) == (
        "Number",
        20,
        -1,
    )


def test_access_log_is_json_in_a_declared_log_group(each: dict[str, Any]) -> None:
    setting = stage_settings(each)["AccessLogSetting"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": [ACCESS_LOG_GROUP, "Arn"]}
    fields = json.loads(setting["Format"])
    assert {
        "requestId": "$context.requestId",
        "sourceIp": "$context.identity.sourceIp",
        "caller": "$context.identity.caller",
        "user": "$context.identity.user",
        "httpMethod": "$context.httpMethod",
        "resourcePath": "$context.resourcePath",
        "status": "$context.status",
        "responseLatency": "$context.responseLatency",
    }.items() <= fields.items()
    assert all(value.startswith("$context.") for value in fields.values())


def test_log_groups_are_declared_with_the_retention_parameter(each: dict[str, Any]) -> None:
    groups = of_type(each, "AWS::Logs::LogGroup")
    assert set(groups) == {ACCESS_LOG_GROUP, FUNCTION_LOG_GROUP}
    for group in groups.values():
        assert group["Properties"] == {"RetentionInDays": {"Ref": "LogRetentionInDays"}}
        assert group["DeletionPolicy"] == group["UpdateReplacePolicy"] == "Retain"
    # The function logs to the declared group, not to one Lambda would create.
    assert function_properties(each)["LoggingConfig"] == {"LogGroup": {"Ref": FUNCTION_LOG_GROUP}}
    retention = parameter(each, "LogRetentionInDays")
    assert retention["Default"] == 365 and 365 in retention["AllowedValues"]


def test_tracing_is_a_parameter_on_stage_and_function(each: dict[str, Any], sam_path: Path) -> None:
    assert parameter(each, "TracingEnabled")["Default"] == "true"
    assert each["Conditions"]["TracingOn"] == {"Fn::Equals": [{"Ref": "TracingEnabled"}, "true"]}
    assert stage_settings(each)["TracingEnabled"] == {"Ref": "TracingEnabled"}
    mode = {"Fn::If": ["TracingOn", "Active", "PassThrough"]}
    properties = function_properties(each)
    assert properties.get("Tracing", properties.get("TracingConfig", {}).get("Mode")) == mode
    # The X-Ray grant exists only while tracing is on.
    tracing = [
        resource
        for resource in of_type(each, "AWS::IAM::Policy").values()
        if "xray:" in json.dumps(resource["Properties"]["PolicyDocument"])
    ]
    assert [resource["Condition"] for resource in tracing] == ["TracingOn"]
    # Lambda traces the invocation; no X-Ray SDK is bundled to patch boto3.
    names = zipfile.ZipFile(sam_path.with_name("deployment.zip")).namelist()
    assert not any("xray" in name.lower() for name in names)


def test_the_bundle_ships_every_module_compiled(sam_path: Path, tmp_path: Path) -> None:
    """Lambda's task root is read-only: what is not compiled in the bundle is
    compiled on every cold start (tests/packaging/test_bytecode.py)."""
    with zipfile.ZipFile(sam_path.with_name("deployment.zip")) as bundle:
        names = bundle.namelist()
        bundle.extractall(tmp_path)
    sources = [name for name in names if name.endswith(".py")]
    assert sorted(name for name in names if "__pycache__/" in name) == sorted(
        importlib.util.cache_from_source(name) for name in sources
    )
    # Every module of the service and of chalice, as any request would import it.
    modules = [name[: -len(".py")].replace("/", ".").removesuffix(".__init__") for name in sources]
    ours = [name for name in modules if name.split(".")[0] in ("app", "chalice", "chalicelib")]
    assert {"app", "chalice.app", "chalicelib.http_api", "chalicelib.engine"} <= set(ours)
    compiled = cold_import(tmp_path, *ours)["compiled"]
    assert [path for path in compiled if path.startswith(str(tmp_path))] == []


def test_the_function_carries_the_approvers_page(sam_path: Path) -> None:
    bundle = zipfile.ZipFile(sam_path.with_name("deployment.zip"))
    files = sorted((PROJECT_DIR / "chalicelib" / "ui").iterdir())
    assert {"index.html", "app.js", "app.css"} <= {path.name for path in files}
    for path in files:
        packaged = bundle.read(f"chalicelib/ui/{path.name}")
        assert packaged == path.read_bytes(), path.name


def test_role_may_do_only_what_the_function_does(each: dict[str, Any]) -> None:
    statements = role_statements(each)
    for statement in statements:
        # Only the kms:Decrypt grant is narrowed by a condition (kms:ViaService).
        allowed_keys = {"Sid", "Effect", "Action", "Resource"} | (
            {"Condition"} if statement["Action"] == ["kms:Decrypt"] else set()
        )
        assert statement["Effect"] == "Allow" and set(statement) <= allowed_keys, statement
    granted: set[str] = set()
    for statement in statements:
        actions = set(as_list(statement["Action"]))
        resources = as_list(statement["Resource"])
        services = {action.split(":")[0] for action in actions}
        assert len(services) == 1, actions
        (service,) = services
        if service == "dynamodb":
            assert actions <= ADAPTER_ACTIONS
            assert all(resource in (TABLE_ARN, INDEX_ARNS) for resource in resources)
        else:
            assert (actions, resources) in [GRANTS[service], *ALSO_GRANTED.get(service, [])]
        granted |= actions
    assert granted == ADAPTER_ACTIONS.union(*(actions for actions, _ in GRANTS.values()))


def test_role_policies_name_only_real_iam_actions(each: dict[str, Any]) -> None:
    # cfn-lint skips its action check (W3037) in SAM templates, so check here.
    from cfnlint.data import AdditionalSpecs
    from cfnlint.helpers import load_resource

    known = load_resource(AdditionalSpecs, "Policies.json")
    for statement in role_statements(each):
        for action in as_list(statement["Action"]):
            service, name = action.lower().split(":", 1)
            assert name in known[service]["Actions"], action


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

    from chalicelib.storage.dynamodb import schema as dynamodb_schema

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
    from chalicelib.domain import idempotency

    timeout = template["Resources"][FUNCTION]["Properties"]["Timeout"]
    assert timeout < idempotency.LEASE_SECONDS


# -- verified callers ---------------------------------------------------------------


def test_the_prod_function_verifies_callers_against_the_issuers_keys(
    template: dict[str, Any],
) -> None:
    variables = template["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]
    parameters = template["Parameters"]

    assert variables["WORKFLOW_AUTH"] == "jwt"
    assert variables["WORKFLOW_JWT_ISSUER"] == {"Ref": "JwtIssuer"}
    assert variables["WORKFLOW_JWT_AUDIENCE"] == {"Ref": "JwtAudience"}
    assert variables["WORKFLOW_JWKS_URL"] == {"Ref": "JwksUrl"}
    assert "WORKFLOW_JWT_SECRET" not in variables
    assert "Default" not in parameters["JwtIssuer"] and "Default" not in parameters["JwksUrl"]
    assert parameters["JwksUrl"]["AllowedPattern"].startswith("^https://")


def test_the_prod_function_signs_in_through_the_stacks_provider_if_named(
    template: dict[str, Any],
) -> None:
    variables = template["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]
    parameters = template["Parameters"]
    access = template["Resources"]["OidcClientSecretAccess"]

    assert variables["WORKFLOW_OIDC_ISSUER"] == {"Ref": "OidcIssuer"}
    assert variables["WORKFLOW_OIDC_CLIENT_ID"] == {"Ref": "OidcClientId"}
    assert variables["WORKFLOW_OIDC_CLIENT_SECRET_PARAMETER"] == {
        "Ref": "OidcClientSecretParameter"
    }
    assert "WORKFLOW_OIDC_CLIENT_SECRET" not in variables  # by reference only
    assert parameters["OidcIssuer"]["Default"] == ""  # no sign-in unless named
    assert re.fullmatch(parameters["OidcIssuer"]["AllowedPattern"], "https://login.example.com")
    assert not re.fullmatch(parameters["OidcIssuer"]["AllowedPattern"], "http://login.example")
    assert access["Condition"] == "OidcClientSecretGiven"
    assert template["Conditions"]["OidcClientSecretGiven"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "OidcClientSecretParameter"}, ""]}]
    }
    (statement,) = access["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == [OIDC_SECRET_ARN]


def test_slack_s_secrets_go_by_reference_each_to_the_one_function_that_reads_it(
    template: dict[str, Any],
) -> None:
    resources, parameters = template["Resources"], template["Parameters"]
    api = resources[FUNCTION]["Properties"]["Environment"]["Variables"]
    notifier = resources[NOTIFIER]["Properties"]["Environment"]["Variables"]
    assert api["WORKFLOW_SLACK_SIGNING_SECRET_PARAMETER"] == {"Ref": "SlackSigningSecretParameter"}
    assert notifier["WORKFLOW_SLACK_TOKEN_PARAMETER"] == {"Ref": "SlackTokenParameter"}
    # By reference only, and neither function names the other's.
    assert not {"WORKFLOW_SLACK_TOKEN", "WORKFLOW_SLACK_SIGNING_SECRET"} & (
        api.keys() | notifier.keys()
    )
    assert "WORKFLOW_SLACK_TOKEN_PARAMETER" not in api
    assert "WORKFLOW_SLACK_SIGNING_SECRET_PARAMETER" not in notifier
    for name in ("SlackTokenParameter", "SlackSigningSecretParameter"):
        assert parameters[name]["Default"] == ""  # no Slack unless named
        assert re.fullmatch(parameters[name]["AllowedPattern"], "/approval-workflows/slack")
        assert not re.fullmatch(parameters[name]["AllowedPattern"], "slack token")
    access = resources["SlackSigningSecretAccess"]
    assert access["Condition"] == "SlackSigningSecretGiven"
    assert access["Properties"]["Roles"] == [{"Ref": "ApiHandlerRole"}]
    (statement,) = access["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == [SLACK_SECRET_ARN]
    (given,) = [
        entry["Fn::If"]
        for entry in resources["NotifierAccess"]["Properties"]["PolicyDocument"]["Statement"]
        if "Fn::If" in entry
    ]
    assert given[0] == "SlackTokenGiven" and given[2] == {"Ref": "AWS::NoValue"}
    assert (given[1]["Action"], given[1]["Resource"]) == (["ssm:GetParameter"], [SLACK_TOKEN_ARN])
    for condition, parameter in (
        ("SlackTokenGiven", "SlackTokenParameter"),
        ("SlackSigningSecretGiven", "SlackSigningSecretParameter"),
    ):
        assert template["Conditions"][condition] == {
            "Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, ""]}]
        }


def test_the_prod_cors_origin_is_a_parameter_that_cannot_be_a_wildcard(
    template: dict[str, Any],
) -> None:
    import re

    variables = template["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]
    pattern = re.compile(template["Parameters"]["CorsOrigin"]["AllowedPattern"])

    assert variables["WORKFLOW_CORS_ORIGIN"] == {"Ref": "CorsOrigin"}
    assert "Default" not in template["Parameters"]["CorsOrigin"]
    assert pattern.fullmatch("https://approvals.example.com")
    assert not pattern.fullmatch("*") and not pattern.fullmatch("https://*.example.com")


def test_make_package_refuses_a_prod_stage_that_trusts_its_callers(tmp_path: Path) -> None:
    project = copy_of_the_project(tmp_path)
    config_path = project / ".chalice" / "config.json"
    config = json.loads(config_path.read_text())
    config["stages"]["prod"]["environment_variables"]["WORKFLOW_AUTH"] = "none"
    config_path.write_text(json.dumps(config))

    refused = run_package(project)

    assert refused.returncode == 1
    assert "WORKFLOW_AUTH" in refused.stderr and "Traceback" not in refused.stderr


# -- events: stream -> relay -> bus -> rule -> queue -> webhook sender ---------------


def statements_of(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    """Every statement that may apply to `function`'s role, with every condition true."""
    resources = template["Resources"]
    role_name = resources[function]["Properties"]["Role"]["Fn::GetAtt"][0]
    documents = [
        policy["PolicyDocument"] for policy in resources[role_name]["Properties"]["Policies"]
    ]
    documents += [
        resource["Properties"]["PolicyDocument"]
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy"
        and {"Ref": role_name} in resource["Properties"].get("Roles", [])
    ]
    return [s for document in documents for entry in document["Statement"] for s in if_true(entry)]


def grants(template: dict[str, Any], function: str) -> dict[str, list[Any]]:
    """action -> the resources it is granted on, for `function`'s role."""
    granted: dict[str, list[Any]] = {}
    for statement in statements_of(template, function):
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            granted.setdefault(action, []).extend(as_list(statement["Resource"]))
    return granted


def test_the_table_streams_its_event_items_to_the_relay(template: dict[str, Any]) -> None:
    relay = template["Resources"][RELAY]["Properties"]
    assert relay["Handler"] == "app.on_dynamodb_record"
    (source,) = relay["Events"].values()
    assert source["Type"] == "DynamoDB"
    props = source["Properties"]
    assert props["Stream"] == {"Fn::GetAtt": [TABLE, "StreamArn"]}
    assert props["StartingPosition"] == "TRIM_HORIZON"
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    assert props["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["RelayDeadLetterQueue", "Arn"]
    }
    # Event items, action items (they carry their decisions' events), and run
    # items that name the inbox entries their decision left behind.
    assert [json.loads(f["Pattern"]) for f in props["FilterCriteria"]["Filters"]] == [
        {"eventName": ["INSERT"], "dynamodb": {"Keys": {"PK": {"S": [{"prefix": "EVT#"}]}}}},
        {"eventName": ["INSERT"], "dynamodb": {"Keys": {"SK": {"S": [{"prefix": "ACT#"}]}}}},
        {"dynamodb": {"NewImage": {"inbox_left": {"S": [{"exists": True}]}}}},
    ]
    assert relay["Environment"]["Variables"]["WORKFLOW_EVENT_BUS"] == {"Ref": "EventBus"}
    # It tells the webhook queue too: a message per run, not one per event.
    assert relay["Environment"]["Variables"]["WORKFLOW_WEBHOOK_QUEUE_URL"] == {
        "Ref": "WebhookQueue"
    }


def test_the_relay_feeds_the_webhook_queue_and_no_rule_does(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    assert resources["EventBus"]["Type"] == "AWS::Events::EventBus"
    # A rule on the bus would send a message per event: the relay sends one per run.
    targets = [
        target["Arn"]
        for resource in resources.values()
        if resource["Type"] == "AWS::Events::Rule"
        for target in resource["Properties"]["Targets"]
    ]
    assert {"Fn::GetAtt": ["WebhookQueue", "Arn"]} not in targets
    assert not [
        r
        for r in resources.values()
        if r["Type"] == "AWS::SQS::QueuePolicy"
        and {"Ref": "WebhookQueue"} in r["Properties"]["Queues"]
    ]
    queue = resources["WebhookQueue"]["Properties"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["WebhookDeadLetterQueue", "Arn"]
    }
    for name in ("WebhookQueue", "WebhookDeadLetterQueue", "RelayDeadLetterQueue"):
        assert resources[name]["Properties"]["SqsManagedSseEnabled"] is True
    sender = resources[SENDER]["Properties"]
    (source,) = sender["Events"].values()
    assert source["Type"] == "SQS"
    assert source["Properties"]["Queue"] == {"Fn::GetAtt": ["WebhookQueue", "Arn"]}
    assert source["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    variables = sender["Environment"]["Variables"]
    assert variables["WORKFLOW_WEBHOOK_URL"] == {"Ref": "WebhookUrl"}
    assert variables["WORKFLOW_WEBHOOK_SECRET_PARAMETER"] == {"Ref": "WebhookSecretParameter"}
    assert "WORKFLOW_WEBHOOK_SECRET" not in variables
    assert queue["VisibilityTimeout"] >= 6 * sender["Timeout"]


def test_each_event_function_may_do_only_what_it_does(template: dict[str, Any]) -> None:
    logs = {"logs:CreateLogStream", "logs:PutLogEvents"}
    xray = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
    stream = [{"Fn::Sub": f"${{{TABLE}.Arn}}/stream/*"}]
    relay = grants(template, RELAY)
    assert set(relay) == logs | xray | {
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
        "dynamodb:DeleteItem",
        "events:PutEvents",
        "sqs:SendMessage",
    }
    assert all(
        relay[action] == stream
        for action in relay
        if action.startswith("dynamodb:") and action != "dynamodb:DeleteItem"
    )
    # The inbox entries decisions left behind, on the table.
    assert relay["dynamodb:DeleteItem"] == [TABLE_ARN]
    assert relay["events:PutEvents"] == [{"Fn::GetAtt": ["EventBus", "Arn"]}]
    assert relay["sqs:SendMessage"] == [
        {"Fn::GetAtt": ["RelayDeadLetterQueue", "Arn"]},
        {"Fn::GetAtt": ["WebhookQueue", "Arn"]},
    ]
    sender = grants(template, SENDER)
    assert set(sender) == logs | xray | {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:ChangeMessageVisibility",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "ssm:GetParameter",
    }
    assert sender["dynamodb:Query"] == sender["dynamodb:UpdateItem"] == [TABLE_ARN]
    assert all(
        sender[action] == [{"Fn::GetAtt": ["WebhookQueue", "Arn"]}]
        for action in sender
        if action.startswith("sqs:")
    )
    # The notifier: its queue, the reads of a notification, its markers and
    # links, and mail as the one configured SES identity; nothing else.
    notifier = grants(template, NOTIFIER)
    assert set(notifier) == logs | xray | {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "dynamodb:Query",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "ses:SendEmail",
        "ssm:GetParameter",
    }
    assert notifier["dynamodb:PutItem"] == notifier["dynamodb:BatchGetItem"] == [TABLE_ARN]
    assert notifier["ssm:GetParameter"] == [SLACK_TOKEN_ARN]  # where the stack names one
    identity = "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/"
    assert notifier["ses:SendEmail"] == [{"Fn::Sub": identity + "${MailIdentity}"}]
    variables = template["Resources"][NOTIFIER]["Properties"]["Environment"]["Variables"]
    assert variables["WORKFLOW_MAIL"] == "ses"
    assert variables["WORKFLOW_LINKS"] == {"Ref": "ActionLinks"}
    # Neither may write the table's records, nor the API function touch the bus.
    assert "dynamodb:PutItem" not in relay.keys() | sender.keys()
    assert not any(action.startswith(("events:", "sqs:")) for action in grants(template, FUNCTION))


def test_the_sweeper_runs_every_minute_and_may_only_decide(template: dict[str, Any]) -> None:
    sweeper = template["Resources"][SWEEPER]["Properties"]
    assert sweeper["Handler"] == "app.sweep_deadlines"
    (source,) = sweeper["Events"].values()
    assert source == {"Type": "Schedule", "Properties": {"Schedule": "rate(1 minute)"}}
    assert sweeper["Environment"]["Variables"]["WORKFLOW_TABLE"] == {"Ref": TABLE}
    granted = grants(template, SWEEPER)
    assert set(granted) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        # No DeleteItem: the inbox entries a deadline's reject leaves behind are
        # the relay's to delete (the stream delivers, as for every decision).
    }
    assert granted["dynamodb:PutItem"] == granted["dynamodb:UpdateItem"] == [TABLE_ARN]
    assert granted["dynamodb:Query"] == [TABLE_ARN, {"Fn::Sub": f"${{{TABLE}.Arn}}/index/due"}]


def test_every_function_s_concurrency_is_bounded_by_a_parameter(expanded: dict[str, Any]) -> None:
    """The API function reserves its own; the sweeper reserves one; the stream and
    the queue bound theirs through their event source mappings (CKV_AWS_115)."""
    resources = expanded["Resources"]
    mappings = {
        resource["Properties"]["FunctionName"]["Ref"]: resource["Properties"]
        for resource in of_type(expanded, "AWS::Lambda::EventSourceMapping").values()
    }
    sweeper = resources[SWEEPER]["Properties"]
    assert sweeper["ReservedConcurrentExecutions"] == {"Ref": "SweeperReservedConcurrency"}
    assert mappings[RELAY]["ParallelizationFactor"] == {"Ref": "RelayParallelizationFactor"}
    assert mappings[SENDER]["ScalingConfig"] == {
        "MaximumConcurrency": {"Ref": "WebhookMaximumConcurrency"}
    }
    assert mappings[NOTIFIER]["ScalingConfig"] == {
        "MaximumConcurrency": {"Ref": "NotifierMaximumConcurrency"}
    }
    bounds = {
        name: (p["Type"], p["Default"], p["MinValue"], p.get("MaxValue"))
        for name, p in expanded["Parameters"].items()
        if name
        in ("SweeperReservedConcurrency", "WebhookMaximumConcurrency", "RelayParallelizationFactor")
    }
    # Lambda's own ranges: MaximumConcurrency 2 to 1000, ParallelizationFactor 1 to 10.
    assert bounds == {
        "SweeperReservedConcurrency": ("Number", 1, 1, None),
        "WebhookMaximumConcurrency": ("Number", 5, 2, 1000),
        "RelayParallelizationFactor": ("Number", 1, 1, 10),
    }
    assert "ReservedConcurrentExecutions" in resources[FUNCTION]["Properties"]
    # A sweep throttled behind a running one is dropped by the next one's time.
    (invoke_config,) = of_type(expanded, "AWS::Lambda::EventInvokeConfig").values()
    assert invoke_config["Properties"]["FunctionName"] == {"Ref": SWEEPER}
    assert invoke_config["Properties"]["MaximumEventAgeInSeconds"] == 60
    assert invoke_config["Properties"]["MaximumRetryAttempts"] == 0


def test_checkov_is_told_of_exactly_the_findings_that_do_not_apply(each: dict[str, Any]) -> None:
    """Per resource, so that a new function or queue is still checked."""
    skipped = {
        name: sorted(skip["id"] for skip in resource["Metadata"]["checkov"]["skip"])
        for name, resource in each["Resources"].items()
        if "checkov" in resource.get("Metadata", {})
    }
    assert skipped == {
        RELAY: ["CKV_AWS_115"],
        SENDER: ["CKV_AWS_115"],
        NOTIFIER: ["CKV_AWS_115"],
        "WebhookQueue": ["CKV_AWS_27"],
        "WebhookDeadLetterQueue": ["CKV_AWS_27"],
        "RelayDeadLetterQueue": ["CKV_AWS_27"],
        "NotificationQueue": ["CKV_AWS_27"],
        "NotificationDeadLetterQueue": ["CKV_AWS_27"],
    }
    queues = ("WebhookQueue", "WebhookDeadLetterQueue", "RelayDeadLetterQueue")
    for name in (*queues, "NotificationQueue", "NotificationDeadLetterQueue"):
        assert each["Resources"][name]["Properties"]["SqsManagedSseEnabled"] is True


def test_every_event_function_names_only_real_iam_actions(template: dict[str, Any]) -> None:
    from cfnlint.data import AdditionalSpecs
    from cfnlint.helpers import load_resource

    known = load_resource(AdditionalSpecs, "Policies.json")
    for function in (RELAY, SENDER, SWEEPER, NOTIFIER):
        for action in grants(template, function):
            service, name = action.lower().split(":", 1)
            assert name in known[service]["Actions"], action


# -- the API: an HTTP API by default, the REST API as a parameter ---------------------

HTTP_RESOURCES = {
    HTTP_API: "AWS::ApiGatewayV2::Api",
    "HttpAPIIntegration": "AWS::ApiGatewayV2::Integration",
    "HttpAPIDefaultRoute": "AWS::ApiGatewayV2::Route",
    "HttpAPIStage": "AWS::ApiGatewayV2::Stage",
    "HttpAPIInvokePermission": "AWS::Lambda::Permission",
}


def test_the_api_type_is_a_parameter_and_the_http_api_its_default(each: dict[str, Any]) -> None:
    chosen = parameter(each, "ApiType")
    assert (chosen["Type"], chosen["Default"], chosen["AllowedValues"]) == (
        "String",
        "http",
        ["http", "rest"],
    )
    assert each["Conditions"]["HttpApiChosen"] == {"Fn::Equals": [{"Ref": "ApiType"}, "http"]}
    assert each["Conditions"]["RestApiChosen"] == {"Fn::Equals": [{"Ref": "ApiType"}, "rest"]}
    for name, kind in HTTP_RESOURCES.items():
        assert each["Resources"][name]["Type"] == kind
        assert each["Resources"][name]["Condition"] == "HttpApiChosen", name
    # Whatever belongs to the REST API exists only with it: chalice's API and
    # its permission, and (expanded) SAM's deployment and stage of it.
    rest = [
        name
        for name, resource in each["Resources"].items()
        if resource["Type"].startswith(("AWS::ApiGateway::", "AWS::Serverless::Api"))
        or name == "APIHandlerInvokePermission"
    ]
    assert REST_API in rest and "APIHandlerInvokePermission" in rest
    for name in rest:
        assert each["Resources"][name]["Condition"] == "RestApiChosen", name
    assert not any(
        resource["Type"].startswith("AWS::ApiGatewayV2::")
        for name, resource in each["Resources"].items()
        if name not in HTTP_RESOURCES
    )
    # The endpoint is whichever API the stack has.
    (output,) = [each["Outputs"]["EndpointURL"]["Value"]]
    condition, http_url, rest_url = output["Fn::If"]
    assert condition == "HttpApiChosen"
    assert http_url == {
        "Fn::Sub": "https://${HttpAPI}.execute-api.${AWS::Region}.${AWS::URLSuffix}/"
    }
    assert rest_url == {
        "Fn::Sub": "https://${RestAPI}.execute-api.${AWS::Region}.${AWS::URLSuffix}/api/"
    }
    assert each["Outputs"]["HttpAPIId"]["Condition"] == "HttpApiChosen"
    assert each["Outputs"]["RestAPIId"]["Condition"] == "RestApiChosen"


def test_the_http_api_sends_every_request_to_the_function_as_payload_1_0(
    each: dict[str, Any], sam_path: Path
) -> None:
    """One `$default` route, so that a path the app does not route still
    reaches it for the service's 404; payload 1.0, the REST API's event,
    which the function's entry point routes for chalice."""
    resources = each["Resources"]
    api = resources[HTTP_API]["Properties"]
    assert api["ProtocolType"] == "HTTP"
    # No CORS configuration: it would drop the function's CORS headers and answer
    # preflights itself only for requests that name an Origin.
    assert "CorsConfiguration" not in api and "Target" not in api
    (route,) = of_type(each, "AWS::ApiGatewayV2::Route").values()
    assert route["Properties"] == {
        "ApiId": {"Ref": HTTP_API},
        "RouteKey": "$default",
        "AuthorizationType": "NONE",
        "Target": {"Fn::Sub": "integrations/${HttpAPIIntegration}"},
    }
    (integration,) = of_type(each, "AWS::ApiGatewayV2::Integration").values()
    assert integration["Properties"] == {
        "ApiId": {"Ref": HTTP_API},
        "IntegrationType": "AWS_PROXY",
        "IntegrationUri": {"Fn::GetAtt": [FUNCTION, "Arn"]},
        "PayloadFormatVersion": "1.0",
        "TimeoutInMillis": 30000,
    }
    permission = resources["HttpAPIInvokePermission"]["Properties"]
    assert permission["FunctionName"] == {"Ref": FUNCTION}
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert permission["SourceArn"] == {
        "Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpAPI}/*"
    }
    # The function's entry point routes the HTTP API's events, and is in the bundle.
    handler = function_properties(each)["Handler"]
    assert handler == "chalicelib.http_api.handler"
    names = zipfile.ZipFile(sam_path.with_name("deployment.zip")).namelist()
    assert "chalicelib/http_api.py" in names


def test_the_http_apis_one_stage_is_throttled_and_access_logged(each: dict[str, Any]) -> None:
    (stage,) = of_type(each, "AWS::ApiGatewayV2::Stage").values()
    properties = stage["Properties"]
    assert properties["StageName"] == "$default" and properties["AutoDeploy"] is True
    assert properties["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ApiThrottlingRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ApiThrottlingBurstLimit"},
    }
    setting = properties["AccessLogSettings"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": [ACCESS_LOG_GROUP, "Arn"]}
    fields = json.loads(setting["Format"])
    assert {
        "requestId": "$context.requestId",
        "sourceIp": "$context.identity.sourceIp",
        "httpMethod": "$context.httpMethod",
        "path": "$context.path",
        "status": "$context.status",
        "errorType": "$context.error.responseType",
        "responseLatency": "$context.responseLatency",
    }.items() <= fields.items()
    assert all(value.startswith("$context.") for value in fields.values())
    # An HTTP API has no X-Ray: the REST API's stage variable would not resolve.
    assert "$context.xrayTraceId" not in fields.values()
