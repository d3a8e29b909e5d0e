"""One rehearsal (docs/rehearsal.md): `Environment`, what every stack shares (moto,
TLS, the issuer, the account's parameters); `Run`, one stack of the template
driven through its triggers against `make run` (or its recorded answers), judged.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from botocore.exceptions import ClientError

from scripts.moto_server import Fault
from scripts.rehearsal import template as tpl
from scripts.rehearsal.cloud import ACCOUNT, SERVER_ERROR, Cloud, Decision, entries_failed
from scripts.rehearsal.gateway import Answer, Gateway, HttpGateway
from scripts.rehearsal.local import Issuer, MakeRun, Receiver, certificate
from scripts.rehearsal.runtime import Container, Invocation, check_imports
from scripts.rehearsal.scenario import (
    Conversation,
    Exchange,
    Side,
    compare_json,
    wait_while_growing,
)
from scripts.rehearsal.sources import QueueSource, Report, StreamSource, scheduled_event
from scripts.rehearsal.stack import Stack
from scripts.rehearsal.walk import CALLERS, ORIGIN, walk

CURSOR_PARAMETER = "/approval-workflows/cursor-secret"
WEBHOOK_PARAMETER = "/approval-workflows/webhook-secret"
SLACK_TOKEN_PARAMETER = "/approval-workflows/slack-token"  # the stack's SlackTokenParameter
SLACK_SECRET_PARAMETER = "/approval-workflows/slack-signing-secret"  # SlackSigningSecretParameter
# The template's MailIdentity default, and the function that mails (app.notify_people).
MAIL_IDENTITY = "example.com"
NOTIFIER = "NotifyPeople"
# Lines in a function's log that fail the rehearsal wherever they appear.
ALARMS = re.compile(r"Traceback|AccessDenied|ModuleNotFoundError|ImportError| ERROR[: ]")
# The webhook queue is drained until it is empty; it is stuck if its messages stay
# hidden, none to receive, this long: longer than the hide of any retry a rehearsal
# makes (5, 10, 20 s). Not a bound on the whole drain: docs/rehearsal.md, "The same
# verdict on a busy machine".
DRAIN_IDLE_SECONDS = 40.0
# make run's deliveries must reach the stack's; they are late if they stop
# growing this long.
LOCAL_IDLE_SECONDS = 30.0
# Each exchange in a line, each source's time, a failed function's last lines.
VERBOSE = os.environ.get("REHEARSAL_VERBOSE") == "1"


class Stop(Exception):
    """A run stops early: the mutation it checks has bitten."""


@dataclass
class Outcome:
    stack: str
    failures: list[str] = field(default_factory=list)
    denials: list[Decision] = field(default_factory=list)
    invocations: dict[str, int] = field(default_factory=dict)
    allowed: dict[str, set[str]] = field(default_factory=dict)  # role -> actions IAM allowed it
    seconds: float = 0.0
    stopped_early: bool = False
    requests: int = 0
    reference: Optional[Reference] = None

    @property
    def passed(self) -> bool:
        return not self.failures and not self.denials


@dataclass
class Reference:
    """What `make run` answered, for runs that do not start it again."""

    answers: dict[str, Exchange]
    events: list[dict[str, Any]]


class Environment:
    """What every stack of one rehearsal shares."""

    def __init__(
        self,
        project: Path,
        code: bytes,
        runtime_dir: Path,
        work: Path,
        api_type: Optional[str] = None,
    ) -> None:
        self.project = project
        # The stack's ApiType (None: the template's default, the HTTP API).
        self.api_type = api_type
        self.code = code
        self.runtime_dir = runtime_dir
        self.work = work
        self.tls = certificate(work)
        self.cloud = Cloud().__enter__()
        self.issuer = Issuer(self.tls)
        self.tokens = {name: self.issuer.token(name, groups) for name, groups in CALLERS.items()}
        self.cursor_secret = secrets.token_hex(32)
        self.webhook_secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        self.slack_token = "xoxb-rehearsal-" + secrets.token_hex(16)
        self.slack_secret = secrets.token_hex(16)
        with self.cloud.as_account():
            ssm = self.cloud.account_client("ssm")
            # Outside the stack, once per account (docs/deploy.md, "Deploy to an AWS account").
            for name, value in (
                (CURSOR_PARAMETER, self.cursor_secret),
                (WEBHOOK_PARAMETER, self.webhook_secret),
                (SLACK_TOKEN_PARAMETER, self.slack_token),
                (SLACK_SECRET_PARAMETER, self.slack_secret),
            ):
                ssm.put_parameter(Name=name, Type="SecureString", Value=value)
            # The identity the notifier sends as (the stack's MailIdentity), verified.
            sesv2 = self.cloud.account_client("sesv2")
            sesv2.create_email_identity(EmailIdentity=MAIL_IDENTITY)
        self.stacks = 0

    def make_run(self, receiver: Receiver) -> MakeRun:
        return MakeRun(
            self.project,
            {
                "WORKFLOW_AUTH": "jwt",
                "WORKFLOW_JWT_ISSUER": self.issuer.url,
                "WORKFLOW_JWKS_URL": self.issuer.jwks_url,
                "WORKFLOW_CORS_ORIGIN": ORIGIN,
                "WORKFLOW_SQLITE_PATH": str(self.work / "make-run.sqlite3"),
                "WORKFLOW_WEBHOOK_URL": receiver.url,
                "WORKFLOW_WEBHOOK_SECRET": self.webhook_secret,
                "WORKFLOW_CURSOR_SECRET": self.cursor_secret,
                "WORKFLOW_SLACK_TOKEN": self.slack_token,
                "WORKFLOW_SLACK_SIGNING_SECRET": self.slack_secret,
                "WORKFLOW_SWEEP_SECONDS": "1",
                "SSL_CERT_FILE": str(self.tls[0]),
            },
            self.work / "make-run.log",
        )

    def close(self) -> None:
        self.issuer.close()
        self.cloud.__exit__(None, None, None)


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


class Run:
    """One stack of the template, and one pass over the scenario."""

    def __init__(
        self,
        env: Environment,
        body: dict[str, Any],
        reference: Optional[Reference] = None,
        watch: Optional[tpl.Mutation] = None,
    ) -> None:
        from moto.cloudformation.parsing import get_model_map

        env.stacks += 1
        self.env = env
        self.reference = reference
        self.watch = watch
        self.template = tpl.Template.split(body, set(get_model_map()))
        self.outcome = Outcome(f"rehearsal-{env.stacks}")
        self.containers: dict[str, Container] = {}
        self.reports: dict[str, Report] = {}
        self.local: Optional[MakeRun] = None
        self._first_decision = len(env.cloud.decisions)

    # -- the stack and its parts ---------------------------------------------------

    def _parameters(self, receiver: Receiver) -> dict[str, str]:
        given = {
            "JwtIssuer": self.env.issuer.url,
            "JwksUrl": self.env.issuer.jwks_url,
            "CorsOrigin": ORIGIN,
            "WebhookUrl": receiver.url,
            "SlackTokenParameter": SLACK_TOKEN_PARAMETER,
            "SlackSigningSecretParameter": SLACK_SECRET_PARAMETER,
        }
        if self.env.api_type is not None:
            given["ApiType"] = self.env.api_type
        for name, value in given.items():
            declared = self.template.body["Parameters"][name]
            pattern = declared.get("AllowedPattern")
            if pattern and not re.fullmatch(pattern, value):
                raise tpl.TemplateError(f"{name}={value} does not match {pattern}")
            allowed = declared.get("AllowedValues")
            if allowed is not None and value not in allowed:
                raise tpl.TemplateError(f"{name}={value} is not one of {allowed}")
        return given

    def container(self, function: str) -> Container:
        if function not in self.containers:
            spec = self.stack.functions[function]
            self.containers[function] = Container(
                spec,
                self.task_root,
                self.env.runtime_dir,
                self.stack.credentials[spec.role],
                self.env.work / self.outcome.stack,
                # What the rehearsal adds to Lambda's variables: where AWS is, whom TLS trusts.
                {
                    "AWS_ENDPOINT_URL": self.env.cloud.endpoint,
                    "SSL_CERT_FILE": str(self.env.tls[0]),
                },
            )
        return self.containers[function]

    def invoke(self, function: str, event: Any) -> Invocation:
        invocation = self.container(function).invoke(event)
        self.outcome.invocations[function] = self.outcome.invocations.get(function, 0) + 1
        if invocation.error is not None and VERBOSE:
            print("\n".join(f"    | {line}" for line in invocation.lines[-40:]), flush=True)
        for line in invocation.lines:
            if ALARMS.search(line):
                self.outcome.failures.append(f"{function} logged: {line.strip()[:300]}")
        if invocation.shipping_error:
            self.outcome.failures.append(f"{function}: {invocation.shipping_error}")
        self._check_watch()
        return invocation

    def _check_watch(self) -> None:
        """A mutation run stops at the first denial of the action it removed."""
        if self.watch is None or not hasattr(self, "stack"):
            return
        roles = {self.stack.physical[role] for role in self.watch.roles}
        for denial in self.env.cloud.denials(self._first_decision):
            if denial.action == self.watch.action and denial.role in roles:
                raise Stop()

    # -- the run ----------------------------------------------------------------

    def execute(self) -> Outcome:
        started = time.monotonic()
        receiver = Receiver(self.env.webhook_secret, self.env.tls, refuse=RefuseOnce())
        local_receiver: Optional[Receiver] = None
        try:
            self.stack = Stack(
                self.env.cloud, self.template, self.outcome.stack, self._parameters(receiver)
            )
            self.stack.deploy(self.env.code)
            self.task_root = self.stack.unzip(
                next(iter(sorted(self.stack.functions))),
                self.env.work / self.outcome.stack / "task",
            )
            before = _tree(self.task_root)
            if self.reference is None:
                self._check_imports()
                local_receiver = Receiver(self.env.webhook_secret, self.env.tls)
                self.local = self.env.make_run(local_receiver)
            conversation = self._conversation()
            try:
                walk(conversation, self)
            except Stop:
                self.outcome.stopped_early = True
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                # An answer lacked what the next request needs (an id, a cursor).
                self.outcome.failures.append(
                    f"the scenario stopped after {conversation.asked} requests: "
                    f"{type(exc).__name__} {exc}"
                )
                self.outcome.stopped_early = True
            self.outcome.requests = conversation.asked
            self.outcome.failures += [f"answers differ: {m}" for m in conversation.mismatches]
            if not self.outcome.stopped_early:
                self._final_checks(receiver, local_receiver, conversation)
                if _tree(self.task_root) != before:
                    self.outcome.failures.append(
                        "a function wrote into its package folder (read-only on Lambda)"
                    )
        except Stop:
            self.outcome.stopped_early = True
        except (ClientError, tpl.TemplateError, RuntimeError) as exc:
            self.outcome.failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            for container in self.containers.values():
                container.stop()
            if self.local is not None:
                self.local.stop()
            receiver.close()
            if local_receiver is not None:
                local_receiver.close()
            shutil.rmtree(self.env.work / self.outcome.stack, ignore_errors=True)
        decisions = self.env.cloud.decisions[self._first_decision :]
        self.outcome.denials = [d for d in decisions if not d.allowed]
        for decision in decisions:
            if decision.allowed and decision.role is not None:
                self.outcome.allowed.setdefault(decision.role, set()).add(decision.action)
        self.outcome.seconds = time.monotonic() - started
        return self.outcome

    def _check_imports(self) -> None:
        found = check_imports(self.task_root, self.env.runtime_dir)
        self.outcome.failures += [f"import: {f}" for f in found["failures"]]
        outside = [
            p
            for p in found["path"]
            if p not in (str(self.task_root), str(self.env.runtime_dir))
            and ("site-packages" in p or str(self.env.project) in p)
        ]
        if outside:
            self.outcome.failures.append(
                f"the functions' path reaches outside the package: {outside}"
            )

    def _conversation(self) -> Conversation:
        gateway = self._gateway()
        self.gateway = gateway
        base = gateway.base

        def deployed(
            method: str, path: str, headers: dict[str, str], body: Optional[bytes]
        ) -> tuple[int, dict[str, str], bytes]:
            stage_path = path.removeprefix(base) if base and path.startswith(f"{base}/") else path
            answer: Answer = gateway.request(method, stage_path, headers, body)
            return answer.status, answer.headers, answer.body

        if self.local is not None:
            send_local = self.local.request
        else:
            assert self.reference is not None
            recorded = self.reference.answers
            order = iter(list(recorded.values()))

            def replayed(
                method: str, path: str, headers: Mapping[str, str], body: Optional[bytes]
            ) -> tuple[int, dict[str, str], bytes]:
                exchange = next(order)
                return exchange.status, exchange.headers, exchange.body

            send_local = replayed
        conversation = Conversation(
            Side("make run", "", "dev", send_local),
            Side("stack", base, "prod", deployed),
            self.env.tokens,
            ORIGIN,
        )
        conversation.after_each = self._check_watch
        conversation.verbose = VERBOSE
        return conversation

    def _gateway(self) -> Gateway | HttpGateway:
        """The API the stack has (ApiType): the REST API, or the HTTP API, in front
        of the function its integration names."""
        permissions = list(self.stack.of_type("AWS::Lambda::Permission").values())
        rest = self.stack.of_type("AWS::ApiGateway::RestApi")
        http = self.stack.of_type("AWS::ApiGatewayV2::Api")
        if len(rest) + len(http) != 1:
            raise tpl.TemplateError(
                f"the stack has {len(rest)} REST and {len(http)} HTTP APIs, not one API"
            )
        ((api_name, api),) = {**rest, **http}.items()
        api_id = self.stack.physical[api_name]
        integrations = {
            self.stack.physical[name]: integration
            for name, integration in self.stack.of_type("AWS::ApiGatewayV2::Integration").items()
        }
        uris = {integration["IntegrationUri"] for integration in integrations.values()} or {
            operation["x-amazon-apigateway-integration"]["uri"]
            for methods in api.get("Body", {}).get("paths", {}).values()
            for operation in methods.values()
            if operation["x-amazon-apigateway-integration"]["type"] == "aws_proxy"
        }
        (uri,) = uris
        (function,) = (n for n, f in self.stack.functions.items() if f.arn in uri)
        invoke = functools.partial(self._api_invocation, function)
        arn = self.stack.functions[function].arn
        if rest:
            (stage,) = self.stack.of_type("AWS::ApiGateway::Stage").values()
            types = api.get("EndpointConfiguration", {}).get("Types", [])
            return Gateway(api["Body"], stage["StageName"], api_id, invoke, arn, permissions, types)
        (stage,) = self.stack.of_type("AWS::ApiGatewayV2::Stage").values()
        routes = list(self.stack.of_type("AWS::ApiGatewayV2::Route").values())
        return HttpGateway(
            api_id, stage["StageName"], routes, integrations, invoke, arn, permissions
        )

    def _api_invocation(
        self, function: str, event: dict[str, Any]
    ) -> tuple[Any, Optional[dict[str, Any]]]:
        invocation = self.invoke(function, event)
        if invocation.error is not None:
            error = invocation.error
            self.outcome.failures.append(
                f"{function} failed: {error.get('errorType')}: {error.get('errorMessage')}"
            )
        return invocation.result, invocation.error

    # -- the event sources --------------------------------------------------------

    def _source(self, service: str, besides: str = "") -> tuple[str, dict[str, Any]]:
        """The function a mapping on `service` (":sqs:") triggers (but
        `besides`), and the mapping."""
        ((name, mapping),) = (
            (n, m)
            for n, f in self.stack.functions.items()
            for m in self.stack.of_type("AWS::Lambda::EventSourceMapping").values()
            if m["FunctionName"] == f.name and service in m["EventSourceArn"] and n != besides
        )
        return name, mapping

    @functools.cached_property
    def stream(self) -> StreamSource:
        relay, mapping = self._source(":dynamodb:")
        role = self.stack.functions[relay].role
        return StreamSource(
            mapping,
            lambda event: self.invoke(relay, event),
            self.stack.role_client(role, "dynamodbstreams"),
            self.stack.role_client(role, "sqs"),
            self._queue_url,
        )

    @functools.cached_property
    def queue(self) -> QueueSource:
        sender, mapping = self._source(":sqs:", besides=NOTIFIER)
        return QueueSource(
            mapping,
            lambda event: self.invoke(sender, event),
            self.stack.role_client(self.stack.functions[sender].role, "sqs"),
            self._queue_url(mapping["EventSourceArn"]),
        )

    @functools.cached_property
    def notifications(self) -> QueueSource:
        """The notifier's mapping on its queue; each email it sent counted."""
        _, mapping = self._source(":sqs:", besides="DeliverWebhooks")

        def invoked(event: Any) -> Invocation:
            invocation = self.invoke(NOTIFIER, event)
            self.mailed += sum(" INFO: sent " in line for line in invocation.lines)
            return invocation

        self.mailed = 0
        return QueueSource(
            mapping,
            invoked,
            self.stack.role_client(self.stack.functions[NOTIFIER].role, "sqs"),
            self._queue_url(mapping["EventSourceArn"]),
        )

    def _queue_url(self, arn: str) -> str:
        name = arn.rsplit(":", 1)[1]
        return f"{self.env.cloud.endpoint}/{ACCOUNT}/{name}"

    def _timed(self, what: str, started: float) -> None:
        if VERBOSE:
            print(f"  [{what}: {time.monotonic() - started:.1f} s]", flush=True)

    def relay(self, expect_failures: bool = False) -> None:
        started = time.monotonic()
        report = self.reports.setdefault("stream", Report())
        self.stream.poll(report, expect_failures)
        self._timed("relay", started)
        self._check_watch()

    def fail_put_events(self, count: int) -> None:
        """The next `count` PutEvents accept none of their entries."""
        self.env.cloud.inject("PutEvents", Fault(200, entries_failed, remaining=count))

    def fail_transactions(self, count: int) -> None:
        """The next `count` TransactWriteItems fail as DynamoDB does when it has
        an internal error (500, retried by botocore, then a 503 to the client)."""
        self.env.cloud.inject("TransactWriteItems", Fault(500, SERVER_ERROR, remaining=count))

    def sweep(self) -> None:
        """The event the schedule's rule sends its function, if a Permission lets it."""
        ((name, rule),) = (
            (n, r)
            for n, r in self.stack.of_type("AWS::Events::Rule").items()
            if "ScheduleExpression" in r
        )
        (target,) = rule["Targets"]
        (function,) = (n for n, f in self.stack.functions.items() if f.arn == target["Arn"])
        rule_arn = self.stack.resolve.get_attribute(name, "Arn")
        if not any(
            p.get("Principal") == "events.amazonaws.com"
            and p.get("SourceArn") == rule_arn
            and p.get("FunctionName") == self.stack.functions[function].name
            for p in self.stack.of_type("AWS::Lambda::Permission").values()
        ):
            self.outcome.failures.append(
                "no permission lets the schedule's rule invoke the sweeper"
            )
            return
        invocation = self.invoke(function, scheduled_event(rule_arn))
        if invocation.error is not None:
            self.outcome.failures.append(f"the sweeper failed: {invocation.error}")

    def drain(self) -> None:
        started = time.monotonic()
        report = self.reports.setdefault("queue", Report())
        if not self.queue.drain(report, DRAIN_IDLE_SECONDS):
            self.outcome.failures.append(
                "the webhook queue still held messages, hidden, none to receive for "
                f"{DRAIN_IDLE_SECONDS:.0f} s"
            )
        self._timed("drain", started)
        self._check_watch()

    def notify(self) -> None:
        """The notifier's queue to the notifier, until empty: mail through SES."""
        started = time.monotonic()
        report = self.reports.setdefault("notifications", Report())
        if not self.notifications.drain(report, DRAIN_IDLE_SECONDS):
            self.outcome.failures.append("the notification queue still held messages")
        if not self.mailed:
            self.outcome.failures.append("the notifier sent no email")
        self._timed("notify", started)
        self._check_watch()

    # -- the end ------------------------------------------------------------------

    def _final_checks(
        self, receiver: Receiver, local_receiver: Optional[Receiver], conversation: Conversation
    ) -> None:
        for report in self.reports.values():
            self.outcome.failures += report.failures
        stream_report = self.reports.get("stream", Report())
        if stream_report.dead_letters != 1:
            self.outcome.failures.append(
                f"{stream_report.dead_letters} batches went to the relay's dead-letter queue, "
                "1 expected"
            )
        else:
            destination = self.stream.mapping["DestinationConfig"]["OnFailure"]["Destination"]
            with self.env.cloud.as_account():  # the rehearsal's own read
                sqs = self.env.cloud.account_client("sqs")
                queue = self._queue_url(destination)
                answer = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)
            messages = answer.get("Messages", [])
            infos = [json.loads(m["Body"]).get("DDBStreamBatchInfo", {}) for m in messages]
            if len(infos) != 1 or infos[0].get("streamArn") != self.stream.stream_arn:
                self.outcome.failures.append(f"the relay's dead-letter queue holds {infos}")
        if receiver.unsigned():
            self.outcome.failures.append(
                f"{len(receiver.unsigned())} webhook deliveries were not signed with the secret"
            )
        if not any(got.status >= 500 for got in receiver.received):
            self.outcome.failures.append(
                "the receiver never refused a delivery: the retry was not rehearsed"
            )
        deployed_events = _by_subject(receiver.delivered())
        if local_receiver is not None:
            wait_while_growing(
                lambda: len(local_receiver.delivered()),
                len(receiver.delivered()),
                LOCAL_IDLE_SECONDS,
            )
            local_events = local_receiver.delivered()
            assert self.outcome.reference is None
            self.outcome.reference = Reference(dict(conversation.local.answers), local_events)
        else:
            assert self.reference is not None
            local_events = self.reference.events
        for problem in compare_json(_by_subject(local_events), deployed_events, "events"):
            self.outcome.failures.append(f"delivered events differ: {problem}")
        for name in self.stack.functions:
            if not self.outcome.invocations.get(name):
                self.outcome.failures.append(f"{name} was never invoked")


class RefuseOnce:
    """The receiver fails the first delivery of the first run completed, and no
    other: the sender must mark it failed, hide its message until the retry is
    due, and deliver it then, with the run's later events after it."""

    def __init__(self) -> None:
        self.refused: Optional[str] = None

    def __call__(self, event: dict[str, Any], attempt: int) -> bool:
        if self.refused is None and event.get("type") == "approval.run.completed":
            self.refused = str(event.get("id"))
            return True
        return False


def _by_subject(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    subjects: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        subjects.setdefault(event["subject"], []).append(event)
    return {s: sorted(e, key=lambda e: e["sequence"]) for s, e in sorted(subjects.items())}
