"""Package the app for CloudFormation: `chalice package` plus the DynamoDB table.

    python scripts/package.py [--stage prod] [--out dist]

writes OUT/sam.json and OUT/deployment.zip. The merge template given to
`chalice package --merge-template` is generated from `dynamodb_schema.TABLE_KEYS` and
`dynamodb_schema.TTL_ATTRIBUTE`, the definition `make dynamodb-table` creates, so keys,
indexes and Time to Live cannot drift. It
adds the table, passes its name to the function, and grants the function's role
the adapter's DynamoDB actions on that table (and its indexes) only.

Events (chalicelib/delivery/relay.py): the table's stream, filtered to event items,
action items (which carry their decisions' events) and run items that name
inbox entries to delete, feeds the relay function (`app.on_dynamodb_record`, partial batch failures,
bisection, a dead-letter queue for what keeps failing), which puts every
event on an EventBridge bus the stack creates; a rule on the bus feeds an
SQS queue (with its own dead-letter queue) that the webhook sender reads.
The deadline sweeper (`app.sweep_deadlines`) runs every minute on a
schedule. Each function has a role of its own, granted only what it does.

The API: an HTTP API by default (ApiType=http: one `$default` route to the
function, payload format 1.0, chalicelib/http_api.py the function's entry
point), or chalice's REST API (ApiType=rest), whichever the stack is given;
the other's resources are left out by their condition. docs/deploy.md says
what each costs and lacks.

It also makes the deployment one an operator can run (docs/deploy.md): API
Gateway's own errors in the service's shape (REST; an HTTP API has no
gateway responses), stage throttling and reserved concurrency, an access log
and the function's log group with a retention, one stage only, the cursor key
read by reference from SSM Parameter Store, and X-Ray tracing; each limit a
template parameter.

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
from types import CodeType
from typing import Any, Optional

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from chalicelib.storage.dynamodb import schema as dynamodb_schema  # noqa: E402

# Logical ids in the template. Chalice names the API function `APIHandler` and,
# with `autogen_policy: false`, its role `ApiHandlerRole` (function name + _role).
TABLE = "WorkflowTable"
FUNCTION = "APIHandler"
ROLE = "ApiHandlerRole"
# The event functions (app.py), and their event sources as chalice names them.
RELAY = "OnDynamodbRecord"
RELAY_ROLE = "OnDynamodbRecordRole"
RELAY_SOURCE = "OnDynamodbRecordDynamodbEventSource"
SENDER = "DeliverWebhooks"
SENDER_ROLE = "DeliverWebhooksRole"
SENDER_SOURCE = "DeliverWebhooksSqsEventSource"
SWEEPER = "SweepDeadlines"
SWEEPER_ROLE = "SweepDeadlinesRole"
FUNCTIONS = {FUNCTION: ROLE, RELAY: RELAY_ROLE, SENDER: SENDER_ROLE, SWEEPER: SWEEPER_ROLE}
EVENT_BUS = "EventBus"
WEBHOOK_RULE = "WebhookRule"
WEBHOOK_QUEUE = "WebhookQueue"
WEBHOOK_DLQ = "WebhookDeadLetterQueue"
WEBHOOK_QUEUE_POLICY = "WebhookQueuePolicy"
RELAY_DLQ = "RelayDeadLetterQueue"
RELAY_POLICY = "RelayAccess"
SENDER_POLICY = "WebhookSenderAccess"
SWEEPER_POLICY = "DeadlineSweeperAccess"
REST_API = "RestAPI"
# Chalice's permission for the REST API to invoke the function.
REST_PERMISSION = "APIHandlerInvokePermission"
# The HTTP API (ApiType=http): the API, its Lambda integration, the $default
# route to it, the $default stage, and its permission to invoke the function.
HTTP_API = "HttpAPI"
HTTP_INTEGRATION = "HttpAPIIntegration"
HTTP_ROUTE = "HttpAPIDefaultRoute"
HTTP_STAGE = "HttpAPIStage"
HTTP_PERMISSION = "HttpAPIInvokePermission"
# The function's entry point: the HTTP API's payload 1.0 events made REST's
# for chalice (a REST API's pass unchanged), whichever API is in front.
API_HANDLER = "chalicelib.http_api.handler"
TABLE_POLICY = "WorkflowTableAccess"
SECRET_POLICY = "CursorSecretAccess"
TRACING_POLICY = "TracingAccess"
ACCESS_LOG_GROUP = "ApiAccessLogGroup"
# .chalice/policy-prod.json (the role's own policy) grants writing to this one.
FUNCTION_LOG_GROUP = "FunctionLogGroup"

# Template parameters: the operator's knobs, documented in docs/deploy.md.
SECRET_PARAMETER = "CursorSecretParameter"
SECRET_KEY = "CursorSecretKmsKeyArn"
RATE_LIMIT = "ApiThrottlingRateLimit"
BURST_LIMIT = "ApiThrottlingBurstLimit"
CONCURRENCY = "FunctionReservedConcurrency"
RETENTION = "LogRetentionInDays"
TRACING = "TracingEnabled"
JWT_ISSUER = "JwtIssuer"
JWT_AUDIENCE = "JwtAudience"
JWKS_URL = "JwksUrl"
CORS_ORIGIN = "CorsOrigin"
API_TYPE = "ApiType"
HTTP, REST = "http", "rest"
WEBHOOK_URL = "WebhookUrl"
WEBHOOK_SECRET = "WebhookSecretParameter"
# How many of each event function may run at once (docs/deploy.md, "Parameters").
SWEEPER_CONCURRENCY = "SweeperReservedConcurrency"
WEBHOOK_CONCURRENCY = "WebhookMaximumConcurrency"
RELAY_PARALLELIZATION = "RelayParallelizationFactor"
# Stages that serve the public: they must verify callers (WORKFLOW_AUTH=jwt in
# the stage's environment_variables in .chalice/config.json).
PUBLIC_STAGES = ("prod",)
# Conditions on them.
TRACING_ON = "TracingOn"
SECRET_KEY_GIVEN = "CursorSecretKeyGiven"
RESERVES_CONCURRENCY = "ReservesConcurrency"
HTTP_API_CHOSEN = "HttpApiChosen"
REST_API_CHOSEN = "RestApiChosen"
NO_RESERVATION = -1

# The variable chalicelib/secret_store.py reads the parameter's name from.
SECRET_PARAMETER_VARIABLE = "WORKFLOW_CURSOR_SECRET_PARAMETER"
# API Gateway's own answers (unknown route, throttling, timeouts, ...) in the
# service's error shape; messageString is already a quoted JSON string.
ERROR_TEMPLATE = '{"error": $context.error.messageString}'
NO_ROUTE_TEMPLATE = '{"error": "No route matches this path"}'
# The allowed origin on API Gateway's own answers too, so that a page on it can
# read a throttled or failed request's {"error"} (a static value, quoted).
GATEWAY_CORS = {"Headers": {"Access-Control-Allow-Origin": {"Fn::Sub": "'${CorsOrigin}'"}}}
PREFLIGHT_ORIGIN = "method.response.header.Access-Control-Allow-Origin"
ANY_METHOD = "x-amazon-apigateway-any-method"
# One JSON line per request: who called what, from where, and how it ended,
# written by API Gateway, so it is there even when the function never ran.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTime",
    "sourceIp": "$context.identity.sourceIp",
    # The caller API Gateway verified (IAM); empty while the API is open.
    "caller": "$context.identity.caller",
    "user": "$context.identity.user",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "path": "$context.path",
    "status": "$context.status",
    "errorType": "$context.error.responseType",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "xrayTraceId": "$context.xrayTraceId",
}
# The same line from an HTTP API, in its own variables: its one route is
# `$default` (the function's own line names the route), and it has no X-Ray.
HTTP_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTime",
    "sourceIp": "$context.identity.sourceIp",
    "caller": "$context.identity.caller",
    "user": "$context.identity.user",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "errorType": "$context.error.responseType",
    "integrationError": "$context.integrationErrorMessage",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
}
# API Gateway's longest wait for a Lambda integration; the function's own
# timeout (lambda_timeout, 29 s) ends it first.
INTEGRATION_TIMEOUT_MS = 30000
# What CloudWatch Logs accepts as RetentionInDays.
# fmt: off
RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                  1827, 2192, 2557, 2922, 3288, 3653)
# fmt: on

# The DynamoDB calls the adapter makes at run time, as IAM actions. There is no
# IAM action for TransactWriteItems: DynamoDB authorises each Put/Update inside
# a transaction as PutItem/UpdateItem, and a ConditionCheck (the one a decision
# that completes a run makes) as ConditionCheckItem. DeleteItem releases an
# Idempotency-Key after a failed request (the inbox entries a decision leaves
# are the relay's to delete, the stream delivering: not in its transaction).
# BatchGetItem reads the runs of an inbox page or of a run list's page at once.
TABLE_ACTIONS = (
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
)
# On an index only reads are possible, and the adapter's only read is Query.
INDEX_ACTIONS = ("dynamodb:Query",)

# CreateTable parameters that AWS::DynamoDB::Table takes unchanged (and
# StreamSpecification, translated). Anything else in TABLE_KEYS
# (SSESpecification, ...) is spelled differently in CloudFormation: fail
# rather than emit a wrong template.
SAME_IN_CLOUDFORMATION = (
    "KeySchema",
    "AttributeDefinitions",
    "BillingMode",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "TableClass",
    "StreamSpecification",
)
# What goes to the relay (chalicelib/delivery/relay.py): inserts of event
# items (key EVT#...) and of action items (ACT#..., which carry their
# decisions' events), and the run items that name inbox entries to delete.
RELAY_FILTERS = (
    {"eventName": ["INSERT"], "dynamodb": {"Keys": {"PK": {"S": [{"prefix": "EVT#"}]}}}},
    {"eventName": ["INSERT"], "dynamodb": {"Keys": {"SK": {"S": [{"prefix": "ACT#"}]}}}},
    {"dynamodb": {"NewImage": {"inbox_left": {"S": [{"exists": True}]}}}},
)
# The webhook queue: a message hides while the sender works on it (at least six
# times the function's timeout, as Lambda advises), and one that keeps failing
# moves to the dead-letter queue after MAX_RECEIVES receives: with the sender's
# backoff (chalicelib/delivery/webhooks.py), about four days of retries.
QUEUE_VISIBILITY_SECONDS = 180
MAX_RECEIVES = 100
RETENTION_SECONDS = 14 * 24 * 3600
# The relay retries a failing batch (halved on each failure) for up to a day,
# the stream's retention, before its records go to the relay's dead-letter queue.
RELAY_RETRIES = 1000
# A sweep the reserved concurrency throttled is not worth keeping past the
# next one's schedule: the next sweep finds whatever it would have found.
SWEEP_EVENT_AGE_SECONDS = 60
# checkov (make scan) reads only ReservedConcurrentExecutions for CKV_AWS_115;
# the stream and the queue functions are bounded by their event sources, and
# SQS-managed encryption is invisible to CKV_AWS_27 (docs/deploy.md).
BOUNDED_BY_EVENT_SOURCE = (
    "CKV_AWS_115",
    "concurrency bounded by the event source mapping (docs/deploy.md, Parameters)",
)
ENCRYPTED_BY_SQS = ("CKV_AWS_27", "encrypted at rest with SQS-managed keys (SqsManagedSseEnabled)")

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
    properties = json.loads(json.dumps(table_keys))  # a deep copy
    if "StreamSpecification" in properties:
        # CloudFormation has no StreamEnabled: a view type turns the stream on.
        stream = properties.pop("StreamSpecification")
        if stream.get("StreamEnabled"):
            properties["StreamSpecification"] = {"StreamViewType": stream["StreamViewType"]}
    return {
        **properties,
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


def merge_template(table_keys: dict[str, Any], stage: str = "prod") -> dict[str, Any]:
    """What `chalice package --merge-template` deep-merges into its SAM template
    (dicts merge key by key; a list or value here replaces chalice's)."""
    return {
        "Parameters": {**parameters(), **event_parameters()},
        "Conditions": conditions(),
        "Resources": {
            TABLE: {
                "Type": "AWS::DynamoDB::Table",
                # The data outlives the stack: deleting or replacing the stack
                # leaves the table, and the table refuses DeleteTable.
                "DeletionPolicy": "Retain",
                "UpdateReplacePolicy": "Retain",
                "Properties": table_properties(table_keys),
            },
            # Policies of their own rather than in the role's inline policy, which
            # chalice writes from the stage's iam_policy_file verbatim.
            TABLE_POLICY: role_policy(TABLE_POLICY, table_policy(table_keys)),
            SECRET_POLICY: role_policy(SECRET_POLICY, secret_policy()),
            # X-Ray has no resource-level permissions: the grant exists only
            # while tracing is on.
            TRACING_POLICY: {
                **role_policy(TRACING_POLICY, tracing_policy(), *FUNCTIONS.values()),
                "Condition": TRACING_ON,
            },
            FUNCTION: {
                # The function must not run before it may use its table and
                # key. (Not TracingAccess: DependsOn cannot name a resource
                # that a condition may leave out; a trace lost in the seconds
                # before it exists costs nothing.)
                "DependsOn": [TABLE_POLICY, SECRET_POLICY],
                "Properties": function_properties(stage),
            },
            **event_resources(stage),
            REST_API: {"Condition": REST_API_CHOSEN, "Properties": api_properties()},
            REST_PERMISSION: {"Condition": REST_API_CHOSEN},
            **http_api_resources(),
            ACCESS_LOG_GROUP: log_group(),
            FUNCTION_LOG_GROUP: log_group(),
        },
        "Outputs": {
            "RestAPIId": {"Condition": REST_API_CHOSEN},
            "HttpAPIId": {"Condition": HTTP_API_CHOSEN, "Value": {"Ref": HTTP_API}},
            "WorkflowTableName": {"Value": {"Ref": TABLE}},
            "ApiAccessLogGroupName": {"Value": {"Ref": ACCESS_LOG_GROUP}},
            "FunctionLogGroupName": {"Value": {"Ref": FUNCTION_LOG_GROUP}},
            "EventBusName": {"Value": {"Ref": EVENT_BUS}},
            "EventBusArn": {"Value": {"Fn::GetAtt": [EVENT_BUS, "Arn"]}},
            "WebhookDeadLetterQueueUrl": {"Value": {"Ref": WEBHOOK_DLQ}},
            "RelayDeadLetterQueueUrl": {"Value": {"Ref": RELAY_DLQ}},
        },
    }


def event_parameters() -> dict[str, Any]:
    """Where webhooks go, and the key that signs them, by reference."""
    return {
        WEBHOOK_URL: {
            "Type": "String",
            "Default": "",
            "AllowedPattern": "^(https://[^\\s]+)?$",
            "Description": "The URL every event is POSTed to, signed (empty: events are only "
            "on the event bus, and the sender logs each as a JSON line)",
        },
        WEBHOOK_SECRET: {
            "Type": "String",
            "Default": "/approval-workflows/webhook-secret",
            "AllowedPattern": "^(/[a-zA-Z0-9_.-]+)+$",
            "Description": "SSM SecureString parameter holding the webhook signing secret "
            "(whsec_ followed by a base64 key)",
        },
        SWEEPER_CONCURRENCY: {
            "Type": "Number",
            "Default": 1,
            "MinValue": 1,
            "Description": "Deadline sweeps that may run at once (the schedule starts one a "
            "minute; overlapping sweeps are harmless but wasteful)",
        },
        WEBHOOK_CONCURRENCY: {
            "Type": "Number",
            "Default": 5,
            # What Lambda accepts for an SQS event source's MaximumConcurrency.
            "MinValue": 2,
            "MaxValue": 1000,
            "Description": "Webhook sender invocations that may run at once, so at most that "
            "many POSTs reach the receiver at a time",
        },
        RELAY_PARALLELIZATION: {
            "Type": "Number",
            "Default": 1,
            "MinValue": 1,
            "MaxValue": 10,
            "Description": "Relay invocations per stream shard at once (the relay runs at most "
            "shards x this many at a time)",
        },
    }


def checkov_skips(*checks: tuple[str, str]) -> dict[str, Any]:
    """Resource metadata that tells checkov why a check does not apply to it; only
    that resource, so a new resource still gets the check."""
    return {"checkov": {"skip": [{"id": check, "comment": why} for check, why in checks]}}


def event_resources(stage: str) -> dict[str, Any]:
    """The bus, the queues, the event functions' settings and their grants."""
    return {
        EVENT_BUS: {
            "Type": "AWS::Events::EventBus",
            "Properties": {"Name": {"Fn::Sub": "${AWS::StackName}-events"}},
        },
        RELAY_DLQ: queue(),
        WEBHOOK_DLQ: queue(),
        WEBHOOK_QUEUE: queue(
            VisibilityTimeout=QUEUE_VISIBILITY_SECONDS,
            RedrivePolicy={
                "deadLetterTargetArn": {"Fn::GetAtt": [WEBHOOK_DLQ, "Arn"]},
                "maxReceiveCount": MAX_RECEIVES,
            },
        ),
        WEBHOOK_RULE: {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "EventBusName": {"Ref": EVENT_BUS},
                "EventPattern": {"source": [{"prefix": "/approval-workflows/"}]},
                "State": "ENABLED",
                "Targets": [
                    {
                        "Id": "webhooks",
                        "Arn": {"Fn::GetAtt": [WEBHOOK_QUEUE, "Arn"]},
                        "RetryPolicy": {
                            "MaximumEventAgeInSeconds": 86400,
                            "MaximumRetryAttempts": 185,
                        },
                        "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [WEBHOOK_DLQ, "Arn"]}},
                    }
                ],
            },
        },
        # The rule, and only it, may send to the queue and its dead-letter queue.
        WEBHOOK_QUEUE_POLICY: {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {
                "Queues": [{"Ref": WEBHOOK_QUEUE}, {"Ref": WEBHOOK_DLQ}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "FromTheWebhookRule",
                            "Effect": "Allow",
                            "Principal": {"Service": "events.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": [
                                {"Fn::GetAtt": [WEBHOOK_QUEUE, "Arn"]},
                                {"Fn::GetAtt": [WEBHOOK_DLQ, "Arn"]},
                            ],
                            "Condition": {
                                "ArnEquals": {
                                    "aws:SourceArn": {"Fn::GetAtt": [WEBHOOK_RULE, "Arn"]}
                                }
                            },
                        }
                    ],
                },
            },
        },
        RELAY_POLICY: role_policy(RELAY_POLICY, relay_policy(), RELAY_ROLE),
        SENDER_POLICY: role_policy(SENDER_POLICY, sender_policy(), SENDER_ROLE),
        # The sweeper reads due runs (an index) and writes what a decision writes.
        SWEEPER_POLICY: role_policy(SWEEPER_POLICY, sweeper_policy(), SWEEPER_ROLE),
        SWEEPER: {
            "DependsOn": [SWEEPER_POLICY],
            "Properties": {
                **shared_function_properties(),
                "Environment": {"Variables": storage_variables(stage)},
                "ReservedConcurrentExecutions": {"Ref": SWEEPER_CONCURRENCY},
                # Function errors are not retried either: the next minute's sweep is the retry.
                "EventInvokeConfig": {
                    "MaximumEventAgeInSeconds": SWEEP_EVENT_AGE_SECONDS,
                    "MaximumRetryAttempts": 0,
                },
            },
        },
        RELAY: {
            "DependsOn": [RELAY_POLICY],
            "Metadata": checkov_skips(BOUNDED_BY_EVENT_SOURCE),
            "Properties": {
                **shared_function_properties(),
                "Environment": {
                    "Variables": {"WORKFLOW_EVENT_BUS": {"Ref": EVENT_BUS}, "WORKFLOW_STAGE": stage}
                },
                "Events": {
                    RELAY_SOURCE: {
                        "Properties": {
                            "Stream": {"Fn::GetAtt": [TABLE, "StreamArn"]},
                            "FunctionResponseTypes": ["ReportBatchItemFailures"],
                            "BisectBatchOnFunctionError": True,
                            "MaximumRetryAttempts": RELAY_RETRIES,
                            "MaximumRecordAgeInSeconds": 86400,
                            # One batch per shard at a time by default, so each
                            # shard's records are put on the bus in order.
                            "ParallelizationFactor": {"Ref": RELAY_PARALLELIZATION},
                            "DestinationConfig": {
                                "OnFailure": {
                                    "Type": "SQS",
                                    "Destination": {"Fn::GetAtt": [RELAY_DLQ, "Arn"]},
                                }
                            },
                            "FilterCriteria": {
                                "Filters": [
                                    {"Pattern": json.dumps(pattern, separators=(",", ":"))}
                                    for pattern in RELAY_FILTERS
                                ]
                            },
                        }
                    }
                },
            },
        },
        SENDER: {
            "DependsOn": [SENDER_POLICY],
            "Metadata": checkov_skips(BOUNDED_BY_EVENT_SOURCE),
            "Properties": {
                **shared_function_properties(),
                "Environment": {
                    "Variables": {
                        **storage_variables(stage),
                        "WORKFLOW_WEBHOOK_URL": {"Ref": WEBHOOK_URL},
                        "WORKFLOW_WEBHOOK_SECRET_PARAMETER": {"Ref": WEBHOOK_SECRET},
                        "WORKFLOW_WEBHOOK_QUEUE_URL": {"Ref": WEBHOOK_QUEUE},
                    }
                },
                "Events": {
                    SENDER_SOURCE: {
                        "Properties": {
                            "Queue": {"Fn::GetAtt": [WEBHOOK_QUEUE, "Arn"]},
                            "FunctionResponseTypes": ["ReportBatchItemFailures"],
                            # Not reserved concurrency, which would throttle the
                            # poller's invocations and push messages towards
                            # the dead-letter queue; this makes the poller wait.
                            "ScalingConfig": {"MaximumConcurrency": {"Ref": WEBHOOK_CONCURRENCY}},
                        }
                    }
                },
            },
        },
    }


def queue(**properties: Any) -> dict[str, Any]:
    """An SQS queue encrypted at rest, keeping messages as long as SQS can."""
    return {
        "Type": "AWS::SQS::Queue",
        "Metadata": checkov_skips(ENCRYPTED_BY_SQS),
        "Properties": {
            "SqsManagedSseEnabled": True,
            "MessageRetentionPeriod": RETENTION_SECONDS,
            **properties,
        },
    }


def storage_variables(stage: str) -> dict[str, Any]:
    """What a function that reads or writes the table is told."""
    return {
        "WORKFLOW_STORAGE": "dynamodb",
        "WORKFLOW_TABLE": {"Ref": TABLE},
        "WORKFLOW_STAGE": stage,
        # The table's stream carries the events to the relay: no due index entry.
        "WORKFLOW_EVENT_DELIVERY": "stream",
    }


def shared_function_properties() -> dict[str, Any]:
    """What every function of the stack has: traces, and the declared log group."""
    return {
        "Tracing": {"Fn::If": [TRACING_ON, "Active", "PassThrough"]},
        "LoggingConfig": {"LogGroup": {"Ref": FUNCTION_LOG_GROUP}},
    }


def relay_policy() -> dict[str, Any]:
    """Reading the table's stream, putting events on the bus, deleting the
    inbox entries decisions left behind, and parking what keeps failing in
    its dead-letter queue."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TableStream",
                "Effect": "Allow",
                "Action": [
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                    "dynamodb:ListStreams",
                ],
                "Resource": [{"Fn::Sub": f"${{{TABLE}.Arn}}/stream/*"}],
            },
            {
                "Sid": "EventBus",
                "Effect": "Allow",
                "Action": ["events:PutEvents"],
                "Resource": [{"Fn::GetAtt": [EVENT_BUS, "Arn"]}],
            },
            {
                "Sid": "InboxEntriesLeft",
                "Effect": "Allow",
                "Action": ["dynamodb:DeleteItem"],
                "Resource": [{"Fn::GetAtt": [TABLE, "Arn"]}],
            },
            {
                "Sid": "RelayDeadLetters",
                "Effect": "Allow",
                "Action": ["sqs:SendMessage"],
                "Resource": [{"Fn::GetAtt": [RELAY_DLQ, "Arn"]}],
            },
        ],
    }


def sweeper_policy() -> dict[str, Any]:
    """Finding due runs (the due index) and recording their deadlines: a
    decision's writes (a transaction's Put and Update; the inbox entries of
    the step a deadline rejects are left to the relay, through the stream)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Deadlines",
                "Effect": "Allow",
                "Action": ["dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"],
                "Resource": [{"Fn::GetAtt": [TABLE, "Arn"]}],
            },
            {
                "Sid": "DueRuns",
                "Effect": "Allow",
                "Action": ["dynamodb:Query"],
                "Resource": [{"Fn::Sub": f"${{{TABLE}.Arn}}/index/{dynamodb_schema.DUE_INDEX}"}],
            },
        ],
    }


def sender_policy() -> dict[str, Any]:
    """Reading the webhook queue, reading and marking events in the table,
    and the webhook secret's parameter."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WebhookQueue",
                "Effect": "Allow",
                "Action": [
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:ChangeMessageVisibility",
                ],
                "Resource": [{"Fn::GetAtt": [WEBHOOK_QUEUE, "Arn"]}],
            },
            {
                "Sid": "EventDelivery",
                "Effect": "Allow",
                "Action": ["dynamodb:Query", "dynamodb:UpdateItem"],
                "Resource": [{"Fn::GetAtt": [TABLE, "Arn"]}],
            },
            {
                "Sid": "WebhookSecret",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": [
                    {
                        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                        f":parameter${{{WEBHOOK_SECRET}}}"
                    }
                ],
            },
        ],
    }


def parameters() -> dict[str, Any]:
    """The deploy-time knobs, each with the default docs/deploy.md explains."""
    return {
        SECRET_PARAMETER: {
            "Type": "String",
            "Default": "/approval-workflows/cursor-secret",
            # A path-style name: its ARN is then ...:parameter<name>.
            "AllowedPattern": "^(/[a-zA-Z0-9_.-]+)+$",
            "Description": "SSM SecureString parameter holding the key that signs list cursors",
        },
        SECRET_KEY: {
            "Type": "String",
            "Default": "",
            "AllowedPattern": "^(arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[a-zA-Z0-9-]+)?$",
            "Description": "The customer-managed KMS key that encrypts that parameter, "
            "if any (empty: the AWS managed key aws/ssm)",
        },
        RATE_LIMIT: {
            "Type": "Number",
            "Default": 50,
            "MinValue": 1,
            "Description": "Requests per second the API stage lets through, in the long run",
        },
        BURST_LIMIT: {
            "Type": "Number",
            "Default": 100,
            "MinValue": 1,
            "Description": "Requests the API stage lets through at once above the rate",
        },
        CONCURRENCY: {
            "Type": "Number",
            "Default": 20,
            "MinValue": NO_RESERVATION,
            "Description": "Concurrent executions reserved for (and capping) the function; "
            f"{NO_RESERVATION}: none, share the account's pool",
        },
        RETENTION: {
            "Type": "Number",
            "Default": 365,
            "AllowedValues": list(RETENTION_DAYS),
            "Description": "Days the access log and the function's log keep events",
        },
        TRACING: {
            "Type": "String",
            "Default": "true",
            "AllowedValues": ["true", "false"],
            "Description": "X-Ray tracing of the API stage and the function",
        },
        JWT_ISSUER: {
            "Type": "String",
            "MinLength": 1,
            "Description": "The exact iss of the tokens callers send (an OIDC issuer, e.g. "
            "https://cognito-idp.<region>.amazonaws.com/<pool id>)",
        },
        JWT_AUDIENCE: {
            "Type": "String",
            "Default": "",
            "Description": "The aud the tokens must contain (empty: not checked; Cognito "
            "access tokens carry none)",
        },
        JWKS_URL: {
            "Type": "String",
            "AllowedPattern": "^https://[^\\s]+$",
            "Description": "The issuer's JSON Web Key Set (RS256 or ES256 keys), e.g. "
            "<issuer>/.well-known/jwks.json",
        },
        API_TYPE: {
            "Type": "String",
            "Default": HTTP,
            "AllowedValues": [HTTP, REST],
            "Description": "The API in front of the function: http (API Gateway's HTTP API, "
            "$1.00 per million requests) or rest (its REST API, $3.50 per million, with "
            "gateway responses in the service's error shape and X-Ray on the stage)",
        },
        CORS_ORIGIN: {
            "Type": "String",
            # Never * beside authentication: name the web page's own origin.
            "AllowedPattern": "^https?://[^*\\s/]+$",
            "Description": "The one origin whose pages may call the API from a browser, "
            "e.g. https://approvals.example.com",
        },
    }


def conditions() -> dict[str, Any]:
    return {
        HTTP_API_CHOSEN: {"Fn::Equals": [{"Ref": API_TYPE}, HTTP]},
        REST_API_CHOSEN: {"Fn::Equals": [{"Ref": API_TYPE}, REST]},
        TRACING_ON: {"Fn::Equals": [{"Ref": TRACING}, "true"]},
        SECRET_KEY_GIVEN: {"Fn::Not": [{"Fn::Equals": [{"Ref": SECRET_KEY}, ""]}]},
        RESERVES_CONCURRENCY: {
            "Fn::Not": [{"Fn::Equals": [{"Ref": CONCURRENCY}, str(NO_RESERVATION)]}]
        },
    }


def function_properties(stage: str = "prod") -> dict[str, Any]:
    """The function's settings on top of chalice's (its code, role, timeout)."""
    return {
        "Handler": API_HANDLER,
        "Environment": {
            "Variables": {
                **storage_variables(stage),
                # The parameter's name, not the key: chalicelib/secret_store.py reads it.
                SECRET_PARAMETER_VARIABLE: {"Ref": SECRET_PARAMETER},
                # WORKFLOW_AUTH itself comes from the stage (check_packaged holds
                # public stages to jwt); the shared-secret mode is not offered.
                "WORKFLOW_JWT_ISSUER": {"Ref": JWT_ISSUER},
                "WORKFLOW_JWT_AUDIENCE": {"Ref": JWT_AUDIENCE},
                "WORKFLOW_JWKS_URL": {"Ref": JWKS_URL},
                "WORKFLOW_CORS_ORIGIN": {"Ref": CORS_ORIGIN},
            }
        },
        "ReservedConcurrentExecutions": {
            "Fn::If": [RESERVES_CONCURRENCY, {"Ref": CONCURRENCY}, {"Ref": "AWS::NoValue"}]
        },
        **shared_function_properties(),
    }


def api_properties() -> dict[str, Any]:
    """The REST API's settings on top of chalice's (its routes)."""
    return {
        # Any value stops SAM from adding a second stage named "Stage"; chalice's
        # definition is Swagger 2.0 (check_packaged holds it to that).
        "OpenApiVersion": "2.0",
        # Inside the API's definition, so every deployment carries them.
        "GatewayResponses": {
            **{
                f"DEFAULT_{kind}": {
                    "ResponseParameters": GATEWAY_CORS,
                    "ResponseTemplates": {"application/json": ERROR_TEMPLATE},
                }
                for kind in ("4XX", "5XX")
            },
            # A path or method the API does not route: 404, as make run answers,
            # not API Gateway's 403 "Missing Authentication Token".
            "MISSING_AUTHENTICATION_TOKEN": {
                "StatusCode": "404",
                "ResponseParameters": GATEWAY_CORS,
                "ResponseTemplates": {"application/json": NO_ROUTE_TEMPLATE},
            },
        },
        "MethodSettings": [
            {
                "ResourcePath": "/*",
                "HttpMethod": "*",
                "ThrottlingRateLimit": {"Ref": RATE_LIMIT},
                "ThrottlingBurstLimit": {"Ref": BURST_LIMIT},
            }
        ],
        "AccessLogSetting": {
            "DestinationArn": {"Fn::GetAtt": [ACCESS_LOG_GROUP, "Arn"]},
            "Format": json.dumps(ACCESS_LOG_FIELDS, separators=(",", ":")),
        },
        "TracingEnabled": {"Ref": TRACING},
    }


def endpoint_url() -> dict[str, Any]:
    """The URL of the stack's API: the HTTP API's `$default` stage at its root,
    or the REST API's `api` stage."""
    suffix = ".execute-api.${AWS::Region}.${AWS::URLSuffix}/"
    return {
        "Fn::If": [
            HTTP_API_CHOSEN,
            {"Fn::Sub": f"https://${{{HTTP_API}}}{suffix}"},
            {"Fn::Sub": f"https://${{{REST_API}}}{suffix}api/"},
        ]
    }


def http_api_resources() -> dict[str, Any]:
    """The HTTP API (ApiType=http): every request to the function through one
    `$default` route, as payload format 1.0 (the REST API's event, which
    chalicelib/http_api.py routes for chalice); the `$default` stage, deployed
    on every change, throttled and access-logged as the REST API's stage is.
    No CORS configuration: the function answers preflights and names the
    allowed origin itself, as the REST API's definition does (an HTTP API
    that has one drops the function's CORS headers and answers only requests
    that send an Origin)."""
    api = {"Ref": HTTP_API}
    chosen = {"Condition": HTTP_API_CHOSEN}
    return {
        HTTP_API: {
            "Type": "AWS::ApiGatewayV2::Api",
            **chosen,
            "Properties": {
                "Name": {"Fn::Sub": "${AWS::StackName}-api"},
                "ProtocolType": "HTTP",
                "Description": "The approval-workflow service (docs/api.md)",
            },
        },
        HTTP_INTEGRATION: {
            "Type": "AWS::ApiGatewayV2::Integration",
            **chosen,
            "Properties": {
                "ApiId": api,
                "IntegrationType": "AWS_PROXY",
                "IntegrationUri": {"Fn::GetAtt": [FUNCTION, "Arn"]},
                "PayloadFormatVersion": "1.0",
                "TimeoutInMillis": INTEGRATION_TIMEOUT_MS,
            },
        },
        HTTP_ROUTE: {
            "Type": "AWS::ApiGatewayV2::Route",
            **chosen,
            # No authorizer: the function verifies callers itself
            # (WORKFLOW_AUTH=jwt), as behind the REST API, and the page and
            # its assets need no token.
            "Properties": {
                "ApiId": api,
                "RouteKey": "$default",
                "AuthorizationType": "NONE",
                "Target": {"Fn::Sub": f"integrations/${{{HTTP_INTEGRATION}}}"},
            },
        },
        HTTP_STAGE: {
            "Type": "AWS::ApiGatewayV2::Stage",
            **chosen,
            "Properties": {
                "ApiId": api,
                "StageName": "$default",
                "AutoDeploy": True,
                "DefaultRouteSettings": {
                    "ThrottlingRateLimit": {"Ref": RATE_LIMIT},
                    "ThrottlingBurstLimit": {"Ref": BURST_LIMIT},
                },
                "AccessLogSettings": {
                    "DestinationArn": {"Fn::GetAtt": [ACCESS_LOG_GROUP, "Arn"]},
                    "Format": json.dumps(HTTP_ACCESS_LOG_FIELDS, separators=(",", ":")),
                },
            },
        },
        HTTP_PERMISSION: {
            "Type": "AWS::Lambda::Permission",
            **chosen,
            "Properties": {
                "FunctionName": {"Ref": FUNCTION},
                "Action": "lambda:InvokeFunction",
                "Principal": "apigateway.amazonaws.com",
                "SourceArn": {
                    "Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:"
                    f"${{AWS::AccountId}}:${{{HTTP_API}}}/*"
                },
            },
        },
    }


def log_group() -> dict[str, Any]:
    """A log group CloudFormation names, kept for the retention after the stack goes."""
    return {
        "Type": "AWS::Logs::LogGroup",
        # "Who called what" outlives the stack, as the table does; the
        # retention still expires its events.
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {"RetentionInDays": {"Ref": RETENTION}},
    }


def role_policy(name: str, document: dict[str, Any], *roles: str) -> dict[str, Any]:
    """An IAM policy on `roles` (the API function's, unless named)."""
    return {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyName": name,
            "Roles": [{"Ref": role} for role in roles or (ROLE,)],
            "PolicyDocument": document,
        },
    }


def secret_policy() -> dict[str, Any]:
    """Reading the cursor key's parameter, and nothing else; decrypting with its
    key only when that is a customer-managed one (aws/ssm's key policy already
    lets the account's principals decrypt through SSM)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "CursorSecretParameter",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": [
                    {
                        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                        f":parameter${{{SECRET_PARAMETER}}}"
                    }
                ],
            },
            {
                "Fn::If": [
                    SECRET_KEY_GIVEN,
                    {
                        "Sid": "CursorSecretKey",
                        "Effect": "Allow",
                        "Action": ["kms:Decrypt"],
                        "Resource": [{"Ref": SECRET_KEY}],
                        "Condition": {
                            "StringEquals": {
                                "kms:ViaService": {
                                    "Fn::Sub": "ssm.${AWS::Region}.${AWS::URLSuffix}"
                                }
                            }
                        },
                    },
                    {"Ref": "AWS::NoValue"},
                ]
            },
        ],
    }


def tracing_policy() -> dict[str, Any]:
    """What Lambda needs to send the function's traces to X-Ray."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Tracing",
                "Effect": "Allow",
                "Action": ["xray:PutTraceSegments", "xray:PutTelemetryRecords"],
                "Resource": "*",
            }
        ],
    }


def check_packaged(template: dict[str, Any]) -> None:
    """Fail if chalice named things otherwise than the merge template assumes."""
    resources = template["Resources"]
    functions = sorted(
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
    )
    if functions != sorted(FUNCTIONS):
        raise RuntimeError(
            f"Expected the functions {sorted(FUNCTIONS)}, chalice made {functions}: "
            "give each its environment and policy in scripts/package.py"
        )
    api = resources.get(REST_API, {})
    if api.get("Type") != "AWS::Serverless::Api":
        raise RuntimeError(f"Expected the REST API {REST_API!r}: the gateway responses need it")
    version = api["Properties"].get("DefinitionBody", {}).get("swagger")
    if version != api["Properties"]["OpenApiVersion"]:
        raise RuntimeError(
            f"chalice's API definition is not Swagger {api['Properties']['OpenApiVersion']} "
            f"(swagger: {version!r}): update OpenApiVersion in scripts/package.py"
        )
    for function, expected in FUNCTIONS.items():
        role = resources[function]["Properties"].get("Role")
        if role != {"Fn::GetAtt": [expected, "Arn"]}:
            raise RuntimeError(
                f"{function} does not use the role {expected!r} (it has {role}); "
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
        merge_file.write_text(
            json.dumps(merge_template(dynamodb_schema.TABLE_KEYS, stage), indent=2)
        )
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
    template = json.loads(sam.read_text())
    check_packaged(template)
    check_authenticates(template, stage)
    add_bytecode(out_dir / "deployment.zip", function_runtime(template))
    preflights_allow_the_origin(template)
    other_methods_reach_the_function(template)
    # Whichever API the stack has (chalice's names the REST API's): replaced
    # here, as the merge template would merge the two values into one.
    template["Outputs"]["EndpointURL"] = {"Value": endpoint_url()}
    sam.write_text(json.dumps(template, indent=2))
    return sam


def function_runtime(template: dict[str, Any]) -> str:
    """The Python every function runs ("python3.11"): the bundle's bytecode is for it."""
    runtimes = {
        resource["Properties"]["Runtime"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    if len(runtimes) != 1:
        raise RuntimeError(f"Expected one runtime for every function, chalice gave {runtimes}")
    (runtime,) = runtimes
    return str(runtime)


def add_bytecode(bundle: Path, runtime: str) -> int:
    """Ship each module of `bundle` compiled, as the runtime would compile it; how many.

    Lambda's task root is read-only, so a function whose bundle holds only
    sources compiles every module it imports on every cold start (chalice's
    app.py alone is 2,000 lines), and `chalice package` adds no bytecode: it
    copies chalice's app.py, app.py and the dependencies as sources, and
    whatever __pycache__ the working tree has under chalicelib/ (stale files,
    other Pythons' files, checked against modification times the zip keeps to
    2 seconds). Those are dropped; every module gets a checked-hash .pyc (PEP
    552): the runtime uses it while it matches the source beside it, and
    compiles the source as before when it does not (a source edited in the
    unzipped bundle without packaging it again).
    """
    import importlib.util
    import marshal
    import zipfile

    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if runtime != python:
        raise RuntimeError(
            f"The functions run {runtime}, and this is {python}: its bytecode would not "
            f"load there. Package with {runtime} (make venv with it)."
        )
    tag = sys.implementation.cache_tag
    # PEP 552's flags: hash-based, checked against the source.
    header = importlib.util.MAGIC_NUMBER + (0b11).to_bytes(4, "little")
    staged = bundle.with_suffix(".staged.zip")
    compiled = 0
    try:
        with zipfile.ZipFile(bundle) as sources, zipfile.ZipFile(staged, "w") as out:
            for entry in sources.infolist():
                if "/__pycache__/" in f"/{entry.filename}":
                    continue
                data = sources.read(entry)
                out.writestr(entry, data)
                code = _compiled(entry.filename, data)
                if code is None:
                    continue
                folder, _, name = entry.filename.rpartition("/")
                cached = f"{folder}/__pycache__/{name[:-3]}.{tag}.pyc".lstrip("/")
                pyc = zipfile.ZipInfo(cached, date_time=entry.date_time)
                pyc.external_attr = entry.external_attr
                pyc.compress_type = zipfile.ZIP_DEFLATED
                out.writestr(pyc, header + importlib.util.source_hash(data) + marshal.dumps(code))
                compiled += 1
        staged.replace(bundle)
    finally:
        staged.unlink(missing_ok=True)
    return compiled


def _compiled(filename: str, source: bytes) -> Optional[CodeType]:
    """The module's code as the runtime compiles it (no -O, no __future__ of
    this file); None for what is not a module, or does not compile (a
    dependency's file for another Python, which its import would refuse as well)."""
    if not filename.endswith(".py"):
        return None
    try:
        return compile(source, filename, "exec", dont_inherit=True, optimize=0)
    except SyntaxError:
        return None


def other_methods_reach_the_function(template: dict[str, Any]) -> None:
    """API Gateway answers a method a path does not define as a missing route
    (404 here), where the app, and `make run`, answer 405 with an Allow header,
    as the OpenAPI document says. Every path's other methods (API Gateway's
    ANY, which the defined ones take precedence over) go to the function too,
    which answers them so."""
    definition = template["Resources"][REST_API]["Properties"]["DefinitionBody"]
    for methods in definition["paths"].values():
        proxied = [
            operation
            for operation in methods.values()
            if operation.get("x-amazon-apigateway-integration", {}).get("type") == "aws_proxy"
        ]
        if proxied and ANY_METHOD not in methods:
            methods[ANY_METHOD] = {
                key: json.loads(json.dumps(value))
                for key, value in proxied[0].items()
                if key in ("parameters", "responses", "x-amazon-apigateway-integration")
            }


def preflights_allow_the_origin(template: dict[str, Any]) -> None:
    """API Gateway answers a browser's CORS preflight (OPTIONS) itself, with the
    headers chalice wrote into the definition: the allowed origin the app had
    while it was packaged ("null" in jwt mode), not the stack's. Each preflight
    names the CorsOrigin parameter instead, as the gateway responses do."""
    definition = template["Resources"][REST_API]["Properties"]["DefinitionBody"]
    for methods in definition["paths"].values():
        preflight = methods.get("options", {}).get("x-amazon-apigateway-integration", {})
        for response in preflight.get("responses", {}).values():
            parameters = response.get("responseParameters", {})
            if PREFLIGHT_ORIGIN in parameters:
                parameters[PREFLIGHT_ORIGIN] = GATEWAY_CORS["Headers"][
                    "Access-Control-Allow-Origin"
                ]


def check_authenticates(template: dict[str, Any], stage: str) -> None:
    """Refuse a public stage whose function would trust whatever callers say."""
    variables = template["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]
    mode = str(variables.get("WORKFLOW_AUTH", "none")).strip().lower()
    if stage in PUBLIC_STAGES and mode != "jwt":
        raise RuntimeError(
            f"The {stage!r} stage would run with WORKFLOW_AUTH={mode}, which trusts whoever "
            "calls: set WORKFLOW_AUTH to jwt in its environment_variables in .chalice/config.json"
        )
    if "WORKFLOW_JWT_SECRET" in variables:
        raise RuntimeError("A shared JWT secret is for local use; deploy with the JWKS URL")


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
