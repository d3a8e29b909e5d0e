"""Lambda, played (docs/rehearsal.md, step 4): each function of the template in an
execution environment of its own, a fresh interpreter (bootstrap.py) on the
unzipped package, with the function's environment, its role's credentials and
the variables Lambda sets; warm for the whole rehearsal, one invocation at a
time. What Lambda does with the role besides is done here with the same
credentials: each invocation's log lines, and with active tracing its segment.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from scripts.rehearsal.cloud import REGION, client

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
# The interpreter the functions run in: the machine's, without any site-packages.
PYTHON = getattr(sys, "_base_executable", sys.executable)
# Lambda's own variables that the function may read (its configuration aside).
LANG = "en_US.UTF-8"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str

    def client(self, service: str, endpoint: str) -> Any:
        return client(
            endpoint,
            service,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            aws_session_token=self.token,
        )


@dataclass
class Function:
    """An AWS::Lambda::Function of the template, resolved for this stack."""

    logical_id: str
    name: str
    arn: str
    handler: str
    runtime: str
    environment: dict[str, str]
    role: str  # the role's logical id
    role_arn: str
    timeout: int
    memory: int
    tracing: bool
    log_group: str


@dataclass
class Invocation:
    request_id: str
    result: Any = None
    error: Optional[dict[str, Any]] = None
    lines: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # What Lambda could not do with the role after the invocation (logs, traces).
    shipping_error: Optional[str] = None


def patience(load: Optional[float] = None, cores: Optional[int] = None) -> float:
    """How many times its timeout a function is waited for: 1 on a quiet machine,
    the load per core on a busy one, whose cores every function, moto and make run
    share (docs/rehearsal.md, "The same verdict on a busy machine")."""
    if load is None:
        load = os.getloadavg()[0]
    cores = cores or os.cpu_count() or 1
    return max(1.0, load / cores)


class Container:
    """One execution environment of one function."""

    def __init__(
        self,
        function: Function,
        task_root: Path,
        runtime_dir: Path,
        credentials: Credentials,
        tmp: Path,
        extra_environment: dict[str, str],
    ) -> None:
        """`extra_environment` names the endpoint of AWS (AWS_ENDPOINT_URL)."""
        self.function = function
        self.credentials = credentials
        self.endpoint = extra_environment["AWS_ENDPOINT_URL"]
        day = time.strftime("%Y/%m/%d", time.gmtime())
        self.log_stream = f"{day}/[$LATEST]{secrets.token_hex(16)}"
        self._logs: Any = None
        self._xray: Any = None
        home = tmp / f"{function.logical_id}-tmp"
        home.mkdir(parents=True, exist_ok=True)
        environment = {
            # What Lambda sets (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html)
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": LANG,
            "TZ": ":UTC",
            "HOME": str(home),
            "TMPDIR": str(home),
            "LAMBDA_TASK_ROOT": str(task_root),
            "LAMBDA_RUNTIME_DIR": str(runtime_dir),
            "_HANDLER": function.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.runtime}",
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_LAMBDA_FUNCTION_NAME": function.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory),
            "AWS_LAMBDA_LOG_GROUP_NAME": function.log_group,
            "AWS_LAMBDA_LOG_STREAM_NAME": self.log_stream,
            "AWS_ACCESS_KEY_ID": credentials.access_key,
            "AWS_SECRET_ACCESS_KEY": credentials.secret_key,
            "AWS_SESSION_TOKEN": credentials.token,
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            "REHEARSAL_FUNCTION_ARN": function.arn,
            **extra_environment,
            **function.environment,
        }
        read_answers, self._answers_fd = os.pipe()
        self._process = subprocess.Popen(
            _bootstrap(
                task_root, runtime_dir, function.handler, "--answers", str(self._answers_fd)
            ),
            cwd=task_root,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(self._answers_fd,),
            text=True,
            start_new_session=True,
        )
        os.close(self._answers_fd)
        self._answers = os.fdopen(read_answers, encoding="utf-8")
        self._lines: queue.Queue[Optional[str]] = queue.Queue()
        threading.Thread(target=self._read_output, daemon=True).start()

    def _read_output(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def invoke(self, event: Any) -> Invocation:
        """One invocation, as Lambda's runtime runs it; its log lines are shipped."""
        invocation = Invocation(str(uuid.uuid4()))
        # The function's context says its timeout; the rehearsal waits for
        # it that long times the machine's load (patience, below).
        deadline = time.time() + self.function.timeout
        waits_until = time.time() + self.function.timeout * patience()
        trace = f"Root=1-{int(time.time()):08x}-{secrets.token_hex(12)};Sampled=1"
        request = {
            "id": invocation.request_id,
            "event": event,
            "deadline": deadline,
            "trace": trace,
        }
        assert self._process.stdin is not None
        started = time.monotonic()
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        answer = self._answer(waits_until)
        invocation.seconds = time.monotonic() - started
        invocation.lines = self._lines_until(
            f"REPORT RequestId: {invocation.request_id}", waits_until
        )
        if answer is None:
            invocation.error = {"errorType": "Sandbox.Timedout", "errorMessage": "no answer"}
        elif "error" in answer:
            invocation.error = answer["error"]
        else:
            invocation.result = answer["result"]
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._ship(invocation, trace)
        except (BotoCoreError, ClientError) as exc:
            invocation.shipping_error = f"sending its logs and traces: {exc}"
        return invocation

    def _answer(self, deadline: float) -> Optional[dict[str, Any]]:
        got: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: got.put(self._answers.readline()), daemon=True).start()
        try:
            line = got.get(timeout=max(0.1, deadline - time.time()))
        except queue.Empty:
            self.stop()
            return None
        if not line:
            return None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _lines_until(self, last: str, deadline: float) -> list[str]:
        lines: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.time()) + 1)
            except queue.Empty:
                return lines
            if line is None:
                return lines
            lines.append(line)
            if line.startswith(last):
                return lines

    def _ship(self, invocation: Invocation, trace: str) -> None:
        """What Lambda sends with the function's role: its log lines, its segment."""
        if self._logs is None:
            self._logs = self.credentials.client("logs", self.endpoint)
            self._logs.create_log_stream(
                logGroupName=self.function.log_group, logStreamName=self.log_stream
            )
        now = int(time.time() * 1000)
        if not invocation.lines:
            return
        self._logs.put_log_events(
            logGroupName=self.function.log_group,
            logStreamName=self.log_stream,
            # Each line as the runtime sends it, with its newline (never empty, too).
            logEvents=[{"timestamp": now, "message": line + "\n"} for line in invocation.lines],
        )
        if not self.function.tracing:
            return
        if self._xray is None:
            self._xray = self.credentials.client("xray", self.endpoint)
            self._xray.put_telemetry_records(
                TelemetryRecords=[{"Timestamp": time.time(), "SegmentsReceivedCount": 0}]
            )
        root = trace.split(";")[0].removeprefix("Root=")
        segment = {
            "name": self.function.name,
            "id": secrets.token_hex(8),
            "trace_id": root,
            "start_time": time.time() - invocation.seconds,
            "end_time": time.time(),
            "origin": "AWS::Lambda::Function",
            "fault": invocation.error is not None,
        }
        self._xray.put_trace_segments(TraceSegmentDocuments=[json.dumps(segment)])

    def stop(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def _bootstrap(task_root: Path, runtime_dir: Path, handler: str, *flags: str) -> list[str]:
    """The command of a fresh interpreter on the package (bootstrap.py says how)."""
    return [PYTHON, "-I", "-S", str(BOOTSTRAP), str(task_root), str(runtime_dir), handler, *flags]


def check_imports(task_root: Path, runtime_dir: Path) -> dict[str, Any]:
    """The app's own imports, each resolved in a fresh interpreter on the package."""
    answer = subprocess.run(
        _bootstrap(task_root, runtime_dir, "app.app", "--check-imports"),
        cwd=task_root,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": LANG, "AWS_REGION": REGION},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if answer.returncode != 0:
        return {"path": [], "failures": [answer.stderr.strip()[-2000:]]}
    found: dict[str, Any] = json.loads(answer.stdout.strip().splitlines()[-1])
    return found
