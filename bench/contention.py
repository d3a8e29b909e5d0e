"""Benchmark 7: contention on one run (goal 6 of issue 43; a figure, not a gate).

    .venv/bin/python -m bench.contention

APPROVERS distinct people approve one step whose quorum is all of them, at
once, on DynamoDB (a moto server on 127.0.0.1, reached over HTTP). Each
approver is a thread with a storage and a client of its own, as separate
Lambda containers would be, and retries what the service refuses with 409
(a decision that lost the race for the run: nothing was written) until it is
told "decided". Each asks for the minimal answer (`Prefer: return=minimal`),
so that a decision reads the run item rather than a history that grows to
APPROVERS actions. Checked: every acknowledged approval is in the run's history
exactly once, the step's quorum is exact (the run completes with the last
approval and holds APPROVERS approvals), and no call ended in a 5xx (the
service's Unavailable) or an unexpected error. Printed beside them: the
conditional writes (TransactWriteItems) sent per acknowledged decision,
which says what contention costs in requests and write units.
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any

from bench._common import Figure, Report, offline_aws_env, scaled

APPROVERS = scaled(100, 10)
# A racer's bound on attempts: far above what a fair interleaving needs.
ATTEMPTS = 2000
TABLE = "contention"


class Counted:
    """Counts the conditional writes a client sends (thread-safe)."""

    def __init__(self) -> None:
        self.writes = 0
        self.lock = threading.Lock()

    def __call__(self, **_: Any) -> None:
        with self.lock:
            self.writes += 1


def patient_client(session: Any) -> Any:
    """A client as the service configures its own, but waiting minutes rather
    than seconds for an answer: the moto server answers one request at a time,
    so a hundred clients queue there, which DynamoDB never makes them do."""
    from botocore.config import Config

    from chalicelib.storage.dynamodb.client import MAX_ATTEMPTS

    config = Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=300,
        read_timeout=300,
        tcp_keepalive=True,
    )
    return session.client("dynamodb", config=config)


def approver(
    storage: Any, run_id: int, actor: str, start: threading.Barrier, outcome: dict[str, Any]
) -> None:
    """Approve as `actor` until told decided; what each attempt was answered."""
    from chalicelib import engine
    from chalicelib.domain import errors

    answers: list[str] = []
    outcome[actor] = answers
    start.wait()
    for _ in range(ATTEMPTS):
        try:
            # Prefer: return=minimal: the decision reads the run item, not its history.
            engine.approve(storage, run_id, actor, history=False)
        except errors.Unavailable:
            answers.append("503")
        except errors.Conflict:
            answers.append("409")
            time.sleep(random.uniform(0, 0.005))
            continue
        except Exception as exc:  # every other fault is counted and shown, not hidden
            answers.append(f"error {type(exc).__name__}: {exc}")
            return
        else:
            answers.append("200")
            return


def main() -> None:
    from bench.moto_process import MotoProcess

    os.environ.clear()
    os.environ.update(offline_aws_env())
    report = Report("contention", "7. Contention on one run (DynamoDB on moto, over HTTP)")
    with MotoProcess() as moto:
        os.environ.update(
            WORKFLOW_STORAGE="dynamodb",
            WORKFLOW_TABLE=TABLE,
            WORKFLOW_EVENT_DELIVERY="stream",
            AWS_ENDPOINT_URL_DYNAMODB=moto.endpoint,
        )
        from chalicelib import engine
        from chalicelib.domain.models import StepRule
        from chalicelib.storage.dynamodb import client as dynamodb_client
        from chalicelib.storage.dynamodb import schema as dynamodb_schema
        from chalicelib.storage.dynamodb.adapter import DynamoDBStorage

        session = __import__("boto3").session.Session()
        admin = dynamodb_client.create_client(session)
        dynamodb_schema.ensure_table(admin, TABLE)
        storage = DynamoDBStorage(admin, TABLE)
        workflow = engine.create_workflow(
            storage, "Board", steps=[StepRule("Everyone", (), APPROVERS)]
        )
        run = engine.start_run(storage, workflow.id, "One run, every approver at once")
        counted = Counted()
        storages = []
        for _ in range(APPROVERS):
            client = patient_client(session)
            client.meta.events.register("before-call.dynamodb.TransactWriteItems", counted)
            storages.append(DynamoDBStorage(client, TABLE))
        start = threading.Barrier(APPROVERS)
        outcome: dict[str, list[str]] = {}
        threads = [
            threading.Thread(
                target=approver, args=(storages[n], run.id, f"approver-{n:03}", start, outcome)
            )
            for n in range(APPROVERS)
        ]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
        final = engine.get_run(storage, run.id)

    told = sorted(actor for actor, answers in outcome.items() if answers[-1:] == ["200"])
    recorded = sorted(action.actor for action in final.actions if action.action == "approve")
    faults = [a for answers in outcome.values() for a in answers if a not in ("200", "409")]
    conflicts = sum(answers.count("409") for answers in outcome.values())
    exact = recorded == told and len(told) == APPROVERS and final.status == "completed"
    report.add(
        Figure(
            "acknowledged approvals recorded once, quorum exact",
            1 if exact else 0,
            "",
            goal="1",
            met=exact,
            note=f"{len(told)} acknowledged, {len(recorded)} recorded, the run {final.status}",
        )
    )
    report.add(
        Figure(
            "5xx or other faults",
            len(faults),
            "",
            goal="0",
            met=not faults,
            note="; ".join(faults[:3]),
        )
    )
    report.add(
        Figure(
            "conditional-write attempts per acknowledged decision",
            counted.writes / max(len(told), 1),
            "",
            note=f"{counted.writes} TransactWriteItems, {conflicts} answers 409 "
            f"(retried); {APPROVERS} approvers in {seconds:.1f} s; a figure, not a gate",
        )
    )
    report.markdown = (
        f"{APPROVERS} threads, each a storage and a client of its own (separate containers), "
        "approve one step whose quorum is all of them, at once, on a moto server over "
        "HTTP, each asking for the minimal answer (`Prefer: return=minimal`); a 409 (the "
        "decision lost the race: nothing written) is retried after up to 5 ms."
    )
    report.finish()


if __name__ == "__main__":
    main()
