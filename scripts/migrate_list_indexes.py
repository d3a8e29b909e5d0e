"""Move a DynamoDB table made before the sharded run lists onto them.

    WORKFLOW_TABLE=approval-workflows python scripts/migrate_list_indexes.py [--drop-legacy]

Tables made before have one partition per run list (indexes by_workflow,
by_status, by_workflow_status and RUNS in `all`, whole items). This script, in
order, each step safe to repeat and safe beside live traffic:

1. adds the indexes of `dynamodb_schema.INDEX_KEYS` the table lacks, one at a
   time (DynamoDB builds one new index per UpdateTable), each waited for;
2. gives every run its sharded list keys (`keys.run_keys`, with the
   service's WORKFLOW_LIST_SHARDS) and removes the legacy ones (all_pk,
   workflow_pk, status_pk, workflow_status_pk), each write conditional on the
   status it read (a decision meanwhile makes it read the run again); and gives
   every workflow its step count copies;
3. with --drop-legacy, deletes the legacy indexes, one at a time: only once no
   running version of the service reads them.

On a table CloudFormation manages, the stack adds and deletes the indexes
(`make package INDEX_STEP=1..7`) and this script runs with --keys-only, for
step 2 alone, between the deploys that add indexes and those that delete the
legacy ones (docs/deploy.md). `make dynamodb-table` does step 1 alone. A
second run of the script finds nothing to do.

The credentials need dynamodb:DescribeTable, UpdateTable, Scan, GetItem and
UpdateItem on the table, which the function's role does not have. Exit 0 when
done; 1 when DynamoDB refused a step (said in one line); 2 when WORKFLOW_TABLE
or WORKFLOW_LIST_SHARDS is not usable.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib.domain import errors
from chalicelib.storage.dynamodb import client as dynamodb_client
from chalicelib.storage.dynamodb import keys, migrations
from chalicelib.storage.dynamodb import schema as dynamodb_schema
from chalicelib.storage.dynamodb.adapter import STEP_COUNT_COPIES, DynamoDBStorage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, dict[str, Any]]
# The attributes that put a run into the legacy lists.
LEGACY_RUN_KEYS = ("all_pk", *dynamodb_schema.LEGACY_INDEX_KEYS.values())
# A run whose status changes under the script is read again this often.
ATTEMPTS = 5


class Migrated(NamedTuple):
    indexes_added: list[str]
    runs_moved: int
    runs_already: int
    workflows_counted: int
    indexes_dropped: list[str]


def migrate(
    storage: DynamoDBStorage, drop_legacy: bool = False, add_indexes: bool = True
) -> Migrated:
    """The three steps of the module docstring, on `storage`'s table."""
    client, table = storage.client, storage.table
    added = dynamodb_schema.ensure_indexes(client, table) if add_indexes else []
    moved = already = counted = 0
    for item in _scan(client, table):
        if item["SK"]["S"] == keys.RUN_SK:
            if _move_run(storage, item):
                moved += 1
            else:
                already += 1
        elif item["SK"]["S"] == keys.WORKFLOW_SK:
            steps = len(item["steps"]["L"])
            workflow_id = int(item["id"]["N"])
            if migrations.raise_step_count(
                storage.requests, workflow_id, steps, range(STEP_COUNT_COPIES)
            ):
                counted += 1
    dropped = dynamodb_schema.drop_legacy_indexes(client, table) if drop_legacy else []
    return Migrated(added, moved, already, counted, dropped)


def _scan(client: DynamoDBClient, table: str) -> Iterator[Item]:
    """Every run and workflow item, read consistently, a page at a time."""
    params: dict[str, Any] = {
        "TableName": table,
        "ConsistentRead": True,
        "FilterExpression": "SK IN (:run, :workflow)",
        "ExpressionAttributeValues": {
            ":run": {"S": keys.RUN_SK},
            ":workflow": {"S": keys.WORKFLOW_SK},
        },
    }
    while True:
        page = client.scan(**params)
        yield from cast(list[Item], page["Items"])
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def wanted_keys(item: Item, shards: int) -> Item:
    """The sharded list keys `item` (a run) should have: those it has where they
    still fit its status (a run keeps its shards), the rest computed."""
    run_id, workflow_id = int(item["id"]["N"]), int(item["workflow_id"]["N"])
    status = item["status"]["S"]
    wanted = keys.run_keys(run_id, workflow_id, status, shards)
    fits = {
        "runs_pk": "RUNS#",
        "workflow_runs_pk": f"WF#{workflow_id}#",
        "status_runs_pk": f"{status}#",
        "workflow_status_runs_pk": f"WF#{workflow_id}#{status}#",
    }
    for name, prefix in fits.items():
        have = item.get(name, {}).get("S", "")
        tail = have[len(prefix) :]
        if have.startswith(prefix) and tail.isdigit():
            wanted[name] = item[name]
    return wanted


def _move_run(storage: DynamoDBStorage, item: Item) -> bool:
    """Give one run its sharded keys and take its legacy ones; False if it had
    them already. Conditional on the status read: a decision meanwhile moved
    the run, so it is read again."""
    from botocore.exceptions import ClientError

    key = {"PK": item["PK"], "SK": item["SK"]}
    for _ in range(ATTEMPTS):
        wanted = wanted_keys(item, storage.shards)
        legacy = [name for name in LEGACY_RUN_KEYS if name in item]
        if not legacy and all(item.get(name) == value for name, value in wanted.items()):
            return False
        update = "SET " + ", ".join(f"{name} = :{name}" for name in wanted)
        if legacy:
            update += " REMOVE " + ", ".join(legacy)
        try:
            storage.client.update_item(
                TableName=storage.table,
                Key=key,
                UpdateExpression=update,
                ConditionExpression="#status = :status",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    **{f":{name}": value for name, value in wanted.items()},
                    ":status": item["status"],
                },
            )
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        read = storage.client.get_item(TableName=storage.table, Key=key, ConsistentRead=True)
        item = cast(Item, read["Item"])
    raise errors.Unavailable(f"Run {item['id']['N']} kept changing status; run the script again")


def main(argv: Optional[Sequence[str]] = None, client: Optional[DynamoDBClient] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--keys-only",
        action="store_true",
        help="give runs and workflows their keys, add no index (a table CloudFormation manages)",
    )
    parser.add_argument(
        "--drop-legacy",
        action="store_true",
        help="also delete the legacy run indexes (once no running version reads them)",
    )
    args = parser.parse_args(argv)
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        table = dynamodb_client.table_name()
        storage = DynamoDBStorage(client or dynamodb_client.create_client(), table)
    except errors.Unavailable as exc:
        print(exc.message, file=sys.stderr)
        return 2
    try:
        done = migrate(storage, drop_legacy=args.drop_legacy, add_indexes=not args.keys_only)
    except (ClientError, BotoCoreError, errors.Unavailable, TimeoutError) as exc:
        print(f"Table {table!r} was not fully migrated: {exc}", file=sys.stderr)
        return 1
    print(
        f"Table {table!r}: indexes added {done.indexes_added or 'none'}; "
        f"{done.runs_moved} runs given sharded list keys ({done.runs_already} had them, "
        f"{storage.shards} shards); {done.workflows_counted} workflows given step count "
        f"copies; legacy indexes dropped {done.indexes_dropped or 'none'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
