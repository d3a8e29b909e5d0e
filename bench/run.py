"""Run the seven benchmarks, each in a fresh process, and write their figures into BENCHMARKS.md.

    .venv/bin/python -m bench.run            # all seven (`make bench`)
    .venv/bin/python -m bench.run scale      # some of them; BENCHMARKS.md is left alone

BENCHMARKS.md holds the goals and the figures; what they mean, and what was
learnt from them, is docs/performance.md, which this never writes. Only the
part of BENCHMARKS.md between the `bench:begin` and `bench:end` markers is
rewritten; its heading and the link above them are kept.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib import metadata

from bench._common import PROJECT_DIR, QUICK, fmt

BENCHMARKS = (
    "throughput",
    "scale",
    "cold_start",
    "dynamodb_cost",
    "partition_load",
    "deployed_cpu",
    "contention",
)
DOC = os.path.join(PROJECT_DIR, "BENCHMARKS.md")
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
# Each benchmark runs with this environment only: chalice.test copies the
# environment on every request, so a large one would inflate the framework's
# figure, and AWS settings of the caller must never reach boto3.
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "BENCH_QUICK")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    versions = ", ".join(
        f"{name} {metadata.version(name)}" for name in ("chalice", "boto3", "botocore", "moto")
    )
    return (
        f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; {versions}"
    )


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=PROJECT_DIR, capture_output=True, text=True
        ).stdout.strip()

    dirty = (
        " with uncommitted changes"
        if git("status", "--porcelain", "--", "app.py", "chalicelib", "bench")
        else ""
    )
    return f"{git('rev-parse', '--short', 'HEAD')}{dirty}"


def render(reports: list[dict], seconds: float) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        BEGIN,
        "",
        f"Measured {now} on {machine()}; commit {commit()}; `make bench` took "
        f"{seconds / 60:.1f} minutes.",
        "",
        "### Goals",
        "",
        "| benchmark | figure | measured | goal | |",
        "|---|---|---|---|---|",
    ]
    for report in reports:
        for f in report["figures"]:
            if f["goal"]:
                verdict = "met" if f["met"] else "**missed**"
                lines.append(
                    f"| {report['title'].split(' (')[0]} | {f['name']} | "
                    f"{fmt(f['value'], f['unit'])} | {f['goal']} | {verdict} |"
                )
    for report in reports:
        lines += [
            "",
            f"### {report['title']}",
            "",
            "| figure | measured | goal | note |",
            "|---|---|---|---|",
        ]
        for f in report["figures"]:
            goal = f["goal"] + (" (met)" if f["met"] else " (**missed**)") if f["goal"] else ""
            lines.append(
                f"| {f['name']} | {fmt(f['value'], f['unit'])} | {goal} | "
                f"{f['note'].replace('|', '/')} |"
            )
        if report["markdown"]:
            lines += ["", report["markdown"]]
    lines += ["", END]
    return "\n".join(lines)


def main() -> int:
    chosen = [name for name in sys.argv[1:] if name in BENCHMARKS] or list(BENCHMARKS)
    started = time.perf_counter()
    reports = []
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for name in chosen:
            out = os.path.join(tmp, f"{name}.json")
            step = time.perf_counter()
            env = {key: os.environ[key] for key in KEPT_ENV if key in os.environ}
            done = subprocess.run(
                [sys.executable, "-m", f"bench.{name}", "--json", out], cwd=PROJECT_DIR, env=env
            )
            if done.returncode != 0:
                print(f"bench: {name} failed (exit {done.returncode})", file=sys.stderr)
                return done.returncode
            print(f"  ({name}: {time.perf_counter() - step:.0f} s)")
            with open(out, encoding="utf-8") as results:
                reports.append(json.load(results))
    seconds = time.perf_counter() - started
    print(f"\nbench: {len(chosen)} benchmarks in {seconds / 60:.1f} minutes")
    if chosen != list(BENCHMARKS) or QUICK:
        print("bench: BENCHMARKS.md left alone (not a full run)")
        return 0
    with open(DOC, encoding="utf-8") as doc:
        text = doc.read()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    with open(DOC, "w", encoding="utf-8") as doc:
        doc.write(head + render(reports, seconds) + tail)
    print(f"bench: figures written to {os.path.relpath(DOC)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
