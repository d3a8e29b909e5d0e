"""What every benchmark shares: alternating rounds, medians, ratios, the report.

Machines are noisy, so absolute times are not comparable between runs; ratios
measured in one run, with the contenders alternating round by round, are.
Each benchmark prints its figures and, with `--json PATH`, writes them for
`bench/run.py`, which puts them into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# BENCH_QUICK=1 runs every benchmark with a fraction of its rounds: a smoke
# test of the scripts, not figures to keep.
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")


def scaled(full: int, quick: int) -> int:
    return quick if QUICK else full


def workdir(name: str) -> str:
    """A temporary directory, removed when the benchmark's process exits."""
    path = tempfile.mkdtemp(prefix=f"bench-{name}-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@dataclass
class Figure:
    """One measured figure, and the goal it is held to (if any)."""

    name: str
    value: float
    unit: str
    goal: str = ""
    met: Optional[bool] = None
    note: str = ""

    def shown(self) -> str:
        return fmt(self.value, self.unit)


@dataclass
class Report:
    """A benchmark's figures plus a markdown section for BENCHMARKS.md."""

    benchmark: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    markdown: str = ""

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def print(self) -> None:
        print(f"\n== {self.title} ==")
        width = max((len(f.name) for f in self.figures), default=10)
        for f in self.figures:
            verdict = "" if f.met is None else ("  MET" if f.met else "  MISSED")
            goal = f"   goal {f.goal}" if f.goal else ""
            print(f"  {f.name:<{width}}  {f.shown():>14}{goal}{verdict}")
            if f.note:
                print(f"  {'':<{width}}  {f.note}")

    def finish(self) -> None:
        """Print the figures; write them as JSON where --json asks."""
        self.print()
        parser = argparse.ArgumentParser()
        parser.add_argument("--json")
        args, _ = parser.parse_known_args()
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(asdict(self), out, indent=1)


def fmt(value: float, unit: str) -> str:
    if unit == "s":
        return _seconds(value)
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "$":
        return f"${value:,.2f}"
    if unit.startswith("/"):
        return f"{value:,.0f}{unit}"
    if float(value).is_integer():
        return f"{value:,.0f} {unit}".rstrip()
    return f"{value:,.2f} {unit}".rstrip()


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


@dataclass
class Rounds:
    """Samples per contender, one per round, taken in alternation."""

    samples: dict[str, list[float]]

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def ratio(self, numerator: str, denominator: str) -> float:
        """The median of the per-round ratios numerator / denominator."""
        return statistics.median(
            a / b for a, b in zip(self.samples[numerator], self.samples[denominator], strict=False)
        )

    def ratio_of(self, per_round: Callable[[Mapping[str, float]], float]) -> float:
        """The median over rounds of any function of one round's samples."""
        names = list(self.samples)
        rounds = zip(*(self.samples[name] for name in names), strict=False)
        return statistics.median(per_round(dict(zip(names, row, strict=False))) for row in rounds)


def alternate(
    contenders: Mapping[str, Callable[[], float]], rounds: int, warmup: int = 1, progress: str = ""
) -> Rounds:
    """Call each contender once per round, rotating who goes first.

    Each contender measures itself and returns one sample (seconds per unit of
    work, say); warm-up rounds run the same way and are thrown away.
    """
    names = list(contenders)
    progress = progress if sys.stderr.isatty() else ""
    samples: dict[str, list[float]] = {name: [] for name in names}
    for index in range(warmup + rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            value = contenders[name]()
            if index >= warmup:
                samples[name].append(value)
        if progress:
            print(
                f"\r  {progress}: round {index + 1}/{warmup + rounds}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if progress:
        print(file=sys.stderr)
    return Rounds(samples)


def per_unit(work: Callable[[], None], units: int) -> Callable[[], float]:
    """A contender that runs `work` `units` times: seconds per unit."""

    def measure() -> float:
        start = time.perf_counter()
        for _ in range(units):
            work()
        return (time.perf_counter() - start) / units

    return measure


def quiet_access_log(service: Any) -> None:
    """Send the service's access log (one JSON line per request) and its metric
    lines (one per start, decision and deadline) to /dev/null.

    The lines are still formatted and written, as they would be to Lambda's
    stdout, but not into the benchmark's own output.
    """
    from chalicelib import metric_lines

    # Open for as long as the lines are written to it: the process's life.
    devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    service.access_log.set_stream(devnull)
    metric_lines.set_stream(devnull)


AWS_TEST_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


def offline_aws_env() -> dict[str, str]:
    """Fake credentials and no profile: boto3 must never reach a real account."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(AWS_TEST_ENV)
    return env


def gateway_event(
    method: str,
    resource: str,
    path: str,
    path_params: Optional[dict[str, str]] = None,
    body: Optional[Any] = None,
) -> dict[str, Any]:
    """An API Gateway (REST, proxy) event on the stage "api", as Lambda hands it
    to the handler (scripts/gateway_events.py)."""
    from scripts.gateway_events import proxy_event

    return proxy_event(
        method,
        path,
        {"Content-Type": "application/json", "Host": "localhost"},
        None if body is None else json.dumps(body).encode(),
        http_api=False,
        route=resource,
        path_parameters=path_params,
        stage="api",
        request_id="c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
    )


class FakeLambdaContext:
    """The attributes of a Lambda context that Chalice reads."""

    function_name = "approval-workflows-dev"
    memory_limit_in_mb = 128
    aws_request_id = "bench"
    log_group_name = log_stream_name = "bench"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000
