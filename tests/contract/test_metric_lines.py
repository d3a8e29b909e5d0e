"""The Embedded Metric Format lines that starts, decisions and deadlines write
on standard output, on each backend, read as CloudWatch's specification
states the format (CloudWatch_Embedded_Metric_Format_Specification)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import engine
from chalicelib.domain.lifecycle import OnDeadline
from chalicelib.domain.models import Deadline, StepRule
from chalicelib.storage import Backend

# The units a MetricDefinition may name (the specification's list).
UNITS = {
    *("Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes"),
    *("Gigabytes", "Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits"),
    *("Percent", "Count", "Bytes/Second", "Kilobytes/Second", "Megabytes/Second"),
    *("Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second"),
    *("Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"),
}


def metrics_of(line: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The document's root and its metrics by name, every rule of the
    specification checked: the root is one JSON object holding _aws, whose
    Timestamp is epoch milliseconds and whose CloudWatchMetrics are directives
    of a Namespace, DimensionSets of root members whose values are strings,
    and Metrics each naming a root member whose value is a number."""
    root = json.loads(line)
    assert isinstance(root, dict)
    aws = root["_aws"]
    assert set(aws) == {"Timestamp", "CloudWatchMetrics"}
    assert isinstance(aws["Timestamp"], int) and aws["Timestamp"] > 0
    found: dict[str, float] = {}
    for directive in aws["CloudWatchMetrics"]:
        assert set(directive) == {"Namespace", "Dimensions", "Metrics"}
        assert isinstance(directive["Namespace"], str) and directive["Namespace"]
        for dimension_set in directive["Dimensions"]:
            assert 1 <= len(dimension_set) <= 30
            assert all(isinstance(root[key], str) for key in dimension_set)
        assert 1 <= len(directive["Metrics"]) <= 100
        for metric in directive["Metrics"]:
            assert set(metric) <= {"Name", "Unit", "StorageResolution"}
            assert metric.get("Unit", "None") in UNITS
            value = root[metric["Name"]]
            assert isinstance(value, (int, float)) and not isinstance(value, bool)
            found[metric["Name"]] = value
    return root, found


def lines_of(capsys: pytest.CaptureFixture[str]) -> list[tuple[dict[str, Any], dict[str, float]]]:
    out = capsys.readouterr().out.splitlines()
    return [metrics_of(line) for line in out if line.startswith('{"_aws"')]


def test_a_start_and_each_decision_write_one_line(
    storage: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = [StepRule("Manager", required_approvals=2), StepRule("Finance")]
    workflow = engine.create_workflow(storage, "PO", steps=steps)
    run = engine.start_run(storage, workflow.id, "t", clock=lambda: "2026-03-01T00:00:00.000Z")
    engine.approve(storage, run.id, "amy", clock=lambda: "2026-03-01T00:00:05.000Z")
    engine.approve(storage, run.id, "bo", clock=lambda: "2026-03-01T00:00:07.500Z")
    engine.reject(storage, run.id, "fay", clock=lambda: "2026-03-01T00:01:07.500Z")

    found = lines_of(capsys)

    assert [(root["workflow"], root["step"], values) for root, values in found] == [
        (str(workflow.id), "Manager", {"Started": 1}),
        (str(workflow.id), "Manager", {"Decisions": 1}),
        (str(workflow.id), "Manager", {"Decisions": 1, "WaitSeconds": 7.5}),
        (str(workflow.id), "Finance", {"Decisions": 1, "WaitSeconds": 60.0}),
    ]
    root = found[2][0]
    assert root["_aws"]["Timestamp"] == 1772323207500
    directive = root["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "ApprovalWorkflows"
    assert directive["Dimensions"] == [["workflow", "step"]]
    assert directive["Metrics"] == [
        {"Name": "Decisions", "Unit": "Count"},
        {"Name": "WaitSeconds", "Unit": "Seconds"},
    ]
    assert root["run_id"] == run.id


def test_a_deadline_writes_overdue_in_the_namespace_configured(
    storage: Backend, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKFLOW_METRICS_NAMESPACE", "Approvals/Test")
    remind = StepRule("Manager", deadline=Deadline(60, OnDeadline.REMIND))
    expire = StepRule("Finance", deadline=Deadline(60, OnDeadline.REJECT))
    workflow = engine.create_workflow(storage, "PO", steps=[remind, expire])
    run = engine.start_run(storage, workflow.id, "t", clock=lambda: "2026-03-01T00:00:00.000Z")
    assert engine.sweep(storage, lambda: "2026-03-01T00:01:00.000Z") == 1
    engine.approve(storage, run.id, "amy", clock=lambda: "2026-03-01T00:01:30.000Z")
    assert engine.sweep(storage, lambda: "2026-03-01T00:02:30.000Z") == 1
    withdrawn = engine.start_run(storage, workflow.id, "u", "rita")
    engine.cancel(storage, withdrawn.id, "rita")  # no line: a cancellation decides no step

    found = lines_of(capsys)

    assert [(root["step"], values) for root, values in found] == [
        ("Manager", {"Started": 1}),
        ("Manager", {"Overdue": 1}),
        ("Manager", {"Decisions": 1, "WaitSeconds": 90.0}),
        ("Finance", {"Overdue": 1, "Decisions": 1, "WaitSeconds": 60.0}),
        ("Manager", {"Started": 1}),
    ]
    assert {root["_aws"]["CloudWatchMetrics"][0]["Namespace"] for root, _ in found} == {
        "Approvals/Test"
    }
