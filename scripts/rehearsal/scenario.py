"""The rehearsal's requests, asked of `make run` and of the stack alike, and their
answers compared (docs/rehearsal.md, "How answers are compared").
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, Optional, Union
from urllib.parse import quote

TIME_KEYS = {
    "created_at",
    "updated_at",
    "current_step_since",
    "current_step_due_at",
    "time",
    "due_at",
    "revoked_at",
    "version_created_at",
}
HASH_KEYS = {"hash", "head_hash", "previous_hash"}
CURSOR_KEYS = {"next_cursor"}
READ_HEADERS = (
    "content-type",
    "location",
    "allow",
    "idempotent-replayed",
    "preference-applied",
    "www-authenticate",
    "content-security-policy",
    "x-content-type-options",
    "referrer-policy",
    "cache-control",
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-expose-headers",
    "access-control-max-age",
)
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# The values that must differ, by key: what each is checked to be instead
# (a cursor: any text but the empty one).
SHAPES = {
    **dict.fromkeys(TIME_KEYS, ("time", ISO)),
    **dict.fromkeys(HASH_KEYS, ("hash", HEX64)),
    **dict.fromkeys(CURSOR_KEYS, ("cursor", re.compile(r"."))),
}

Body = Union[None, dict[str, Any], list[Any], str]


@dataclass
class Exchange:
    """One request, and the answer of one side."""

    label: str
    method: str
    path: str
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Side:
    """`make run` or the stack: how it is asked, and what it answered so far."""

    name: str
    base: str  # the page's base path: "" locally, "/api" behind the stage
    stage: str  # the events' source stage
    send: Callable[[str, str, dict[str, str], Optional[bytes]], tuple[int, dict[str, str], bytes]]
    answers: dict[str, Exchange] = field(default_factory=dict)

    def ask(
        self, label: str, method: str, path: str, headers: dict[str, str], body: Optional[bytes]
    ) -> Exchange:
        status, answer_headers, answer_body = self.send(method, path, headers, body)
        exchange = Exchange(label, method, path, status, answer_headers, answer_body)
        self.answers[label] = exchange
        return exchange


def _shape(key: str, value: Any) -> Optional[str]:
    """What a value that must differ is checked for; None: compared as it is."""
    if key not in SHAPES:
        return None
    kind, pattern = SHAPES[key]
    if value is None:
        return "null"
    return kind if isinstance(value, str) and pattern.match(value) else repr(value)


def compare_json(
    local: Any, deployed: Any, where: str = "$", stages: tuple[str, str] = ("dev", "prod")
) -> list[str]:
    """Where the two JSON values differ, beyond what must differ."""
    if isinstance(local, dict) and isinstance(deployed, dict):
        problems = []
        if set(local) != set(deployed):
            problems.append(f"{where}: keys {sorted(set(local) ^ set(deployed))} on one side only")
        for key in sorted(set(local) & set(deployed)):
            a, b = local[key], deployed[key]
            shape = _shape(key, a)
            if shape is not None:
                if shape != _shape(key, b):
                    problems.append(f"{where}.{key}: {a!r} / {b!r}")
                continue
            if key == "id" and isinstance(a, str) and UUID.match(a):
                if not (isinstance(b, str) and UUID.match(b)):
                    problems.append(f"{where}.{key}: {a!r} / {b!r}")
                continue
            if key == "id" and isinstance(a, int) and "action" in local and "action" in deployed:
                # An action's id comes from its container's block of ids on
                # DynamoDB (the sweeper's is not the API's): any positive integer.
                if not (isinstance(a, int) and isinstance(b, int) and a > 0 and b > 0):
                    problems.append(f"{where}.{key}: {a!r} / {b!r}")
                continue
            if key == "source" and a == f"/approval-workflows/{stages[0]}":
                if b != f"/approval-workflows/{stages[1]}":
                    problems.append(f"{where}.{key}: {a!r} / {b!r}")
                continue
            problems += compare_json(a, b, f"{where}.{key}", stages)
        return problems
    if isinstance(local, list) and isinstance(deployed, list):
        if len(local) != len(deployed):
            return [f"{where}: {len(local)} items / {len(deployed)} items"]
        problems = []
        for index, (a, b) in enumerate(zip(local, deployed, strict=True)):
            problems += compare_json(a, b, f"{where}[{index}]", stages)
        return problems
    if local != deployed:
        return [f"{where}: {local!r} / {deployed!r}"]
    return []


def compare(
    local: Exchange, deployed: Exchange, local_side: Side, deployed_side: Side
) -> list[str]:
    problems = []
    if local.status != deployed.status:
        problems.append(f"status {local.status} / {deployed.status}")
    for name in READ_HEADERS:
        here, there = local.headers.get(name), deployed.headers.get(name)
        if name == "location" and there is not None and there.startswith(deployed_side.base + "/"):
            # A Location is under the stage's base path, as the page's URLs are.
            there = there.removeprefix(deployed_side.base)
        if name == "content-type" and not local.body and not deployed.body:
            continue  # nothing to read, as in a preflight's answer
        if here != there:
            problems.append(f"header {name}: {here!r} / {there!r}")
    # API Gateway's own answers carry its request id only (x-amzn-RequestId).
    if "x-request-id" in local.headers and not (
        {"x-request-id", "x-amzn-requestid"} & set(deployed.headers)
    ):
        problems.append("no X-Request-Id deployed")
    kind = local.headers.get("content-type", "")
    if kind.startswith("application/json") and local.body and deployed.body:
        try:
            a: Any = json.loads(local.body)
            b: Any = json.loads(deployed.body)
        except ValueError as exc:
            return [*problems, f"body is not JSON: {exc}"]
        if local.path.startswith("/openapi.json") and isinstance(a, dict) and isinstance(b, dict):
            if b.get("servers") != [{"url": deployed_side.base or "/"}]:
                problems.append(f"servers {b.get('servers')}")
            a, b = {**a, "servers": None}, {**b, "servers": None}
        problems += compare_json(a, b, stages=(local_side.stage, deployed_side.stage))
    elif kind.startswith("text/html"):
        # Without the stage's base path in its attribute values.
        a_text = local.body.decode().replace(f'="{local_side.base}', '="')
        b_text = deployed.body.decode().replace(f'="{deployed_side.base}', '="')
        if a_text != b_text:
            problems.append("the page's HTML differs")
    elif local.body != deployed.body:
        problems.append(f"body: {len(local.body)} bytes / {len(deployed.body)} bytes, not the same")
    return problems


class Assets(HTMLParser):
    """The page's own assets: stylesheet and script URLs (data: ones aside)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        values = dict(attrs)
        url = (
            values.get("src") if tag == "script" else values.get("href") if tag == "link" else None
        )
        if url and not url.startswith(("data:", "http:", "https:", "#")):
            self.urls.append(url)


def assets_of(html: str) -> list[str]:
    parser = Assets()
    parser.feed(html)
    return parser.urls


class Conversation:
    """Both sides, asked the same things in the same order."""

    def __init__(self, local: Side, deployed: Side, tokens: Mapping[str, str], origin: str) -> None:
        self.local = local
        self.deployed = deployed
        self.tokens = tokens
        self.origin = origin
        # One line per request whose answers differ: its label, the request, what differs.
        self.mismatches: list[str] = []
        self.asked = 0
        self.after_each: Callable[[], None] = lambda: None
        # With REHEARSAL_VERBOSE=1, each exchange in one line (both bodies on a difference).
        self.verbose = False

    def _request(
        self,
        side: Side,
        path: Union[str, Callable[[Side], str]],
        body: Union[Body, Callable[[Side], Body]],
        who: Optional[str],
        headers: Optional[dict[str, str]],
    ) -> tuple[str, dict[str, str], Optional[bytes]]:
        """The path, headers and body of a request to `side`."""
        sent = {"User-Agent": "rehearsal", "Origin": self.origin, **(headers or {})}
        if who is not None:
            sent["Authorization"] = f"Bearer {self.tokens[who]}"
        raw: Optional[bytes] = None
        value = body(side) if callable(body) else body
        if value is not None:
            raw = (value if isinstance(value, str) else json.dumps(value)).encode()
            sent.setdefault("Content-Type", "application/json")
        return (path(side) if callable(path) else path), sent, raw

    def ask(
        self,
        label: str,
        method: str,
        path: Union[str, Callable[[Side], str]],
        body: Union[Body, Callable[[Side], Body]] = None,
        who: Optional[str] = None,
        headers: Optional[dict[str, str]] = None,
        expect: Optional[int] = None,
    ) -> tuple[Exchange, Exchange]:
        """The same request to both sides; `path` and `body` may depend on each
        side's earlier answers (its ids, its cursors)."""
        local, deployed = (
            side.ask(label, method, *self._request(side, path, body, who, headers))
            for side in (self.local, self.deployed)
        )
        self.asked += 1
        problems = compare(local, deployed, self.local, self.deployed)
        if expect is not None and local.status != expect:
            problems.append(f"make run answered {local.status}, the rehearsal expects {expect}")
        if problems:
            self.mismatches.append(f"{label} ({method} {local.path}): " + "; ".join(problems[:6]))
        if self.verbose:
            print(
                f"  {label}: {method} {local.path} -> {local.status} / {deployed.status}",
                flush=True,
            )
            if problems:
                print(f"    {problems}", flush=True)
                print(f"    make run: {local.body[:600]!r}", flush=True)
                print(f"    stack:    {deployed.body[:600]!r}", flush=True)
        self.after_each()
        return local, deployed

    def ask_deployed(
        self,
        label: str,
        method: str,
        path: Union[str, Callable[[Side], str]],
        body: Body = None,
        who: Optional[str] = None,
        headers: Optional[dict[str, str]] = None,
        expect: Optional[int] = None,
    ) -> Exchange:
        """A request to the stack alone (one `make run` cannot be made to answer
        alike, as a fault injected into the stack's DynamoDB): its status is
        checked, and nothing the stack stored may differ for it afterwards."""
        where, sent, raw = self._request(self.deployed, path, body, who, headers)
        answer = self.deployed.ask(label, method, where, sent, raw)
        self.asked += 1
        if expect is not None and answer.status != expect:
            problem = f"the stack answered {answer.status}, the rehearsal expects {expect}"
            self.mismatches.append(f"{label} ({method} {where}): {problem}")
        self.after_each()
        return answer


def cursor_of(label: str) -> Callable[[Side], str]:
    """The next page's cursor in each side's own answer to `label`."""

    return lambda side: quote(str(side.answers[label].json()["next_cursor"]), safe="")


def wait_while_growing(
    count: Callable[[], int], target: int, idle: float, every: float = 0.2
) -> bool:
    """Wait until `count()` reaches `target`; False once it has not grown for
    `idle` seconds. A loaded machine makes it grow slower, not stop."""
    last, since = count(), time.monotonic()
    while last < target:
        if time.monotonic() - since > idle:
            return False
        time.sleep(every)
        now = count()
        if now > last:
            last, since = now, time.monotonic()
    return True


def wait_for(check: Callable[[], bool], within: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()
