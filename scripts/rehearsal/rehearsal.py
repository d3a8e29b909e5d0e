"""One rehearsal: a stack of the template on the rehearsal's moto, driven through
its triggers, against `make run` (or its recorded answers), and judged.

`Environment` is what every stack of a rehearsal shares: the moto server, the
TLS certificate, the issuer, the account's SSM parameters, `make run`.
`Run` is one stack and one pass over the scenario (`walk`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from scripts.moto_server import Fault
from scripts.rehearsal import template as tpl
from scripts.rehearsal.cloud import SERVER_ERROR, Cloud, Decision, client, entries_failed
from scripts.rehearsal.gateway import Answer, Gateway, HttpGateway
from scripts.rehearsal.local import Issuer, MakeRun, Receiver, certificate
from scripts.rehearsal.runtime import Container, Invocation, check_imports
from scripts.rehearsal.scenario import (
    Conversation,
    Exchange,
    Side,
    compare_json,
    cursor_of,
    wait_for,
    wait_while_growing,
)
from scripts.rehearsal.sources import QueueSource, Report, Schedule, StreamSource
from scripts.rehearsal.stack import ACCOUNT, REGION, Stack

# A path, or a path that depends on a side's earlier answers.
Path_ = Union[str, Callable[[Side], str]]

ORIGIN = "https://approvals.example.com"
CURSOR_PARAMETER = "/approval-workflows/cursor-secret"
WEBHOOK_PARAMETER = "/approval-workflows/webhook-secret"
# The template's MailIdentity default, and the function that mails (app.notify_people).
MAIL_IDENTITY = "example.com"
NOTIFIER = "NotifyPeople"
# Who calls, and their groups (the token's groups claim).
CALLERS = {
    "ada": ("workflow-admins",),
    "rita": (),
    "maria": (),
    "finn": (),
    "cfo": (),
    "late": (),
    "mo": (),
    "ann": ("finance",),
    "gus": ("sales",),
    "fay": ("finance",),
    "dave": (),
}
# Lines in a function's log that fail the rehearsal wherever they appear.
ALARMS = re.compile(r"Traceback|AccessDenied|ModuleNotFoundError|ImportError| ERROR[: ]")
# The webhook queue is drained until it is empty; it is stuck if its messages
# stay hidden, none to receive, this long: longer than the hide of any retry
# a rehearsal makes (the first within 5 s, then 10, 20). The time the sender
# works is not counted: a loaded machine slows it down, and must not change
# the verdict (a bound on the whole drain once failed a rehearsal so).
DRAIN_IDLE_SECONDS = 40.0
# make run's deliveries must reach the stack's; they are late if they stop
# growing this long. Its sweeper (every second) must reject the deadline's run
# within LOCAL_SWEEP_SECONDS.
LOCAL_IDLE_SECONDS = 30.0
LOCAL_SWEEP_SECONDS = 60.0


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
        self.cloud.create_deployer()
        with self.cloud.as_account():
            ssm = self._account_client("ssm")
            # Outside the stack, once per account (docs/deploy.md, "Deploy to an AWS account").
            ssm.put_parameter(Name=CURSOR_PARAMETER, Type="SecureString", Value=self.cursor_secret)
            ssm.put_parameter(
                Name=WEBHOOK_PARAMETER, Type="SecureString", Value=self.webhook_secret
            )
            # The identity the notifier sends as (the stack's MailIdentity), verified.
            self._account_client("sesv2").create_email_identity(EmailIdentity=MAIL_IDENTITY)
        self.stacks = 0

    def _account_client(self, service: str) -> Any:
        return client(
            self.cloud.endpoint,
            service,
            aws_access_key_id="rehearsal",
            aws_secret_access_key="rehearsal",
        )

    def function_environment(self) -> dict[str, str]:
        """What the rehearsal adds to Lambda's variables: where AWS is, whom TLS trusts."""
        return {"AWS_ENDPOINT_URL": self.cloud.endpoint, "SSL_CERT_FILE": str(self.tls[0])}

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
                self.env.cloud.endpoint,
                REGION,
                self.env.work / self.outcome.stack,
                self.env.function_environment(),
            )
        return self.containers[function]

    def invoke(self, function: str, event: Any) -> Invocation:
        invocation = self.container(function).invoke(event)
        self.outcome.invocations[function] = self.outcome.invocations.get(function, 0) + 1
        if invocation.error is not None and os.environ.get("REHEARSAL_VERBOSE") == "1":
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
        if self.watch is None:
            return
        if not hasattr(self, "stack"):
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
        except Exception as exc:
            from botocore.exceptions import ClientError

            if not isinstance(exc, (ClientError, tpl.TemplateError, RuntimeError)):
                raise
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
        conversation.verbose = os.environ.get("REHEARSAL_VERBOSE") == "1"
        return conversation

    def _gateway(self) -> Gateway | HttpGateway:
        """The API the stack has (ApiType): the REST API, or the HTTP API."""
        permissions = list(self.stack.of_type("AWS::Lambda::Permission").values())
        rest = self.stack.of_type("AWS::ApiGateway::RestApi")
        http = self.stack.of_type("AWS::ApiGatewayV2::Api")
        if len(rest) + len(http) != 1:
            raise tpl.TemplateError(
                f"the stack has {len(rest)} REST and {len(http)} HTTP APIs, not one API"
            )
        if rest:
            ((api_name, api),) = rest.items()
            (stage,) = self.stack.of_type("AWS::ApiGateway::Stage").values()
            handler = self._handler_of_api(api["Body"])
            return Gateway(
                api["Body"],
                stage["StageName"],
                self.stack.physical[api_name],
                REGION,
                ACCOUNT,
                lambda event: self._api_invocation(handler, event),
                self.stack.functions[handler].arn,
                permissions,
                api.get("EndpointConfiguration", {}).get("Types", []),
            )
        ((api_name, _),) = http.items()
        api_id = self.stack.physical[api_name]
        (stage,) = self.stack.of_type("AWS::ApiGatewayV2::Stage").values()
        integrations = {
            self.stack.physical[name]: integration
            for name, integration in self.stack.of_type("AWS::ApiGatewayV2::Integration").items()
        }
        (uri,) = {integration["IntegrationUri"] for integration in integrations.values()}
        (function,) = (n for n, f in self.stack.functions.items() if f.arn == uri)
        return HttpGateway(
            api_id,
            stage["StageName"],
            list(self.stack.of_type("AWS::ApiGatewayV2::Route").values()),
            integrations,
            REGION,
            ACCOUNT,
            lambda event: self._api_invocation(function, event),
            self.stack.functions[function].arn,
            permissions,
        )

    def _handler_of_api(self, definition: dict[str, Any]) -> str:
        uris = {
            operation["x-amazon-apigateway-integration"]["uri"]
            for methods in definition["paths"].values()
            for operation in methods.values()
            if operation["x-amazon-apigateway-integration"]["type"] == "aws_proxy"
        }
        (uri,) = uris
        (function,) = (n for n, f in self.stack.functions.items() if f.arn in uri)
        return function

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

    def _mapping(self, function: str) -> dict[str, Any]:
        (mapping,) = (
            m
            for m in self.stack.of_type("AWS::Lambda::EventSourceMapping").values()
            if m["FunctionName"] == self.stack.functions[function].name
        )
        return mapping

    @property
    def stream(self) -> StreamSource:
        if not hasattr(self, "_stream"):
            relay = self._function_of_source(":dynamodb:")
            role = self.stack.functions[relay].role
            self._stream = StreamSource(
                self._mapping(relay),
                lambda event: self.invoke(relay, event),
                self.stack.role_client(role, "dynamodbstreams"),
                self.stack.role_client(role, "sqs"),
                self._queue_url,
            )
        return self._stream

    @property
    def queue(self) -> QueueSource:
        if not hasattr(self, "_queue"):
            sender = self._function_of_source(":sqs:", besides=NOTIFIER)
            mapping = self._mapping(sender)
            self._queue = QueueSource(
                mapping,
                lambda event: self.invoke(sender, event),
                self.stack.role_client(self.stack.functions[sender].role, "sqs"),
                self._queue_url(mapping["EventSourceArn"]),
            )
        return self._queue

    @property
    def notifications(self) -> QueueSource:
        """The notifier's mapping on its queue; each email it sent counted."""
        if not hasattr(self, "_notifications"):
            mapping = self._mapping(NOTIFIER)

            def invoked(event: Any) -> Invocation:
                invocation = self.invoke(NOTIFIER, event)
                self.mailed += sum(" INFO: sent " in line for line in invocation.lines)
                return invocation

            self.mailed = 0
            self._notifications = QueueSource(
                mapping,
                invoked,
                self.stack.role_client(self.stack.functions[NOTIFIER].role, "sqs"),
                self._queue_url(mapping["EventSourceArn"]),
            )
        return self._notifications

    def _function_of_source(self, service: str, besides: str = "") -> str:
        (name,) = (
            n
            for n, f in self.stack.functions.items()
            for m in self.stack.of_type("AWS::Lambda::EventSourceMapping").values()
            if m["FunctionName"] == f.name and service in m["EventSourceArn"] and n != besides
        )
        return name

    def _queue_url(self, arn: str) -> str:
        name = arn.rsplit(":", 1)[1]
        return f"{self.env.cloud.endpoint}/{ACCOUNT}/{name}"

    def schedule(self) -> Schedule:
        ((name, rule),) = (
            (n, r)
            for n, r in self.stack.of_type("AWS::Events::Rule").items()
            if "ScheduleExpression" in r
        )
        (target,) = rule["Targets"]
        (function,) = (n for n, f in self.stack.functions.items() if f.arn == target["Arn"])
        rule_arn = self.stack.resolve.get_attribute(name, "Arn")
        permitted = any(
            p.get("Principal") == "events.amazonaws.com"
            and p.get("SourceArn") == rule_arn
            and p.get("FunctionName") == self.stack.functions[function].name
            for p in self.stack.of_type("AWS::Lambda::Permission").values()
        )
        return Schedule(
            rule_arn,
            rule["ScheduleExpression"],
            lambda e: self.invoke(function, e),
            ACCOUNT,
            REGION,
            permitted,
        )

    def _timed(self, what: str, started: float) -> None:
        if os.environ.get("REHEARSAL_VERBOSE") == "1":
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
        schedule = self.schedule()
        if not schedule.permitted:
            self.outcome.failures.append(
                "no permission lets the schedule's rule invoke the sweeper"
            )
            return
        invocation = schedule.fire()
        assert invocation is not None
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
        """The notifier's queue to the notifier, until nothing is left: the
        requester's emails (SES, as the one identity its role may send as)."""
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
            messages = (
                self.stack.client("sqs")
                .receive_message(QueueUrl=self._queue_url(destination), MaxNumberOfMessages=10)
                .get("Messages", [])
            )
            infos = [json.loads(m["Body"]).get("DDBStreamBatchInfo", {}) for m in messages]
            if len(infos) != 1 or infos[0].get("streamArn") != self.stream.stream_arn:
                self.outcome.failures.append(f"the relay's dead-letter queue holds {infos}")
        if receiver.unsigned():
            self.outcome.failures.append(
                f"{len(receiver.unsigned())} webhook deliveries were not signed with the secret"
            )
        if not any(d.status >= 500 for d in receiver.deliveries):
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


def walk(c: Conversation, run: Run) -> None:
    """The README's walk-through, its approver rules, and the rest of what the
    stack does (lists, audits, events, safe retries, the page, a deadline)."""

    def id_of(label: str) -> Callable[[Side], int]:
        return lambda side: int(side.answers[label].json()["id"])

    def at(label: str, suffix: str = "") -> Callable[[Side], str]:
        return lambda side: f"/runs/{id_of(label)(side)}{suffix}"

    def run_of(workflow: str, title: str, **more: Any) -> Callable[[Side], dict[str, Any]]:
        return lambda side: {"workflow_id": id_of(workflow)(side), "title": title, **more}

    def after(label: str, path: Path_) -> Callable[[Side], str]:
        """`path` (a list's), from where the page `label` answered ended."""
        return lambda s: f"{path(s) if callable(path) else path}&cursor={cursor_of(label)(s)}"

    def get(label: str, path: Path_, who: Optional[str] = None, expect: int = 200) -> None:
        c.ask(label, "GET", path, who=who, expect=expect)

    def post(label: str, path: Path_, body: Any, who: str, expect: int = 201, **more: Any) -> None:
        c.ask(label, "POST", path, body, who=who, expect=expect, **more)

    def start(label: str, workflow: str, title: str, who: str, **more: Any) -> None:
        headers = more.pop("headers", None)
        post(label, "/runs", run_of(workflow, title, **more), who, headers=headers)

    def decide(label: str, run: str, action: str, who: str, expect: int = 200, **body: Any) -> None:
        """`who` decides `run` (its start's label), naming themselves as the actor."""
        post(label, at(run, f"/{action}"), {"actor": who, **body}, who, expect)

    # A deadline first, so that it passes while the rest goes on. Its step awaits
    # a group no caller here is in: whether make run's sweeper has rejected it
    # yet must not change an inbox the conversation compares.
    cab = {"name": "CAB", "approvers": ["group:change-board"], "deadline_seconds": 1}
    change = {"name": "Change", "steps": [{**cab, "on_deadline": "reject"}]}
    post("deadline workflow", "/workflows", change, "ada")
    # The requester is told of her runs' outcomes (docs/notifications.md).
    mine = {"email": "rita@example.com"}
    c.ask("rita's contact", "PUT", "/contacts/user:rita", mine, who="rita", expect=200)
    start("deadline run", "deadline workflow", "CHG-7: database upgrade", "rita")

    # The README's walk-through, each caller with a token of their own.
    purchase = {"name": "Purchase order", "steps": ["Manager", "Finance"]}
    post("po workflow", "/workflows", purchase, "ada")
    post("po step", lambda s: f"/workflows/{id_of('po workflow')(s)}/steps", {"name": "CFO"}, "ada")
    start("po run", "po workflow", "PO-1042: 12 laptops", "rita")
    decide("po approve maria", "po run", "approve", "maria", comment="Within budget")
    decide("po approve finn", "po run", "approve", "finn")
    decide("po approve cfo", "po run", "approve", "cfo")
    get("po completed", at("po run"), "rita")
    decide("po reject late", "po run", "reject", "late", 409)

    # Content and conditions: the schema validator (a native library) loads in
    # the function, and a step whose condition does not hold is skipped.
    amount = {"amount": {"type": "number", "minimum": 0}}
    schema = {"type": "object", "required": ["amount"], "properties": amount}
    tiers = ["Manager", {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}]
    tiered = {"name": "Tiered purchase", "input_schema": schema, "steps": tiers}
    post("tiered workflow", "/workflows", tiered, "ada")
    refused = run_of("tiered workflow", "PO-3001", input={"amount": -1})
    post("tiered refused", "/runs", refused, "rita", 422)
    start("tiered run", "tiered workflow", "PO-3002: toner", "rita", input={"amount": 500})
    decide("tiered approve", "tiered run", "approve", "maria")

    # Delegation and send back: a delegate returns the run for the delegator,
    # the requester resubmits it, and the delegate approves it in round 2.
    now = time.time()
    window = {
        "starts_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 60)),
        "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 86400)),
    }
    expenses = {"name": "Expenses", "steps": [{"name": "Manager", "approvers": ["user:maria"]}]}
    post("away workflow", "/workflows", expenses, "ada")
    start("away run", "away workflow", "EXP-12: taxi", "rita")
    leave = {"delegate": "dave", "reason": "On leave", **window}
    post("delegation", "/delegations", leave, "maria")
    post("away return", at("away run", "/return"), {"comment": "Attach the receipt"}, "dave", 200)
    post("away resubmit", at("away run", "/resubmit"), {"comment": "Receipt attached"}, "rita", 200)
    post("away approve", at("away run", "/approve"), {}, "dave", 200)

    def revoked(side: Side) -> str:
        return f"/delegations/{id_of('delegation')(side)}"

    c.ask("delegation revoked", "DELETE", revoked, who="maria", expect=200)
    get("away audit", at("away run", "/audit"), "rita")

    # The approver rules.
    finance = {"name": "Finance", "approvers": ["group:finance", "user:cfo"]}
    steps = ["Manager", {**finance, "required_approvals": 2}]
    big = {"name": "Purchase over 10k", "steps": steps, "reject_requires_comment": True}
    post("big workflow", "/workflows", big, "ada")
    start("big run", "big workflow", "PO-2001: servers", "ann", requested_by="ann")
    decide("big approve mo", "big run", "approve", "mo")
    decide("big approve ann", "big run", "approve", "ann", 403)
    decide("big approve gus", "big run", "approve", "gus", 403)
    get("inbox fay", "/inbox", "fay")
    decide("big approve fay", "big run", "approve", "fay")
    decide("big approve fay again", "big run", "approve", "fay", 409)
    decide("big approve cfo", "big run", "approve", "cfo")
    start("big2 run", "big workflow", "PO-2002: racks", "rita")
    decide("big2 reject without reason", "big2 run", "reject", "mo", 422)
    decide("big2 reject", "big2 run", "reject", "mo", comment="Not this quarter")

    # Safe retries, a minimal answer, a cancel.
    key = {"Idempotency-Key": "rehearsal-" + secrets.token_hex(8)}
    start("keyed run", "po workflow", "PO-1043: monitors", "rita", headers=key)
    start("keyed run replayed", "po workflow", "PO-1043: monitors", "rita", headers=key)
    screens = run_of("po workflow", "PO-1043: screens")
    post("keyed run changed", "/runs", screens, "rita", 422, headers=key)
    # A keyed decision whose transaction DynamoDB fails (injected, on the
    # stack's side alone: nothing is written) answers 503 and releases its
    # key, so that its retry with the same key, asked of both sides, decides.
    retried = {"Prefer": "return=minimal", "Idempotency-Key": "rehearsal-" + secrets.token_hex(8)}
    run.fail_transactions(1000)
    approve_keyed = at("keyed run", "/approve")
    c.ask_deployed("keyed approve failed", "POST", approve_keyed, {}, "maria", retried, 503)
    run.fail_transactions(0)
    post("keyed approve minimal", approve_keyed, {}, "maria", 200, headers=retried)
    start("cancel run", "po workflow", "PO-1044: chairs", "rita")
    post("cancel by gus", at("cancel run", "/cancel"), {}, "gus", 403)
    post("cancel", at("cancel run", "/cancel"), {"reason": "Ordered elsewhere"}, "rita", 200)

    # Reading: lists and their pages, an audit, a run's events.
    get("runs page 1", "/runs?limit=2", "ada")
    get("runs page 2", after("runs page 1", "/runs?limit=2"), "ada")
    big_workflow = id_of("big workflow")
    get("completed runs", lambda s: f"/runs?workflow_id={big_workflow(s)}&status=completed", "ada")
    get("workflows page 1", "/workflows?limit=1", "ada")
    get("workflows page 2", after("workflows page 1", "/workflows?limit=2"), "ada")
    get("audit", at("po run", "/audit"), "rita")
    get("events page 1", at("po run", "/events?limit=3"), "rita")
    get("events page 2", after("events page 1", at("po run", "/events?limit=3")), "rita")

    # What is refused before any route runs, or by the gateway.
    c.ask("no token", "POST", "/runs", {"title": "x"}, expect=401)
    get("no such run", "/runs/999999", "ada", 404)
    get("no such route", "/reports", "ada", 404)
    c.ask("no such method", "DELETE", "/runs", who="ada", expect=405)

    # The contract, the page and its assets, and a browser's preflight from the allowed origin.
    get("openapi", "/openapi.json")
    local_page, deployed_page = c.ask("page", "GET", "/", expect=200)
    from scripts.rehearsal.scenario import assets_of

    local_assets = assets_of(local_page.body.decode())
    deployed_assets = assets_of(deployed_page.body.decode())
    if len(local_assets) != len(deployed_assets) or not local_assets:
        run.outcome.failures.append(f"the page names assets {local_assets} / {deployed_assets}")
    for index, urls in enumerate(zip(local_assets, deployed_assets, strict=False)):
        get(f"page asset {index}", _either(*urls))
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    }
    c.ask("preflight", "OPTIONS", at("big run", "/approve"), headers=preflight, expect=200)

    # Events: the stream to the relay, the bus to the queue. A relay that cannot
    # put its events on the bus (PutEvents failing) parks the batch in the dead-
    # letter queue; the run's next event brings them all to the webhook, in order.
    run.relay()
    run.fail_put_events(10**6)
    start("parked run", "po workflow", "PO-1045: desks", "rita")
    run.relay(expect_failures=True)
    run.fail_put_events(0)
    post("parked approve", at("parked run", "/approve"), {}, "maria", 200)
    run.relay()

    # The deadline: the schedule's event to the sweeper, once the step is due.
    due = c.deployed.answers["deadline run"].json()["current_step_due_at"]
    wait_for(lambda: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) > due[:19], 5)
    run.sweep()
    run.relay()
    if run.local is not None:
        local = run.local
        bearer = {"Authorization": f"Bearer {c.tokens['rita']}"}

        def rejected() -> bool:
            answer = local.request("GET", at("deadline run")(c.local), bearer, None)
            return bool(json.loads(answer[2]).get("status") == "rejected")

        wait_for(rejected, LOCAL_SWEEP_SECONDS)
    get("deadline rejected", at("deadline run"), "rita")

    # The webhook queue to the sender, until nothing is left (one delivery fails once).
    run.drain()
    # The notifier's queue to the notifier: the requester's emails, through SES.
    run.notify()
    get("every run", "/runs?limit=100", "ada")


def _either(local: str, deployed: str) -> Callable[[Side], str]:
    """One path for `make run`, another for the stack (an asset under the stage)."""
    return lambda side: local if side.name == "make run" else deployed
