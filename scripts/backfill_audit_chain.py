"""Chain the history a DynamoDB table recorded before the audit chain existed.

    WORKFLOW_TABLE=approval-workflows python scripts/backfill_audit_chain.py

Run it once, after deploying the version that chains decisions: it finds the
runs and actions without their hashes (one Scan of the table), computes them
from the stored values in history order (chalicelib/domain/audit.py) and stores
them, each write conditional, so it is safe beside live traffic and safe to
run again (a second run finds nothing). Decisions recorded meanwhile chain
themselves onto the hashes this stores. SQLite files need none of this: they
migrate on open (MIGRATIONS in chalicelib/storage/sqlite/migrations.py).

Why a script and not hashes computed when a run is read: a service that fills
in a missing hash would also fill in one that someone removed, after editing
what it covered. Once this has run, a missing hash is a broken chain.

The credentials need dynamodb:Scan, Query and UpdateItem on the table, which
the function's role does not have; boto3's usual configuration picks the
endpoint, region and credentials. Exit 0 when every run is chained; 1 when
some run's stored hashes disagree with its values, or some actions have no
run (each listed, and left as it is); 2 when WORKFLOW_TABLE is not set.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chalicelib.domain import audit, errors
from chalicelib.storage.dynamodb import migrations
from scripts.table_of_environment import open_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def main(client: Optional[DynamoDBClient] = None) -> int:
    storage = open_table(client)
    if storage is None:
        return 2
    table = storage.table
    runs = stored = 0
    disagreeing: list[str] = []
    for run_id in migrations.unchained_run_ids(storage.requests):
        try:
            stored += migrations.chain_recorded_history(storage.requests, run_id, audit.recomputed)
        except (errors.Conflict, errors.NotFound) as exc:
            # A history edited since it was chained, or actions without their run.
            disagreeing.append(exc.message)
            continue
        runs += 1
    print(f"Chained {runs} runs of table {table!r}: {stored} hashes stored")
    for message in disagreeing:
        print(f"Left as it is: {message}", file=sys.stderr)
    return 1 if disagreeing else 0


if __name__ == "__main__":
    sys.exit(main())
