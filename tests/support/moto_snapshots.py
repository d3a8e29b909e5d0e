"""moto's TransactWriteItems, copying each table once per transaction.

To roll a failed transaction back, moto 5.2.5 deep-copies every table the
transaction writes before applying any of it, but it does so once for every
item of the transaction, not once per table: starting or deciding a run
writes 4 to 7 items in one transaction, and moto copied the whole table that
many times, each copy as costly as the table is large
(../shared/notes/moto-limits.md). The copies are taken one after the other
before the first item is applied, so they are identical: `install` makes the
later ones the first one. What moto checks, writes and rolls back is unchanged.

Only the moto code this was read against is changed (its source's digest);
another version is left as it is, and `install()` says so (False: a contract
test fails then, so that whoever upgrades moto looks again).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import threading
from typing import Any

# sha256 of moto 5.2.5's DynamoDBBackend.transact_write_items source.
CHECKED = "81db2cb7d94e39c90b3a2077e1f4bb41a449c558ef9b1b1e2910fdaa39978ad4"
_local = threading.local()


class _SnapshotOnce:
    """Stands for the `copy` module in moto.dynamodb.models: within a
    transaction, a table is deep-copied once; everything else as `copy` does."""

    copy = staticmethod(copy.copy)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        from moto.dynamodb.models.table import Table

        snapshots = getattr(_local, "snapshots", None)
        if snapshots is None or not isinstance(value, Table):
            return copy.deepcopy(value, memo)
        if id(value) not in snapshots:
            snapshots[id(value)] = copy.deepcopy(value, memo)
        return snapshots[id(value)]


@functools.cache
def install() -> bool:
    """Patch moto (once per process); False if its code is not the one checked."""
    import moto.dynamodb.models as models

    original = models.DynamoDBBackend.transact_write_items
    source = inspect.getsource(original)
    if hashlib.sha256(source.encode()).hexdigest() != CHECKED:
        return False

    @functools.wraps(original)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        _local.snapshots = {}
        try:
            original(self, transact_items)
        finally:
            _local.snapshots = None

    models.copy = _SnapshotOnce  # type: ignore[assignment,attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    return True
