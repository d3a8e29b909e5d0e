"""One contender of benchmark 6 (bench/deployed_cpu.py), in a process of its own.

    python -m bench.deployed_child service|floor UNITS EXCHANGE

A unit is what benchmark 1 calls one: start a run of the 3-step workflow
(id 1), approve it three times, read it back; five HTTP API events (payload
1.0, the `$default` route) handed to the function's entry point.

- `service`: the packaged entry point, `chalicelib.http_api.handler`, in
  DynamoDB mode (the table and endpoint from the environment). With
  EXCHANGE a file path, the DynamoDB requests each event made are written
  there (operation and parameters, as the adapter passed them), with the
  CPU time of each event.
- `floor`: a bare Chalice app with the same routes, on the same events,
  routed as the entry point routes them; each view sends the requests the
  service sent for that event (read from EXCHANGE), with a client made as
  the service makes its own, and answers `{}`. Same requests, same item
  sizes, same botocore: what is left between the two is the service's.

The process ends with os._exit after its last answer, so that the
interpreter's teardown stays out of the instruction count.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import time
from typing import Any

from bench._common import FakeLambdaContext

STEPS = 3
HEADERS = {"Content-Type": "application/json", "Host": "abcdef1234.execute-api.amazonaws.com"}


def http_event(method: str, path: str, body: Any = None) -> dict[str, Any]:
    from scripts.gateway_events import proxy_event

    sent = None if body is None else json.dumps(body).encode()
    return proxy_event(method, path, HEADERS, sent, http_api=True)


def unit(handler: Any, number: int, requests: list[str]) -> None:
    """One unit through `handler`; each request's label appended to `requests`."""
    context = FakeLambdaContext()
    started = handler(
        http_event("POST", "/runs", {"workflow_id": 1, "title": f"PO-{number}"}), context
    )
    requests.append("start")
    assert started["statusCode"] < 300, started
    run_id = json.loads(started["body"]).get("id", number + 1)  # the floor answers {}
    for _ in range(STEPS):
        path = f"/runs/{run_id}/approve"
        decided = handler(http_event("POST", path, {"actor": "bench"}), context)
        requests.append("approve")
        assert decided["statusCode"] < 300, decided
    read = handler(http_event("GET", f"/runs/{run_id}"), context)
    requests.append("get")
    assert read["statusCode"] < 300, read


def recording(client: Any, into: list[list[Any]], spent: list[float]) -> None:
    """Every request `client` sends appended, as passed, to the last list of
    `into`; the CPU time the recording takes added to spent[0]."""

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        start = time.process_time()
        into[-1].append([model.name, kept(params)])
        spent[0] += time.process_time() - start

    client.meta.events.register("provide-client-params.dynamodb", record)


def kept(value: Any) -> Any:
    """`value` as JSON can hold it: bytes (a binary attribute) as {"B64": ...}."""
    if isinstance(value, bytes):
        return {"B64": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {key: kept(item) for key, item in value.items()}
    if isinstance(value, list):
        return [kept(item) for item in value]
    return value


def restored(value: Any, table: str) -> Any:
    """kept's inverse, every request sent to `table`."""
    if isinstance(value, dict):
        if list(value) == ["B64"]:
            return base64.b64decode(value["B64"])
        return {
            key: table if key == "TableName" else restored(item, table)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [restored(item, table) for item in value]
    return value


def serve_service(units: int, exchange: str) -> None:
    from chalicelib import http_api

    handler = http_api.handler
    if not exchange:
        labels: list[str] = []
        for number in range(units):
            unit(handler, number, labels)
        return
    import app as service

    sent: list[list[Any]] = []
    cpu: list[float] = []
    spent = [0.0]
    recording(service.get_storage().client, sent, spent)  # type: ignore[attr-defined]

    def timed(event: dict[str, Any], context: Any) -> dict[str, Any]:
        sent.append([])
        spent[0] = 0.0
        start = time.process_time()
        answer = handler(event, context)
        cpu.append(time.process_time() - start - spent[0])
        return answer

    labels = []
    for number in range(units):
        unit(timed, number, labels)
    with open(exchange, "w", encoding="utf-8") as out:
        json.dump({"labels": labels, "requests": sent, "cpu": cpu}, out)


def floor_handler(exchange: str) -> Any:
    """The floor: a bare Chalice app replaying the service's requests."""
    from chalice.app import Chalice

    from bench.bare_app import ROUTES
    from chalicelib.storage.dynamodb.client import create_client

    with open(exchange, encoding="utf-8") as recorded:
        queue = iter(restored(json.load(recorded)["requests"], os.environ["WORKFLOW_TABLE"]))
    client = create_client()
    app = Chalice(app_name="floor")

    def replay(**_: Any) -> dict[str, Any]:
        for operation, params in next(queue):
            getattr(client, _snake(operation))(**params)
        return {}

    for path, method, name in ROUTES:
        app.route(path, methods=[method], name=name)(replay)
    routes = [
        (re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", route) + "$"), route)
        for route in sorted(app.routes)
    ]

    def handler(event: dict[str, Any], context: Any) -> Any:
        # The entry point's work, at its least: the route the path matches.
        for pattern, route in routes:
            found = pattern.match(event["path"])
            if found:
                context_ = {**event["requestContext"], "resourcePath": route}
                event = {
                    **event,
                    "resource": route,
                    "pathParameters": found.groupdict() or None,
                    "requestContext": context_,
                }
                return app(event, context)
        raise LookupError(event["path"])

    return handler


def _snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


def main() -> None:
    mode, units, exchange = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "service":
        serve_service(units, exchange)
    else:
        handler = floor_handler(exchange)
        labels: list[str] = []
        for number in range(units):
            unit(handler, number, labels)
    sys.stdout.write("done\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
