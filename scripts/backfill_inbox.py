"""Put the runs a DynamoDB table had in progress before the inbox into it, and
move inbox entries from before the sharded inboxes into their shards.

    WORKFLOW_TABLE=approval-workflows python scripts/backfill_inbox.py

Run it once, after deploying the version with approver rules: GET /inbox reads
per-principal entries that a run gets when it reaches a step, so a run that
reached its step before the upgrade has none until it moves on. This finds
those runs (one Scan of the table) and writes each one's entries and
current_step_since in one transaction, conditional on the run not having
moved meanwhile, so it is safe beside live traffic and safe to run again (a
second run finds nothing). Everything else works on such runs without it:
decisions, lists and GET /runs/{id} read their missing attributes as the
defaults (anyone may decide, one approval, reached at their last update).
SQLite files need none of this: they migrate on open.

Run it again after deploying the version whose group and open-step inboxes are
spread over WORKFLOW_LIST_SHARDS partitions: until then, GET /inbox misses
the runs whose entries are still in the one partition each group (and the
open steps) had. Each such entry moves to its shard in one transaction,
conditional on its run still waiting at its step (else it is only deleted).

Run it again after deploying the version that compares names by their
canonical key (one person, one name): an entry written under a name as given
("user:Rita") moves to the inbox of its key ("user:rita"), the same way.

The credentials need dynamodb:Scan, Query, ConditionCheckItem and DeleteItem
and the transaction's PutItem and UpdateItem on the table; boto3's usual
configuration picks the endpoint, region and credentials. Exit 0 when done, 2
when WORKFLOW_TABLE is not set.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib.domain import decision, names
from chalicelib.storage.dynamodb import migrations
from scripts.table_of_environment import open_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def main(client: Optional[DynamoDBClient] = None) -> int:
    storage = open_table(client)
    if storage is None:
        return 2
    table = storage.table
    requests, shards = storage.requests, storage.shards
    indexed = sum(
        migrations.index_waiting_run(requests, run_id, decision.awaited_by, shards)
        for run_id in migrations.unindexed_run_ids(requests)
    )
    print(f"Put {indexed} runs in progress of table {table!r} into the inbox")
    moved = dropped = 0
    rekey = names.canonical_principal
    for entry in migrations.misplaced_inbox_entries(requests, shards, rekey):
        if migrations.move_inbox_entry(requests, entry, shards, rekey):
            moved += 1
        else:
            dropped += 1
    print(
        f"Moved {moved} inbox entries of table {table!r} into their shards "
        f"(and deleted {dropped} of runs that had moved on)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
