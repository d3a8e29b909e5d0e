"""The API test helper: the request sequences the API tests repeat, every
response checked against the OpenAPI document."""

from __future__ import annotations

import itertools
import json
from typing import Any, Optional

from chalice.test import Client, HTTPResponse

from tests.support import openapi_contract

JSON_HEADERS = {"Content-Type": "application/json"}
_NO_BODY = object()


class Api:
    """The request sequences the API tests repeat (create, append, start, approve, reject).

    The typed helpers assert the success status and return the parsed body;
    `request`, `get` and `post` return the raw response for tests of failures.
    Every response is first checked against the OpenAPI document (status, headers, body).
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self._names = itertools.count(1)

    # -- raw requests --------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = _NO_BODY,
        *,
        raw: Optional[bytes] = None,
        headers: Optional[dict[str, str]] = None,
    ) -> HTTPResponse:
        if raw is None:
            raw = b"" if body is _NO_BODY else json.dumps(body).encode("utf-8")
        response = self.client.http.request(method, path, headers=headers or JSON_HEADERS, body=raw)
        openapi_contract.assert_conforms(
            method, path, response.status_code, response.headers, response.body
        )
        return response

    def get(self, path: str) -> HTTPResponse:
        return self.request("GET", path)

    def delete(self, path: str) -> HTTPResponse:
        return self.request("DELETE", path)

    def post(self, path: str, body: Any = _NO_BODY, **kwargs: Any) -> HTTPResponse:
        return self.request("POST", path, body, **kwargs)

    # -- successful sequences ------------------------------------------------

    def create_workflow(
        self, name: Optional[str] = None, steps: Any = None, description: Optional[str] = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name or f"Workflow {next(self._names)}"}
        if steps is not None:
            body["steps"] = list(steps)
        if description is not None:
            body["description"] = description
        return self._expect(201, self.post("/workflows", body))

    def append_step(self, workflow_id: int, name: str) -> dict[str, Any]:
        return self._expect(201, self.post(f"/workflows/{workflow_id}/steps", {"name": name}))

    def get_workflow(self, workflow_id: int) -> dict[str, Any]:
        return self._expect(200, self.get(f"/workflows/{workflow_id}"))

    def start_run(self, workflow_id: int, title: str = "Laptop purchase") -> dict[str, Any]:
        return self._expect(201, self.post("/runs", {"workflow_id": workflow_id, "title": title}))

    def get_run(self, run_id: int) -> dict[str, Any]:
        return self._expect(200, self.get(f"/runs/{run_id}"))

    def approve(
        self, run_id: int, actor: str = "alice", comment: Optional[str] = None
    ) -> dict[str, Any]:
        return self._expect(200, self.post(f"/runs/{run_id}/approve", _decision(actor, comment)))

    def reject(
        self, run_id: int, actor: str = "bob", comment: Optional[str] = None
    ) -> dict[str, Any]:
        return self._expect(200, self.post(f"/runs/{run_id}/reject", _decision(actor, comment)))

    def started_run(
        self, steps: Any = ("Manager", "Finance", "Legal"), title: str = "Laptop purchase"
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new workflow with `steps` and a run of it, just started."""
        workflow = self.create_workflow(steps=steps)
        return workflow, self.start_run(workflow["id"], title)

    @staticmethod
    def _expect(status: int, response: HTTPResponse) -> dict[str, Any]:
        assert response.status_code == status, (response.status_code, response.body)
        body = response.json_body
        assert isinstance(body, dict), response.body
        return body


def _decision(actor: str, comment: Optional[str]) -> dict[str, Any]:
    return {"actor": actor} if comment is None else {"actor": actor, "comment": comment}
