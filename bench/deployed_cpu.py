"""Benchmark 6: the CPU of an approval as deployed, against a floor, in instructions.

    .venv/bin/python -m bench.deployed_cpu [--tree PATH ...]

The packaged function's path: HTTP API events (payload 1.0, `$default`)
handed to `chalicelib/http_api.py`, the service in DynamoDB mode against a
moto server on 127.0.0.1 (its own process, so that the endpoint's work stays
out). The floor is a bare Chalice app on the same events that sends the same
DynamoDB requests, with the same parameters and item sizes, through a client
made as the service makes its own (bench/deployed_child.py). A unit is
benchmark 1's: start a run of a 3-step workflow, approve it three times,
read it back.

valgrind's callgrind counts the instructions of each contender's process
(the client's side only: moto runs outside valgrind). Each contender runs
twice, with WARMUP units and with WARMUP + UNITS, each on a fresh table
holding the same workflow; the difference, over UNITS, is a warm unit's
instructions, without the import, the first connection or the teardown.
PYTHONHASHSEED is fixed: the counts move by a few parts in a thousand from
run to run (the random ids and times of events are the only difference).

Goal 3 models the approval's latency at each memory size from the service's
CPU time per approval, measured natively in the recording run (median of
its approvals), stretched by 1,769 MB / memory (the share of a vCPU Lambda
gives below 1,769 MB), plus 10 ms per transaction and 5 ms per other
DynamoDB request: benchmark 4's model.

`--tree PATH` counts another checkout's service too (an older commit),
against the same floor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from bench._common import PROJECT_DIR, QUICK, Figure, Report, offline_aws_env, scaled

WARMUP = scaled(3, 1)
UNITS = scaled(10, 2)
# The native run that records the requests times this many units (after WARMUP).
TIMED_UNITS = scaled(60, 2)
GOAL_RATIO = 1.3
GOAL_LATENCY_MS = 40.0
# Lambda's memory sizes priced; the packaged one is deploy's (MemorySize).
FULL_SHARE_MB = 1769
LATENCY_MS = {"TransactWriteItems": 10.0}
DEFAULT_LATENCY_MS = 5.0
SETUP = """
from chalicelib import engine
from chalicelib.storage import create_storage
storage = create_storage()
engine.create_workflow(storage, "po", steps=["One", "Two", "Three"])
"""


def environment(tree: str, endpoint: str, table: str) -> dict[str, str]:
    env = {
        key: value for key, value in offline_aws_env().items() if not key.startswith("WORKFLOW_")
    }
    env.update(
        PYTHONPATH=os.pathsep.join(dict.fromkeys([tree, PROJECT_DIR])),
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
        WORKFLOW_STORAGE="dynamodb",
        WORKFLOW_TABLE=table,
        WORKFLOW_EVENT_DELIVERY="stream",
        AWS_ENDPOINT_URL_DYNAMODB=endpoint,
    )
    return env


class Tables:
    """Fresh tables on the moto server, each holding the unit's workflow."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.made = 0

    def fresh(self, tree: str) -> dict[str, str]:
        self.made += 1
        env = environment(tree, self.endpoint, f"cpu{self.made}")
        make_table = (
            "from chalicelib.storage.dynamodb import client, schema\n"
            "import os\n"
            "schema.ensure_table(client.create_client(), os.environ['WORKFLOW_TABLE'])\n"
        )
        for program in (make_table, SETUP):
            subprocess.run(
                [sys.executable, "-c", program], cwd=tree, env=env, check=True, capture_output=True
            )
        return env


def run_child(
    mode: str, units: int, exchange: str, tree: str, env: dict[str, str], counted: bool
) -> int:
    """Run one contender; its instruction count when `counted` (else 0)."""
    child = os.path.join(PROJECT_DIR, "bench", "deployed_child.py")
    command = [sys.executable, child, mode, str(units), exchange]
    if counted:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0 or done.stdout.splitlines()[-1:] != ["done"]:
        raise SystemExit(f"{mode} in {tree} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
    if not counted:
        return 0
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind counted nothing for {mode}:\n{done.stderr}")
    return int(found.group(1))


def per_unit(mode: str, exchange: str, tree: str, tables: Tables) -> float:
    """A warm unit's instructions: (WARMUP + UNITS) - WARMUP units, over UNITS."""
    short = run_child(mode, WARMUP, exchange, tree, tables.fresh(tree), counted=True)
    long = run_child(mode, WARMUP + UNITS, exchange, tree, tables.fresh(tree), counted=True)
    return (long - short) / UNITS


def recorded_units(tree: str, tables: Tables, exchange: str, units: int) -> dict[str, Any]:
    """The service's requests and CPU times, from a native run of `units` units."""
    run_child("service", units, exchange, tree, tables.fresh(tree), counted=False)
    with open(exchange, encoding="utf-8") as kept:
        result: dict[str, Any] = json.load(kept)
        return result


def approval_figures(
    record: dict[str, Any], warmup: int = WARMUP, timed: int = TIMED_UNITS
) -> tuple[float, dict[str, float]]:
    """The median CPU ms of a warm approval (after `warmup` of `warmup + timed`
    units), and its DynamoDB requests by operation."""
    warm = len(record["labels"]) * warmup // (warmup + timed)
    approvals = [
        (cpu, sent)
        for label, cpu, sent in zip(
            record["labels"], record["cpu"], record["requests"], strict=True
        )
        if label == "approve"
    ][warm:]
    times = sorted(cpu for cpu, _ in approvals)
    operations: dict[str, float] = {}
    for _, sent in approvals:
        for operation, _params in sent:
            operations[operation] = operations.get(operation, 0) + 1 / len(approvals)
    return times[len(times) // 2] * 1000, operations


def modelled_latency(cpu_ms: float, operations: dict[str, float], memory_mb: int) -> float:
    waiting = sum(LATENCY_MS.get(op, DEFAULT_LATENCY_MS) * n for op, n in operations.items())
    return cpu_ms * max(1.0, FULL_SHARE_MB / memory_mb) + waiting


def packaged_memory() -> int:
    from bench.dynamodb_cost import packaged_memory_size

    return packaged_memory_size()


def main() -> None:
    from bench.moto_process import MotoProcess

    parser = argparse.ArgumentParser(description="Benchmark 6: CPU per approval, deployed path.")
    parser.add_argument("--tree", action="append", default=[], help="another checkout")
    args, _ = parser.parse_known_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: `make bench-instructions` installs it")
    report = Report("deployed_cpu", "6. CPU per approval, deployed path (DynamoDB, HTTP API)")
    with tempfile.TemporaryDirectory(prefix="bench-deployed-") as tmp, MotoProcess() as moto:
        tables = Tables(moto.endpoint)
        exchange = os.path.join(tmp, "requests.json")
        record = recorded_units(PROJECT_DIR, tables, exchange, WARMUP + TIMED_UNITS)
        floor = per_unit("floor", exchange, PROJECT_DIR, tables)
        service = per_unit("service", "", PROJECT_DIR, tables)
        others = {
            tree: per_unit("service", "", os.path.abspath(tree), tables) for tree in args.tree
        }
    requests = sum(len(sent) for sent in record["requests"]) / len(record["requests"])
    ratio = service / floor
    report.add(
        Figure(
            "service: instructions per unit",
            service / 1e6,
            "M instructions",
            note="start, 3 approvals, GET: 5 HTTP API events through chalicelib/http_api.py",
        )
    )
    report.add(
        Figure(
            "floor: instructions per unit",
            floor / 1e6,
            "M instructions",
            note=f"a bare Chalice app sending the same {requests * 5:.0f} DynamoDB requests",
        )
    )
    report.add(Figure("service's own share", (service - floor) / service * 100, "%"))
    report.add(
        Figure(
            "CPU per approval, deployed path / floor",
            ratio,
            "x",
            goal=f"<= {GOAL_RATIO}",
            met=ratio <= GOAL_RATIO,
            note=f"{UNITS} warm units after {WARMUP}, callgrind; the endpoint (moto) left out",
        )
    )
    for tree, count in others.items():
        report.add(
            Figure(
                f"service of {tree} / floor",
                count / floor,
                "x",
                note=f"{count / 1e6:.2f} M instructions per unit",
            )
        )
    cpu_ms, operations = approval_figures(record)
    memory = packaged_memory()
    mix = ", ".join(f"{op} {n:.2f}" for op, n in sorted(operations.items()))
    report.add(
        Figure(
            "approve: CPU per call, native",
            cpu_ms,
            "ms",
            note=f"median of {TIMED_UNITS * 3} warm approvals in this process; {mix}",
        )
    )
    for mb in sorted({128, 256, memory, 512, 1024}):
        latency = modelled_latency(cpu_ms, operations, mb)
        packaged = mb == memory
        report.add(
            Figure(
                "modelled approve latency at packaged memory"
                if packaged
                else f"modelled approve latency at {mb} MB",
                latency,
                "ms",
                goal=f"<= {GOAL_LATENCY_MS:.0f} ms" if packaged else "",
                met=(latency <= GOAL_LATENCY_MS) if packaged else None,
                note=f"{cpu_ms:.2f} ms x {max(1.0, FULL_SHARE_MB / mb):.2f} + the requests' waits"
                + (f"; {mb} MB is the packaged memory" if packaged else ""),
            )
        )
    report.markdown = markdown(report)
    report.finish()


def markdown(report: Report) -> str:
    rows = [f"| {f.name} | {f.shown()} | {f.goal} | {f.note} |" for f in report.figures]
    return "\n".join(
        [
            "| figure | measured | goal | note |",
            "|---|---|---|---|",
            *rows,
            "",
            "Instructions (valgrind's callgrind) of the client's process alone; the moto "
            "server's work is left out on both sides. Latency modelled as in benchmark 4: "
            "CPU x 1,769 MB / memory, plus 10 ms per transaction and 5 ms per other request."
            + (" Quick run: too few units for the figures to hold." if QUICK else ""),
        ]
    )


if __name__ == "__main__":
    main()
