"""Profile the service's hot path (benchmark 1's unit of work) with pyinstrument.

    .venv/bin/python -m bench.profile_hot_path [sqlite|dynamodb] [--html PATH]

Prints the call tree of many units of work; the figures of benchmark 1 say how
much there is to win, this says where.
"""

from __future__ import annotations

import argparse
import json
import os

from bench._common import offline_aws_env, quiet_access_log, workdir
from chalicelib.storage.dynamodb import client as dynamodb_client

JSON = {"Content-Type": "application/json"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", nargs="?", default="sqlite", choices=("sqlite", "dynamodb"))
    parser.add_argument("--units", type=int, default=500)
    parser.add_argument("--html")
    args = parser.parse_args()
    from pyinstrument import Profiler

    tmp = workdir("profile")
    server = None
    if args.backend == "sqlite":
        os.environ["WORKFLOW_STORAGE"] = "sqlite"
        os.environ["WORKFLOW_SQLITE_PATH"] = os.path.join(tmp, "service.sqlite3")
    else:
        from bench.moto_process import MotoProcess

        os.environ.clear()
        os.environ.update(offline_aws_env())
        server = MotoProcess().start()
        os.environ.update(
            WORKFLOW_STORAGE="dynamodb",
            WORKFLOW_TABLE="bench",
            AWS_ENDPOINT_URL_DYNAMODB=server.endpoint,
        )
        from chalicelib.storage.dynamodb import schema as dynamodb_schema

        dynamodb_schema.ensure_table(dynamodb_client.create_client(), "bench")
    import app as service

    quiet_access_log(service)
    from chalice.test import Client

    from bench.throughput import http_unit

    created = Client(service.app).http.post(
        "/workflows",
        headers=JSON,
        body=json.dumps({"name": "po", "steps": ["Manager", "Finance", "CFO"]}),
    )
    unit = http_unit(service.app, created.json_body["id"], service=True)
    unit()
    profiler = Profiler(interval=0.0002)
    profiler.start()
    for _ in range(args.units):
        unit()
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False))
    if args.html:
        with open(args.html, "w", encoding="utf-8") as out:
            out.write(profiler.output_html())
    if server:
        server.stop()


if __name__ == "__main__":
    main()
