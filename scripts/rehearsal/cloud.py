"""moto on 127.0.0.1 (scripts/moto_server.py), enforcing IAM on the resources
each request touches, with every decision recorded, allowed or denied, with
the principal that asked; and the fixes of moto's CloudFormation that the
template needs. docs/rehearsal.md (step 2, and "What moto does not evaluate")
says what IAM evaluates here that moto alone does not, and each fix.

The server starts open (moto's default: every request allowed, as the account
that deploys), and `enforce()` turns IAM on, for every request from then on
(moto's INITIAL_NO_AUTH_ACTION_COUNT, as /moto-api/reset-auth sets it).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Optional
from unittest import mock

from scripts.moto_server import MotoServer

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's


def client(endpoint: str, service: str, **keys: str) -> Any:
    """A boto3 client of `service` at `endpoint`, with these credentials
    (aws_access_key_id, aws_secret_access_key, aws_session_token).

    Every client comes from one session: a new session loads botocore's
    endpoints and service models again, and a session per client took a
    sixth of a rehearsal's time. Each client keeps the credentials it was
    made with; the lock is there because a session is not safe to make
    clients from on two threads at once (a client, once made, is)."""
    with _making_clients:
        return _session().client(service, endpoint_url=endpoint, region_name=REGION, **keys)


_making_clients = threading.Lock()


@functools.cache
def _session() -> Any:
    import boto3

    return boto3.session.Session()


# Any credentials do while the requests are the account's own (as_account).
ACCOUNT_KEYS = {"aws_access_key_id": "rehearsal", "aws_secret_access_key": "rehearsal"}
# (IAM action without its service, resource ARN) pairs one request needs.
Checks = list[tuple[str, str]]

# What a transaction's item is authorised as.
TRANSACT_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
# SQS authorises a batch as the action of each of its entries.
SQS_BATCH_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}


@dataclass(frozen=True)
class Decision:
    """One IAM evaluation: who asked, for what, and whether IAM allowed it."""

    principal: str
    action: str
    resource: str
    allowed: bool

    @property
    def role(self) -> Optional[str]:
        """The role's name, for an assumed role's session."""
        if ":assumed-role/" not in self.principal:
            return None
        return self.principal.split(":assumed-role/", 1)[1].split("/", 1)[0]


def entries_failed(request: dict[str, Any]) -> dict[str, Any]:
    """PutEvents accepting none of its entries, as EventBridge answers (200)
    when it throttles or fails them: not retried by botocore, so the relay
    sees it at once."""
    entries = request.get("Entries", [])
    failed = {"ErrorCode": "InternalFailure", "ErrorMessage": "injected by the rehearsal"}
    return {"FailedEntryCount": len(entries), "Entries": [failed for _ in entries]}


# DynamoDB's answer (500) when it fails inside, which botocore retries.
SERVER_ERROR = {
    "__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
    "message": "injected by the rehearsal",
}


def _body(handler: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(handler.raw_body or b"{}")
    except (ValueError, TypeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _arn(handler: Any, service: str, rest: str) -> str:
    return f"arn:aws:{service}:{handler.region}:{handler.current_account}:{rest}"


def _table(handler: Any, name: str) -> str:
    return name if name.startswith("arn:") else _arn(handler, "dynamodb", f"table/{name}")


def dynamodb_checks(handler: Any, action: str) -> Checks:
    body = _body(handler)
    if action == "TransactWriteItems" or action == "TransactGetItems":
        checks = []
        for item in body.get("TransactItems", []):
            ((kind, request),) = item.items()
            checks.append((TRANSACT_ITEM_ACTIONS[kind], _table(handler, request["TableName"])))
        return checks
    if action in ("BatchGetItem", "BatchWriteItem"):
        return [(action, _table(handler, name)) for name in body.get("RequestItems", {})]
    if "TableName" not in body:
        return [(action, "*")]
    table = _table(handler, body["TableName"])
    if action in ("Query", "Scan") and body.get("IndexName"):
        return [(action, f"{table}/index/{body['IndexName']}")]
    return [(action, table)]


def streams_checks(handler: Any, action: str) -> Checks:
    body = _body(handler)
    if "StreamArn" in body:
        return [(action, body["StreamArn"])]
    if action == "GetRecords":
        from moto.dynamodbstreams.models import dynamodbstreams_backends

        backend = dynamodbstreams_backends[handler.current_account][handler.region]
        iterator = backend.shard_iterators.get(body.get("ShardIterator", ""))
        if iterator is not None:
            table = iterator.stream_shard.table
            return [(action, f"{table.table_arn}/stream/{table.latest_stream_label}")]
        return [(action, "*")]
    if action == "ListStreams" and "TableName" in body:
        # Taken to be the table's streams (docs/rehearsal.md, "What moto does not evaluate").
        return [(action, _table(handler, body["TableName"]) + "/stream/*")]
    return [(action, "*")]


def ssm_checks(handler: Any, action: str) -> Checks:
    body = _body(handler)
    names = body.get("Names") or ([body["Name"]] if "Name" in body else [])
    if not names:
        return [(action, "*")]
    return [
        (action, _arn(handler, "ssm", "parameter" + ("" if n.startswith("/") else "/") + n))
        for n in names
    ]


def ses_checks(handler: Any, action: str) -> Checks:
    """SES authorises a SendEmail as the identity it sends from: here the
    sender's domain (the notifier's MailIdentity)."""
    if action != "SendEmail":
        return [(action, "*")]
    sender = str(_body(handler).get("FromEmailAddress", ""))
    domain = sender.rpartition("@")[2]
    return [(action, _arn(handler, "ses", f"identity/{domain}"))]


def events_checks(handler: Any, action: str) -> Checks:
    if action != "PutEvents":
        return [(action, "*")]
    buses = {entry.get("EventBusName") or "default" for entry in _body(handler).get("Entries", [])}
    return [
        (action, bus if bus.startswith("arn:") else _arn(handler, "events", f"event-bus/{bus}"))
        for bus in sorted(buses)
    ]


def logs_checks(handler: Any, action: str) -> Checks:
    body = _body(handler)
    if "logGroupName" not in body:
        return [(action, "*")]
    stream = body.get("logStreamName", "*")
    return [
        (action, _arn(handler, "logs", f"log-group:{body['logGroupName']}:log-stream:{stream}"))
    ]


# X-Ray's REST paths, which moto names by their last segment.
XRAY_ACTIONS = {"TraceSegments": "PutTraceSegments", "TelemetryRecords": "PutTelemetryRecords"}


class Cloud(MotoServer):
    """moto on 127.0.0.1 (a free port), one request at a time, with faults
    (scripts/moto_server.py), and IAM as above."""

    def __init__(self) -> None:
        import logging

        # One line per request on standard error would drown the rehearsal's report.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        _fix_moto()
        super().__init__()
        self.decisions: list[Decision] = []
        self._lock = threading.Lock()
        _CLOUDS.append(self)

    def __enter__(self) -> Cloud:
        from moto.moto_api import _internal

        # moto's state is the process's: this account starts empty.
        _internal.models.moto_api_backend.reset()
        super().__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        _CLOUDS.remove(self)
        if not _CLOUDS:
            _FIXES.close()

    def enforce(self) -> None:
        """Every request from now on is authenticated and authorised."""
        self._reset_auth(0)

    @contextlib.contextmanager
    def as_account(self) -> Iterator[None]:
        """Requests in the block are the account's own, as a deploy's are: moto
        checks none (nor a role's trust policy, which names Lambda's service,
        when the rehearsal assumes the role as Lambda would)."""
        self._reset_auth(float("inf"))
        try:
            yield
        finally:
            self.enforce()

    def account_client(self, service: str) -> Any:
        """A client with any keys: while `as_account`, the account's own."""
        return client(self.endpoint, service, **ACCOUNT_KEYS)

    def _reset_auth(self, count: float) -> None:
        """What moto's /moto-api/reset-auth does (the server runs in this process)."""
        from moto import settings
        from moto.core.authorization import ActionAuthenticatorMixin

        settings.INITIAL_NO_AUTH_ACTION_COUNT = count
        ActionAuthenticatorMixin.request_count = 0

    def denials(self, since: int = 0) -> list[Decision]:
        with self._lock:
            return [d for d in self.decisions[since:] if not d.allowed]

    def record(self, decision: Decision) -> None:
        with self._lock:
            self.decisions.append(decision)


# The server whose decisions a request is recorded in (one at a time).
_CLOUDS: list[Cloud] = []
# Each fix, undone when the last server closes: moto in this process (a test's
# mock_aws, say) is moto's own again.
_FIXES = contextlib.ExitStack()


def _patch(owner: Any, name: str, value: Any) -> None:
    _FIXES.enter_context(mock.patch.object(owner, name, value, create=True))


def _fix_moto() -> None:
    """Install the IAM evaluation and the CloudFormation fixes, while a server runs."""
    if _CLOUDS:
        return
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    # As they were, once the fixes are undone.
    _patch(settings, "INITIAL_NO_AUTH_ACTION_COUNT", settings.INITIAL_NO_AUTH_ACTION_COUNT)
    _patch(ActionAuthenticatorMixin, "request_count", ActionAuthenticatorMixin.request_count)
    _authorise_resources()
    _fix_cloudformation()


def _authorise_resources() -> None:
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.events.responses import EventsHandler
    from moto.iam.access_control import IAMRequest
    from moto.logs.responses import LogsResponse
    from moto.sesv2.responses import SESV2Response
    from moto.sqs.responses import SQSResponse
    from moto.ssm.responses import SimpleSystemManagerResponse
    from moto.xray.responses import XRayResponse
    from werkzeug.exceptions import HTTPException

    by_handler: dict[type, Callable[[Any, str, str], Checks]] = {
        DynamoHandler: lambda handler, action, _: dynamodb_checks(handler, action),
        DynamoDBStreamsHandler: lambda handler, action, _: streams_checks(handler, action),
        SimpleSystemManagerResponse: lambda handler, action, _: ssm_checks(handler, action),
        EventsHandler: lambda handler, action, _: events_checks(handler, action),
        LogsResponse: lambda handler, action, _: logs_checks(handler, action),
        SQSResponse: lambda _, action, on: [(SQS_BATCH_ACTIONS.get(action, action), on)],
        XRayResponse: lambda _, action, on: [(XRAY_ACTIONS.get(action, action), "*")],
        SESV2Response: lambda handler, action, _: ses_checks(handler, action),
    }

    def checks_of(handler: Any, action: str, resource: str) -> Checks:
        check = next((c for kind, c in by_handler.items() if isinstance(handler, kind)), None)
        return [(action, resource)] if check is None else check(handler, action, resource)

    def authorise(handler: Any, resource: str = "*") -> None:
        if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
            ActionAuthenticatorMixin.request_count += 1
            return
        if handler.headers.get("X-Amz-Target") in ActionAuthenticatorMixin.PUBLIC_OPERATIONS:
            return
        action = handler._get_action()
        query = urllib.parse.urlparse(handler.uri).query
        path = handler.raw_path + ("?" + query if query else "")
        for checked, on in checks_of(handler, action, resource) or [(action, resource)]:
            request = IAMRequest(
                account_id=handler.current_account,
                method=handler.method,
                path=path,
                data=handler.data,
                body=handler.raw_body,
                headers=handler.headers,
                action=checked,
            )
            request.check_signature()
            decision = Decision(request._access_key.arn, request._action, on, allowed=True)
            try:
                request.check_action_permitted(on)
            except HTTPException:
                for cloud in _CLOUDS:
                    cloud.record(Decision(decision.principal, decision.action, on, False))
                raise
            for cloud in _CLOUDS:
                cloud.record(decision)

    _patch(ActionAuthenticatorMixin, "_authenticate_and_authorize_normal_action", authorise)


def _fix_cloudformation() -> None:
    import moto.cloudformation.parsing as parsing
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.table import Table
    from moto.events.models import EventBus
    from moto.iam.models import Role
    from moto.logs.models import LogGroup

    clean_json = parsing.clean_json

    def without_no_value(resource_json: Any, resources_map: Any) -> Any:
        # CloudFormation drops a list element that is AWS::NoValue (a policy
        # statement under Fn::If); moto keeps a null there.
        if isinstance(resource_json, list):
            cleaned = (clean_json(value, resources_map) for value in resource_json)
            return [value for value in cleaned if value is not None]
        return clean_json(resource_json, resources_map)

    _patch(parsing, "clean_json", without_no_value)

    # Ref on an event bus is its name; moto gives the object itself.
    _patch(EventBus, "physical_resource_id", property(lambda bus: bus.name))

    # Fn::GetAtt Arn of a log group ends in ":*" (it covers the group's streams).
    log_group_attribute = LogGroup.get_cfn_attribute

    def log_group_arn(group: Any, attribute_name: str) -> str:
        value = log_group_attribute(group, attribute_name)
        return value if attribute_name != "Arn" or value.endswith(":*") else value + ":*"

    _patch(LogGroup, "get_cfn_attribute", log_group_arn)

    # A role's inline policies are JSON documents; moto stores the dict's repr.
    create_role = Role.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def role_from_template(cls: Any, name: str, cfn: dict[str, Any], *args: Any, **kw: Any) -> Any:
        cfn = copy.deepcopy(cfn)
        for policy in cfn.get("Properties", {}).get("Policies", []):
            if not isinstance(policy["PolicyDocument"], str):
                policy["PolicyDocument"] = json.dumps(policy["PolicyDocument"])
        return create_role(cls, name, cfn, *args, **kw)

    _patch(Role, "create_from_cloudformation_json", classmethod(role_from_template))

    # moto's CloudFormation ignores a table's TimeToLiveSpecification.
    create_table = Table.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def table_from_template(cls: Any, name: str, cfn: dict[str, Any], *args: Any, **kw: Any) -> Any:
        table = create_table(cls, name, cfn, *args, **kw)
        account_id, region_name = args[0], args[1]
        spec = cfn.get("Properties", {}).get("TimeToLiveSpecification")
        if spec:
            dynamodb_backends[account_id][region_name].update_time_to_live(table.name, spec)
        return table

    _patch(Table, "create_from_cloudformation_json", classmethod(table_from_template))
