"""Smoke runs of benchmarks 6 and 7. Benchmark 6 (bench/deployed_cpu.py) without valgrind: two units
of the service through the packaged entry point on a moto server, recorded,
and the floor replaying its requests on a fresh table, both answering."""

from __future__ import annotations

import json
from pathlib import Path

from bench import deployed_cpu
from bench._common import PROJECT_DIR
from bench.moto_process import MotoProcess


def test_the_floor_sends_what_the_service_sent_and_both_answer(tmp_path: Path) -> None:
    exchange = str(tmp_path / "requests.json")
    with MotoProcess() as moto:
        tables = deployed_cpu.Tables(moto.endpoint)
        record = json.loads(
            json.dumps(deployed_cpu.recorded_units(PROJECT_DIR, tables, exchange, 2))
        )
        deployed_cpu.run_child("floor", 2, exchange, PROJECT_DIR, tables.fresh(PROJECT_DIR), False)
    assert record["labels"] == ["start", "approve", "approve", "approve", "get"] * 2
    operations = [[op for op, _ in sent] for sent in record["requests"]]
    # A warm unit: a Query and a transaction per decision and start, one Query per read.
    assert operations[5:] == [["Query", "TransactWriteItems"]] * 4 + [["Query"]]
    cpu_ms, mix = deployed_cpu.approval_figures(record, warmup=1, timed=1)
    assert cpu_ms > 0 and mix == {"Query": 1.0, "TransactWriteItems": 1.0}
    assert deployed_cpu.modelled_latency(cpu_ms, mix, 1769) == cpu_ms + 15


def test_the_contention_smoke_run_records_each_acknowledged_approval_once(
    tmp_path: Path,
) -> None:
    """Benchmark 7 at 10 approvers (BENCH_QUICK): its checks hold and it prints
    the conditional writes per decision."""
    import os
    import subprocess
    import sys

    out = tmp_path / "contention.json"
    env = {**os.environ, "BENCH_QUICK": "1"}
    subprocess.run(
        [sys.executable, "-m", "bench.contention", "--json", str(out)],
        cwd=PROJECT_DIR,
        env=env,
        check=True,
        capture_output=True,
    )
    figures = {f["name"]: f for f in json.loads(out.read_text())["figures"]}
    assert figures["acknowledged approvals recorded once, quorum exact"]["met"] is True
    assert figures["5xx or other faults"]["value"] == 0
    assert figures["conditional-write attempts per acknowledged decision"]["value"] >= 1
