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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from scripts.rehearsal import template as tpl
from scripts.rehearsal.cloud import Cloud, Decision, Fault, client, entries_failed, server_error
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

ORIGIN = "https://approvals.example.com"
CURSOR_PARAMETER = "/approval-workflows/cursor-secret"
WEBHOOK_PARAMETER = "/approval-workflows/webhook-secret"
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
            local = self.local

            def asked_locally(
                method: str, path: str, headers: dict[str, str], body: Optional[bytes]
            ) -> tuple[int, dict[str, str], bytes]:
                return local.request(method, path, headers, body)

            send_local = asked_locally
        else:
            assert self.reference is not None
            recorded = self.reference.answers
            order = iter(list(recorded.values()))

            def replayed(
                method: str, path: str, headers: dict[str, str], body: Optional[bytes]
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
            sender = self._function_of_source(":sqs:")
            mapping = self._mapping(sender)
            self._queue = QueueSource(
                mapping,
                lambda event: self.invoke(sender, event),
                self.stack.role_client(self.stack.functions[sender].role, "sqs"),
                self._queue_url(mapping["EventSourceArn"]),
            )
        return self._queue

    def _function_of_source(self, service: str) -> str:
        (name,) = (
            n
            for n, f in self.stack.functions.items()
            for m in self.stack.of_type("AWS::Lambda::EventSourceMapping").values()
            if m["FunctionName"] == f.name and service in m["EventSourceArn"]
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
        self.env.cloud.inject("PutEvents", Fault(entries_failed, count))

    def fail_transactions(self, count: int) -> None:
        """The next `count` TransactWriteItems fail as DynamoDB does when it has
        an internal error (500, retried by botocore, then a 503 to the client)."""
        self.env.cloud.inject("TransactWriteItems", Fault(server_error, count))

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

    # A deadline first, so that it passes while the rest goes on. Its step awaits
    # a group no caller here is in: whether make run's sweeper has rejected it
    # yet must not change an inbox the conversation compares.
    c.ask(
        "deadline workflow",
        "POST",
        "/workflows",
        {
            "name": "Change",
            "steps": [
                {
                    "name": "CAB",
                    "approvers": ["group:change-board"],
                    "deadline_seconds": 1,
                    "on_deadline": "reject",
                }
            ],
        },
        who="ada",
        expect=201,
    )
    c.ask(
        "deadline run",
        "POST",
        "/runs",
        run_of("deadline workflow", "CHG-7: database upgrade"),
        who="rita",
        expect=201,
    )

    # The README's walk-through, each caller with a token of their own.
    c.ask(
        "po workflow",
        "POST",
        "/workflows",
        {"name": "Purchase order", "steps": ["Manager", "Finance"]},
        who="ada",
        expect=201,
    )
    c.ask(
        "po step",
        "POST",
        lambda s: f"/workflows/{id_of('po workflow')(s)}/steps",
        {"name": "CFO"},
        who="ada",
        expect=201,
    )
    c.ask(
        "po run",
        "POST",
        "/runs",
        run_of("po workflow", "PO-1042: 12 laptops"),
        who="rita",
        expect=201,
    )
    c.ask(
        "po approve maria",
        "POST",
        at("po run", "/approve"),
        {"actor": "maria", "comment": "Within budget"},
        who="maria",
        expect=200,
    )
    c.ask(
        "po approve finn",
        "POST",
        at("po run", "/approve"),
        {"actor": "finn"},
        who="finn",
        expect=200,
    )
    c.ask(
        "po approve cfo", "POST", at("po run", "/approve"), {"actor": "cfo"}, who="cfo", expect=200
    )
    c.ask("po completed", "GET", at("po run"), who="rita", expect=200)
    c.ask(
        "po reject late", "POST", at("po run", "/reject"), {"actor": "late"}, who="late", expect=409
    )

    # Content and conditions: the schema validator (a native library) loads in
    # the function, and a step whose condition does not hold is skipped.
    c.ask(
        "tiered workflow",
        "POST",
        "/workflows",
        {
            "name": "Tiered purchase",
            "input_schema": {
                "type": "object",
                "required": ["amount"],
                "properties": {"amount": {"type": "number", "minimum": 0}},
            },
            "steps": ["Manager", {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}],
        },
        who="ada",
        expect=201,
    )
    c.ask(
        "tiered refused",
        "POST",
        "/runs",
        run_of("tiered workflow", "PO-3001", input={"amount": -1}),
        who="rita",
        expect=400,
    )
    c.ask(
        "tiered run",
        "POST",
        "/runs",
        run_of("tiered workflow", "PO-3002: toner", input={"amount": 500}),
        who="rita",
        expect=201,
    )
    c.ask(
        "tiered approve",
        "POST",
        at("tiered run", "/approve"),
        {"actor": "maria"},
        who="maria",
        expect=200,
    )

    # Delegation and send back: a delegate returns the run for the delegator,
    # the requester resubmits it, and the delegate approves it in round 2.
    now = time.time()
    window = {
        "starts_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 60)),
        "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 86400)),
    }
    c.ask(
        "away workflow",
        "POST",
        "/workflows",
        {"name": "Expenses", "steps": [{"name": "Manager", "approvers": ["user:maria"]}]},
        who="ada",
        expect=201,
    )
    c.ask(
        "away run", "POST", "/runs", run_of("away workflow", "EXP-12: taxi"), who="rita", expect=201
    )
    c.ask(
        "delegation",
        "POST",
        "/delegations",
        {"delegate": "dave", "reason": "On leave", **window},
        who="maria",
        expect=201,
    )
    c.ask(
        "away return",
        "POST",
        at("away run", "/return"),
        {"comment": "Attach the receipt"},
        who="dave",
        expect=200,
    )
    c.ask(
        "away resubmit",
        "POST",
        at("away run", "/resubmit"),
        {"comment": "Receipt attached"},
        who="rita",
        expect=200,
    )
    c.ask("away approve", "POST", at("away run", "/approve"), {}, who="dave", expect=200)
    c.ask(
        "delegation revoked",
        "DELETE",
        lambda side: f"/delegations/{id_of('delegation')(side)}",
        who="maria",
        expect=200,
    )
    c.ask("away audit", "GET", at("away run", "/audit"), who="rita", expect=200)

    # The approver rules.
    c.ask(
        "big workflow",
        "POST",
        "/workflows",
        {
            "name": "Purchase over 10k",
            "steps": [
                "Manager",
                {
                    "name": "Finance",
                    "approvers": ["group:finance", "user:cfo"],
                    "required_approvals": 2,
                },
            ],
            "reject_requires_comment": True,
        },
        who="ada",
        expect=201,
    )
    c.ask(
        "big run",
        "POST",
        "/runs",
        run_of("big workflow", "PO-2001: servers", requested_by="ann"),
        who="ann",
        expect=201,
    )
    c.ask(
        "big approve mo", "POST", at("big run", "/approve"), {"actor": "mo"}, who="mo", expect=200
    )
    c.ask(
        "big approve ann",
        "POST",
        at("big run", "/approve"),
        {"actor": "ann"},
        who="ann",
        expect=403,
    )
    c.ask(
        "big approve gus",
        "POST",
        at("big run", "/approve"),
        {"actor": "gus"},
        who="gus",
        expect=403,
    )
    c.ask("inbox fay", "GET", "/inbox", who="fay", expect=200)
    c.ask(
        "big approve fay",
        "POST",
        at("big run", "/approve"),
        {"actor": "fay"},
        who="fay",
        expect=200,
    )
    c.ask(
        "big approve fay again",
        "POST",
        at("big run", "/approve"),
        {"actor": "fay"},
        who="fay",
        expect=409,
    )
    c.ask(
        "big approve cfo",
        "POST",
        at("big run", "/approve"),
        {"actor": "cfo"},
        who="cfo",
        expect=200,
    )
    c.ask(
        "big2 run",
        "POST",
        "/runs",
        run_of("big workflow", "PO-2002: racks"),
        who="rita",
        expect=201,
    )
    c.ask(
        "big2 reject without reason",
        "POST",
        at("big2 run", "/reject"),
        {"actor": "mo"},
        who="mo",
        expect=422,
    )
    c.ask(
        "big2 reject",
        "POST",
        at("big2 run", "/reject"),
        {"actor": "mo", "comment": "Not this quarter"},
        who="mo",
        expect=200,
    )

    # Safe retries, a minimal answer, a cancel.
    key = {"Idempotency-Key": "rehearsal-" + secrets.token_hex(8)}
    c.ask(
        "keyed run",
        "POST",
        "/runs",
        run_of("po workflow", "PO-1043: monitors"),
        who="rita",
        headers=key,
        expect=201,
    )
    c.ask(
        "keyed run replayed",
        "POST",
        "/runs",
        run_of("po workflow", "PO-1043: monitors"),
        who="rita",
        headers=key,
        expect=201,
    )
    c.ask(
        "keyed run changed",
        "POST",
        "/runs",
        run_of("po workflow", "PO-1043: screens"),
        who="rita",
        headers=key,
        expect=422,
    )
    # A keyed decision whose transaction DynamoDB fails (injected, on the
    # stack's side alone: nothing is written) answers 503 and releases its
    # key, so that its retry with the same key, asked of both sides, decides.
    retried = {"Prefer": "return=minimal", "Idempotency-Key": "rehearsal-" + secrets.token_hex(8)}
    run.fail_transactions(1000)
    c.ask_deployed(
        "keyed approve failed",
        "POST",
        at("keyed run", "/approve"),
        {},
        who="maria",
        headers=retried,
        expect=503,
    )
    run.fail_transactions(0)
    c.ask(
        "keyed approve minimal",
        "POST",
        at("keyed run", "/approve"),
        {},
        who="maria",
        headers=retried,
        expect=200,
    )
    c.ask(
        "cancel run",
        "POST",
        "/runs",
        run_of("po workflow", "PO-1044: chairs"),
        who="rita",
        expect=201,
    )
    c.ask("cancel by gus", "POST", at("cancel run", "/cancel"), {}, who="gus", expect=403)
    c.ask(
        "cancel",
        "POST",
        at("cancel run", "/cancel"),
        {"reason": "Ordered elsewhere"},
        who="rita",
        expect=200,
    )

    # Reading: lists and their pages, an audit, a run's events.
    c.ask("runs page 1", "GET", "/runs?limit=2", who="ada", expect=200)
    c.ask(
        "runs page 2",
        "GET",
        lambda s: f"/runs?limit=2&cursor={cursor_of('runs page 1')(s)}",
        who="ada",
        expect=200,
    )
    c.ask(
        "completed runs",
        "GET",
        lambda s: f"/runs?workflow_id={id_of('big workflow')(s)}&status=completed",
        who="ada",
        expect=200,
    )
    c.ask("workflows page 1", "GET", "/workflows?limit=1", who="ada", expect=200)
    c.ask(
        "workflows page 2",
        "GET",
        lambda s: f"/workflows?limit=2&cursor={cursor_of('workflows page 1')(s)}",
        who="ada",
        expect=200,
    )
    c.ask("audit", "GET", at("po run", "/audit"), who="rita", expect=200)
    c.ask("events page 1", "GET", at("po run", "/events?limit=3"), who="rita", expect=200)
    c.ask(
        "events page 2",
        "GET",
        lambda s: f"{at('po run', '/events?limit=3')(s)}&cursor={cursor_of('events page 1')(s)}",
        who="rita",
        expect=200,
    )

    # What is refused before any route runs, or by the gateway.
    c.ask("no token", "POST", "/runs", {"title": "x"}, expect=401)
    c.ask("no such run", "GET", "/runs/999999", who="ada", expect=404)
    c.ask("no such route", "GET", "/reports", who="ada", expect=404)
    c.ask("no such method", "DELETE", "/runs", who="ada", expect=405)

    # The contract, the page and its assets, and a browser's preflight from the allowed origin.
    c.ask("openapi", "GET", "/openapi.json", expect=200)
    local_page, deployed_page = c.ask("page", "GET", "/", expect=200)
    from scripts.rehearsal.scenario import assets_of

    local_assets = assets_of(local_page.body.decode())
    deployed_assets = assets_of(deployed_page.body.decode())
    if len(local_assets) != len(deployed_assets) or not local_assets:
        run.outcome.failures.append(f"the page names assets {local_assets} / {deployed_assets}")
    for index, (local_url, deployed_url) in enumerate(
        zip(local_assets, deployed_assets, strict=False)
    ):
        c.ask(
            f"page asset {index}",
            "GET",
            _either(local_url, deployed_url),
            expect=200,
        )
    c.ask(
        "preflight",
        "OPTIONS",
        at("big run", "/approve"),
        headers={
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
        },
        expect=200,
    )

    # Events: the stream to the relay, the bus to the queue. A relay that cannot
    # put its events on the bus (PutEvents failing) parks the batch in the dead-
    # letter queue; the run's next event brings them all to the webhook, in order.
    run.relay()
    run.fail_put_events(10**6)
    c.ask(
        "parked run",
        "POST",
        "/runs",
        run_of("po workflow", "PO-1045: desks"),
        who="rita",
        expect=201,
    )
    run.relay(expect_failures=True)
    run.fail_put_events(0)
    c.ask("parked approve", "POST", at("parked run", "/approve"), {}, who="maria", expect=200)
    run.relay()

    # The deadline: the schedule's event to the sweeper, once the step is due.
    due = c.deployed.answers["deadline run"].json()["current_step_due_at"]
    wait_for(lambda: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) > due[:19], 5)
    run.sweep()
    run.relay()
    if run.local is not None:
        local = run.local
        wait_for(
            lambda: (
                json.loads(
                    local.request(
                        "GET",
                        at("deadline run")(c.local),
                        {"Authorization": f"Bearer {c.tokens['rita']}"},
                        None,
                    )[2]
                ).get("status")
                == "rejected"
            ),
            LOCAL_SWEEP_SECONDS,
        )
    c.ask("deadline rejected", "GET", at("deadline run"), who="rita", expect=200)

    # The webhook queue to the sender, until nothing is left (one delivery fails once).
    run.drain()
    c.ask("every run", "GET", "/runs?limit=100", who="ada", expect=200)


def _either(local: str, deployed: str) -> Callable[[Side], str]:
    """One path for `make run`, another for the stack (an asset under the stage)."""
    return lambda side: local if side.name == "make run" else deployed
