"""The versions' upgrade of a DynamoDB table written before versions (issue 40):

    python -m chalicelib.storage.dynamodb.versions_upgrade --table NAME \\
        [--endpoint-url URL] [--dry-run]

Once per table, before the release with versions serves (docs/deploy.md says
when, docs/storage.md what). For each workflow item the release before wrote,
it writes what the new release's reads cannot default:

- the workflow's VERSION#000001 item, which a run's next steps are read from
  (items.version_item of the workflow item as read: version 1 is what it held);
- its step items under the keys that name the version (STEP#000001#<order>,
  were STEP#<order>), which the seed's append puts its next order beside;
- the workflow item's event_seq, where an append of the release before left
  the sequence of the workflow's last event on its newest step item instead
  (the new release numbers the workflow's next event from the workflow item).

Every write is conditional: a step item and the version item only where they
are not there yet, the workflow item only while it is as read (no `version`,
its steps and event_seq as read), so that the upgrade can run twice and beside
the release before, whose appends it would otherwise race. The old STEP#<order>
items stay: the new release never reads them (it reads a workflow's steps from
its workflow and version items, and its queries of a workflow's partition are
bounded to VERSION# keys), and deleting them would need DeleteItem for bytes
only. Runs, actions, inbox entries and events need nothing: their reads
default what the release before did not write (items.py).

It prints a line per workflow it writes (or would, with --dry-run) and the
counts; it exits 1 where it could not upgrade a workflow or DynamoDB refused or
did not answer (one line says why, no traceback), 2 where no client can be made
(no region, a malformed endpoint).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Workflow
from chalicelib.domain.record import Record
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import items, keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.keys import Item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The version a workflow written before versions is at.
FIRST_VERSION = 1
# Reads and writes of one workflow that a concurrent append (of the release
# before) or another run of this upgrade may refuse, before it is reported.
ATTEMPTS = 3


class NotUpgradable(Exception):
    """A workflow this upgrade cannot write version 1 of (the message says why)."""


class Upgrade(Record):
    """What one workflow needs: its version 1 as its workflow item holds it,
    the item's event_seq as read and the workflow stream's last sequence."""

    workflow: Workflow
    read_seq: int
    last_seq: int


class Tally:
    """The workflows seen, by what the upgrade did with each."""

    def __init__(self) -> None:
        self.upgraded = 0
        self.current = 0
        self.failed = 0


def main(argv: Optional[Sequence[str]] = None, client: Optional[DynamoDBClient] = None) -> int:
    """Upgrade every workflow of the table; 0 when each has its version 1 (or,
    dry, would have), 1 when one could not or DynamoDB failed, 2 without a client."""
    args = parse(argv)
    try:
        if client is None:
            if args.endpoint_url:
                os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = args.endpoint_url
            client = dynamodb_client.create_client()
    except errors.Unavailable:
        return 2  # the storage's log line has said what to set
    requests = Requests(client, args.table)
    tally = Tally()
    try:
        for workflow_id in workflow_ids(requests):
            upgrade_counted(requests, workflow_id, args.dry_run, tally)
    except errors.Unavailable:
        # The storage's log line has said what DynamoDB answered, and what to do.
        print(summary(args.table, tally, args.dry_run) + "; stopped: DynamoDB failed")
        return 1
    print(summary(args.table, tally, args.dry_run))
    return 1 if tally.failed else 0


def parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m chalicelib.storage.dynamodb.versions_upgrade",
        description="Write the version items a DynamoDB table written before versions "
        "needs (docs/storage.md), once, before the release with versions serves.",
    )
    parser.add_argument("--table", required=True, help="the DynamoDB table's name")
    parser.add_argument(
        "--endpoint-url", help="a DynamoDB endpoint other than AWS's (DynamoDB Local, moto)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what it would write, and write nothing"
    )
    return parser.parse_args(argv)


def workflow_ids(requests: Requests) -> Iterator[int]:
    """The id of every workflow item, by a consistent, paginated Scan: it reads
    the whole table, which the service never does, but this runs once per table
    (twice at most), and a Scan reads the table itself, where the `all` index a
    workflow list Queries is eventually consistent."""
    params: dict[str, Any] = {
        "TableName": requests.table,
        "ConsistentRead": True,
        "FilterExpression": "SK = :workflow",
        "ProjectionExpression": "#id",
        "ExpressionAttributeNames": {"#id": "id"},
        "ExpressionAttributeValues": {":workflow": s(keys.WORKFLOW_SK)},
    }
    while True:
        page = requests.call("scan", **params)
        for item in page["Items"]:
            yield int(item["id"]["N"])
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def upgrade_counted(requests: Requests, workflow_id: int, dry_run: bool, tally: Tally) -> None:
    """Upgrade one workflow, say what was written (or would be), and count it."""
    try:
        upgrade = upgrade_workflow(requests, workflow_id, dry_run)
    except NotUpgradable as exc:
        tally.failed += 1
        print(f"workflow {workflow_id}: NOT upgraded: {exc}", file=sys.stderr)
        return
    if upgrade is None:
        tally.current += 1
        return
    tally.upgraded += 1
    workflow = upgrade.workflow
    moved = (
        f"; event_seq {upgrade.read_seq} -> {upgrade.last_seq}"
        if upgrade.last_seq != upgrade.read_seq
        else ""
    )
    print(
        f"workflow {workflow.id} {workflow.name!r}: {'would write' if dry_run else 'wrote'} "
        f"its version 1 item and {len(workflow.steps)} step items{moved}"
    )


def upgrade_workflow(requests: Requests, workflow_id: int, dry_run: bool) -> Optional[Upgrade]:
    """The upgrade written (dry: to write) for the workflow; None where it has
    its version 1 item already (made by this release, or upgraded before)."""
    for _ in range(ATTEMPTS):
        partition = list(requests.query_partition(keys.workflow_pk(workflow_id)))
        upgrade = planned(partition)
        if upgrade is None or dry_run:
            return upgrade
        for step in upgrade.workflow.steps:
            put_absent(requests, items.step_item(step, FIRST_VERSION))
        # The version item makes the workflow upgraded: the step items are
        # there before it, and the workflow item is as read when it is put.
        if not requests.transact(
            [
                requests.put_new(items.version_item(upgrade.workflow)),
                workflow_update(requests, upgrade),
            ]
        ):
            return upgrade
        # An append of the release before, or this upgrade run beside, came first.
    raise NotUpgradable(f"it changed while being upgraded, {ATTEMPTS} times: run the upgrade again")


def planned(partition: Sequence[Item]) -> Optional[Upgrade]:
    """What a workflow's partition (its items, as read) needs; None: nothing."""
    by_sk = {item["SK"]["S"]: item for item in partition}
    if keys.version_sk(FIRST_VERSION) in by_sk:
        return None
    head = by_sk.get(keys.WORKFLOW_SK)
    if head is None:
        raise NotUpgradable("its workflow item is gone")
    if "version" in head:
        # Published by the new release before this ran: the workflow item holds
        # the newest version now, and version 1's definition is no longer there.
        raise NotUpgradable(
            f"version {items.version_of(head)} was published before the upgrade ran, so the "
            "workflow item no longer holds version 1; its steps are in its STEP#<order> items"
        )
    # The workflow item's, and each step item's: the newest append's is the last.
    last_seq = max(items.event_seq(item) for item in partition if "event_seq" in item)
    return Upgrade(items.workflow_of(head), items.event_seq(head), last_seq)


def put_absent(requests: Requests, item: Item) -> None:
    """Put `item` unless an item has its key (put by an earlier run)."""
    from botocore.exceptions import ClientError

    try:
        requests.call("put_item", **requests.put_new(item)["Put"])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise


def workflow_update(requests: Requests, upgrade: Upgrade) -> dict[str, Any]:
    """The workflow item's event_seq moved to the stream's last sequence, only
    while the item is as read: no version, its steps and event_seq unchanged."""
    return {
        "Update": {
            "TableName": requests.table,
            "Key": items.key(keys.workflow_pk(upgrade.workflow.id), keys.WORKFLOW_SK),
            "UpdateExpression": "SET event_seq = :last",
            "ConditionExpression": (
                "attribute_not_exists(#version) AND event_seq = :read AND size(#steps) = :count"
            ),
            "ExpressionAttributeNames": {"#version": "version", "#steps": "steps"},
            "ExpressionAttributeValues": {
                ":last": n(upgrade.last_seq),
                ":read": n(upgrade.read_seq),
                ":count": n(len(upgrade.workflow.steps)),
            },
        }
    }


def summary(table: str, tally: Tally, dry_run: bool) -> str:
    done = "would upgrade" if dry_run else "upgraded"
    return (
        f"table {table!r}: {tally.upgraded + tally.current + tally.failed} workflows; "
        f"{tally.upgraded} {done}, {tally.current} had their version 1 already, "
        f"{tally.failed} could not be upgraded"
    )


if __name__ == "__main__":
    sys.exit(main())
