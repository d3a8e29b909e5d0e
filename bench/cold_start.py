"""Benchmark 3: cold start, a fresh process importing the handler and serving one request.

  SQLite     app.py serving GET /runs/{id} from an existing database file, versus
             the same request to a Chalice app whose routes do nothing
  DynamoDB   app.py serving GET /runs/{id} from a moto server on loopback, versus
             importing boto3, creating a client and making the same Query
  jwt        app.py with WORKFLOW_AUTH=jwt (SQLite) serving the same request with a
             bearer token, versus the bare app verifying that token with PyJWT

Goal 5: DynamoDB and jwt <= 1.15x the bare figure (a guard); SQLite is a
figure without a goal (no deployed function uses it). The figure is the time from before
the import to the first answer, in the fresh process (what Lambda's init plus
first invoke add on top of the runtime's own start); the whole process's wall
time, interpreter start included, is shown beside it. The service's code is
compiled to .pyc first (compileall), as the installed packages already are, and
each contender runs once before the rounds: every run then finds its bytecode
ready and on the OS cache.

  deployed   app.py serving the SQLite request from the unzipped deployment
             package (scripts/package.py, as `make package` makes it), with no
             bytecode written, as Lambda's read-only task root allows; and the
             same package without the bytecode it ships, as `chalice package`
             alone bundles a clean tree, where each cold start compiles every
             module it imports
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from bench._common import (
    PROJECT_DIR,
    Figure,
    Report,
    alternate,
    gateway_event,
    offline_aws_env,
    scaled,
    workdir,
)
from chalicelib.storage.dynamodb import client as dynamodb_client
from tests.support.stored import stored_run, stored_workflow

ROUNDS = scaled(21, 3)
# Goal 5 (issue 43): a guard on the deployed modes' starts, so that CPU cut
# elsewhere is not bought with start-up. The SQLite start, which no deployed
# function makes, is a figure without a goal since then.
GOAL = 1.15
GOAL_NAMES = {"ddb_service": "cold start DynamoDB", "jwt_service": "cold start jwt"}
CHILD = os.path.join(PROJECT_DIR, "bench", "cold_child.py")
walls: dict[str, list[float]] = {}


def child(
    name: str, mode: str, event: dict[str, object], env: dict[str, str], path: str = PROJECT_DIR
) -> Callable[[], float]:
    env = {**env, "PYTHONPATH": path}
    argv = [sys.executable, CHILD, mode, json.dumps(event)]

    def run() -> float:
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=PROJECT_DIR, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr}{done.stdout}")
        walls.setdefault(name, []).append(wall)
        return float(json.loads(done.stdout.splitlines()[-1])["seconds"])

    return run


def sqlite_setup(tmp: str) -> tuple[dict[str, str], int]:
    """A database file with one run in it; the environment that names it."""
    from chalicelib.domain.models import StepRule
    from chalicelib.storage.sqlite import adapter as sqlite

    path = os.path.join(tmp, "cold.sqlite3")
    storage = sqlite.SQLiteStorage(path)
    workflow = stored_workflow(
        storage, "po", "", [StepRule("Manager"), StepRule("Finance")], "2026-01-01T00:00:00Z"
    )
    run = stored_run(storage, workflow, "PO-1", "2026-01-01T00:00:00Z")
    storage.close()
    env = {key: value for key, value in os.environ.items() if not key.startswith("WORKFLOW_")}
    env.update(WORKFLOW_STORAGE="sqlite", WORKFLOW_SQLITE_PATH=path)
    return env, run.id


def dynamodb_setup(endpoint: str) -> tuple[dict[str, str], int]:
    """A table on the moto server with one run in it; the environment that names it."""
    env = offline_aws_env()
    env.update(
        WORKFLOW_STORAGE="dynamodb", WORKFLOW_TABLE="cold", AWS_ENDPOINT_URL_DYNAMODB=endpoint
    )
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        from chalicelib.domain.models import StepRule
        from chalicelib.storage.dynamodb import adapter as dynamodb
        from chalicelib.storage.dynamodb import schema as dynamodb_schema

        client = dynamodb_client.create_client()
        dynamodb_schema.ensure_table(client, "cold")
        storage = dynamodb.DynamoDBStorage(client, "cold")
        workflow = stored_workflow(
            storage, "po", "", [StepRule("Manager"), StepRule("Finance")], "2026-01-01T00:00:00Z"
        )
        run = stored_run(storage, workflow, "PO-1", "2026-01-01T00:00:00Z")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return env, run.id


def run_event(run_id: int) -> dict[str, object]:
    return gateway_event("GET", "/runs/{run_id}", f"/runs/{run_id}", {"run_id": str(run_id)})


JWT_SECRET = "a benchmark's secret of at least thirty-two bytes"
JWT_ISSUER = "https://issuer.example.test"


def jwt_setup(env: dict[str, str], event: dict[str, object]) -> tuple[dict[str, str], dict]:
    """The SQLite environment in jwt mode, and the event with a token for it."""
    import jwt

    token = jwt.encode(
        {"iss": JWT_ISSUER, "sub": "maria", "exp": int(time.time()) + 24 * 3600},
        JWT_SECRET,
        algorithm="HS256",
    )
    headers = {**event["headers"], "Authorization": f"Bearer {token}"}  # type: ignore[dict-item]
    jwt_env = {
        **env,
        "WORKFLOW_AUTH": "jwt",
        "WORKFLOW_JWT_ISSUER": JWT_ISSUER,
        "WORKFLOW_JWT_SECRET": JWT_SECRET,
    }
    return jwt_env, {**event, "headers": headers}


def deployed(tmp: str) -> tuple[str, str]:
    """The deployment package unzipped as Lambda's task root, and a copy of it
    without its bytecode."""
    import zipfile
    from pathlib import Path

    from scripts import package

    dist = Path(tmp) / "dist"
    package.package(dist, "prod")
    task, sources = os.path.join(tmp, "task"), os.path.join(tmp, "task-sources")
    with zipfile.ZipFile(dist / "deployment.zip") as bundle:
        bundle.extractall(task)
        bundle.extractall(sources, [n for n in bundle.namelist() if "__pycache__/" not in n])
    return task, sources


def main() -> None:
    from bench.moto_process import MotoProcess

    tmp = workdir("cold")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "app.py", "chalicelib", "bench"],
        cwd=PROJECT_DIR,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    sqlite_env, sqlite_run = sqlite_setup(tmp)
    task, sources = deployed(tmp)
    # Lambda's task root is read-only: nothing compiled there is kept.
    lambda_env = {**sqlite_env, "PYTHONDONTWRITEBYTECODE": "1"}
    with MotoProcess() as moto:
        ddb_env, ddb_run = dynamodb_setup(moto.endpoint)
        query = {
            "TableName": "cold",
            "ConsistentRead": True,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": f"RUN#{ddb_run}"}},
        }
        contenders = {
            "sqlite_service": child("sqlite_service", "service", run_event(sqlite_run), sqlite_env),
            "sqlite_bare": child("sqlite_bare", "bare", run_event(sqlite_run), sqlite_env),
            "ddb_service": child("ddb_service", "service", run_event(ddb_run), ddb_env),
            "ddb_boto3": child("ddb_boto3", "boto3", query, ddb_env),
        }
        for name, root in (("deployed", task), ("deployed_sources", sources)):
            contenders[name] = child(name, "service", run_event(sqlite_run), lambda_env, root)
        jwt_env, jwt_event = jwt_setup(sqlite_env, run_event(sqlite_run))
        contenders["jwt_service"] = child("jwt_service", "service", jwt_event, jwt_env)
        contenders["jwt_bare"] = child("jwt_bare", "bare_jwt", jwt_event, jwt_env)
        rounds = alternate(contenders, ROUNDS, progress="cold start")

    import statistics

    report = Report("cold_start", "3. Cold start (import + first request, fresh process)")
    labels = {
        "sqlite_service": "SQLite: app.py",
        "sqlite_bare": "SQLite: bare Chalice app",
        "ddb_service": "DynamoDB: app.py",
        "ddb_boto3": "DynamoDB: boto3 + one Query",
        "jwt_service": "jwt mode: app.py",
        "jwt_bare": "jwt mode: bare Chalice app verifying the token",
        "deployed": "SQLite: app.py from the deployment package",
        "deployed_sources": "SQLite: the same package without its bytecode",
    }
    pairs = (
        ("sqlite_service", "sqlite_bare"),
        ("ddb_service", "ddb_boto3"),
        ("jwt_service", "jwt_bare"),
    )
    for service, bare in pairs:
        for name in (service, bare):
            report.add(
                Figure(
                    labels[name],
                    rounds.median(name),
                    "s",
                    note=f"whole process {statistics.median(walls[name]) * 1e3:.0f} ms",
                )
            )
        ratio = rounds.ratio(service, bare)
        if service in GOAL_NAMES:
            figure = Figure(GOAL_NAMES[service], ratio, "x", goal=f"<= {GOAL}", met=ratio <= GOAL)
            figure.note = f"{labels[service]} / bare"
        else:
            figure = Figure(f"{labels[service]} / bare", ratio, "x", note="no goal since issue 43")
        report.add(figure)
        whole = statistics.median(
            a / b for a, b in zip(walls[service][1:], walls[bare][1:], strict=False)
        )
        report.add(Figure(f"{labels[service]} / bare, whole process", whole, "x"))
    for name in ("deployed", "deployed_sources"):
        note = f"whole process {statistics.median(walls[name]) * 1e3:.0f} ms"
        report.add(Figure(labels[name], rounds.median(name), "s", note=note))
    report.add(
        Figure(
            "SQLite: deployment package / working tree",
            rounds.ratio("deployed", "sqlite_service"),
            "x",
            note="what the figure above measures is what a deployed function starts with",
        )
    )
    report.add(
        Figure(
            "SQLite: package without its bytecode / with it",
            rounds.ratio("deployed_sources", "deployed"),
            "x",
            note="the modules a cold start imports, compiled on every cold start",
        )
    )
    report.markdown = (
        f"{ROUNDS} rounds of one fresh process per contender, alternating; medians and "
        "the median of per-round ratios. The request is GET /runs/{id} as an API Gateway "
        "proxy event handed to the Chalice handler, as Lambda does. The moto server runs in "
        "its own process on 127.0.0.1. The deployment package is `make package`'s (stage "
        "prod), unzipped; its two contenders write no bytecode (PYTHONDONTWRITEBYTECODE=1), "
        "as on Lambda's read-only task root."
    )
    report.finish()


if __name__ == "__main__":
    main()
