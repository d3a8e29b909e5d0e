"""A Chalice app with the service's routes, each doing nothing: the framework's own cost."""

from __future__ import annotations

from typing import Any

from chalice.app import Chalice

app = Chalice(app_name="bare")


@app.route("/workflows", methods=["POST"])
def create_workflow() -> Any:
    return {}


@app.route("/workflows/{workflow_id}", methods=["GET"])
def get_workflow(workflow_id: str) -> Any:
    return {}


@app.route("/workflows/{workflow_id}/steps", methods=["POST"])
def append_step(workflow_id: str) -> Any:
    return {}


@app.route("/runs", methods=["POST"])
def start_run() -> Any:
    return {}


@app.route("/runs/{run_id}", methods=["GET"])
def get_run(run_id: str) -> Any:
    return {}


@app.route("/runs/{run_id}/approve", methods=["POST"])
def approve(run_id: str) -> Any:
    return {}


@app.route("/runs/{run_id}/reject", methods=["POST"])
def reject(run_id: str) -> Any:
    return {}
