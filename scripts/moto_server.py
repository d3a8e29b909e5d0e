"""moto's AWS APIs (DynamoDB among them) on loopback, answering one request at a time.

    python scripts/moto_server.py [--host 127.0.0.1] [--port $MOTO_PORT or 5000]
                                  [--lean] [--max-mb MB]

moto does not make a condition check and its write atomic under concurrent
requests; served one by one, each request is atomic as in DynamoDB, so the
races that remain are the service's own. State lives in memory until exit.
It serves `make run-dynamodb` (with --lean and --max-mb: docs/deploy.md), the
tests (`MotoServer`, in a thread, with faults injected per operation before
moto sees the request: real HTTP, real botocore retries) and the benchmarks
(this script in its own process, `--port 0` printing the port it took).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any


class Fault:
    """Answer `remaining` requests of one operation with an error; with `share`
    below 1, only that share of them, picked by a seeded random generator. The
    body may be a function of the request's (a dict, empty if it is not JSON)."""

    def __init__(
        self,
        status: int,
        body: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]],
        remaining: int = 10**6,
        share: float = 1.0,
    ) -> None:
        self.status = status
        self.body = body
        self.remaining = remaining
        self.share = share
        self.seen = 0
        self._random = random.Random(0)

    def strikes(self) -> bool:
        """Whether this request gets the error."""
        if self.remaining <= 0 or self._random.random() >= self.share:
            return False
        self.remaining -= 1
        self.seen += 1
        return True


# The DynamoDB operations that write, refused past --max-mb.
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
FULL_TYPE = "com.amazonaws.dynamodb.v20120810#ItemCollectionSizeLimitExceededException"


def peak_mb() -> float:
    """The most memory (resident) this process has used so far, in MB."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux counts kilobytes, macOS bytes.
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def lean_transactions() -> None:
    """Roll a failed TransactWriteItems back by the items it names.

    moto (5.2) deep-copies a table for each item of a transaction, before it
    starts, so that it can put the copy back if the transaction fails: the
    cost of every transaction grows with the table (and with its stream
    records). Here no table is copied; each item the transaction names is
    copied before it runs, and put back (or removed, if it did not exist) if
    it fails, with the stream records it added. A transaction only ever
    changes the items it names, so the table is as before, as with moto's
    copy; what moto answers is unchanged."""
    import copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    backend: Any = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "lean", False):
        return
    transact = backend.transact_write_items

    class TablesNotCopied:
        """The `copy` moto's backend module sees: a table is not copied."""

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        saved = []
        streams: dict[int, tuple[Any, int]] = {}
        for entry in transact_items:
            for operation in entry.values():
                if not isinstance(operation, dict):
                    continue  # moto refuses it
                table = self.tables.get(operation.get("TableName"))
                keys = operation.get("Key") or operation.get("Item")
                if table is None or not isinstance(keys, dict):
                    continue  # moto refuses it
                try:
                    hash_key, range_key = self.get_keys_value(table, keys)
                except Exception:  # moto refuses it when it comes to it: it changes nothing
                    continue
                item = copy.deepcopy(table.get_item(hash_key, range_key))
                saved.append((table, hash_key, range_key, item))
                if table.stream_shard is not None:
                    streams.setdefault(id(table), (table, len(table.stream_shard.items)))
        try:
            return transact(self, transact_items)
        except BaseException:
            for table, hash_key, range_key, item in reversed(saved):
                _put_back(table, hash_key, range_key, item)
            for table, records in streams.values():
                del table.stream_shard.items[records:]
            raise

    transact_write_items.lean = True  # type: ignore[attr-defined]
    models.copy = TablesNotCopied  # type: ignore[attr-defined, assignment]
    backend.transact_write_items = transact_write_items


def _put_back(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    """Make `table` hold `item` under these keys again (None: no item)."""
    if table.range_key_attr is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
        return
    partition = table.items[hash_key]
    if item is None:
        partition.pop(range_key, None)
    else:
        partition[range_key] = item
    if not partition:
        del table.items[hash_key]


def lean_queries() -> None:
    """A Query that does not sort the whole table first.

    moto (5.2) answers a Query by sorting every item of the table
    (Table.all_items), then picking the ones the Query matches, then sorting
    those by the Query's keys: the first sort dominates as soon as the table
    holds a few thousand items (a page of the inbox took seconds). The order
    it gives is not used: the second sort orders by the index's keys and then
    the table's, which no two items share. Here the Query picks from the
    table's items unsorted (from the one partition, when it queries the table
    by its partition key), and the second sort does the ordering, as before."""
    import inspect

    from moto.dynamodb.models.table import Table

    table_class: Any = Table
    if getattr(table_class.query, "lean", False):
        return
    query = table_class.query
    signature = inspect.signature(query)

    def lean_query(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs).arguments
        hash_key = bound.get("hash_key")
        if bound.get("index_name"):
            self.all_items = lambda: _unsorted(self.items.values(), self.range_key_attr)
        elif hash_key is not None:
            partition = self.items.get(hash_key)
            found = [] if partition is None else [partition]
            self.all_items = lambda: _unsorted(found, self.range_key_attr)
        else:
            return query(self, *args, **kwargs)
        try:
            return query(self, *args, **kwargs)
        finally:
            del self.all_items

    lean_query.lean = True  # type: ignore[attr-defined]
    table_class.query = lean_query


def _unsorted(partitions: Any, range_key: Any) -> list[Any]:
    """The items of `partitions` (each a dict of items by sort key, or an
    item where the table has no sort key), in no order."""
    if range_key is None:
        return list(partitions)
    return [item for partition in partitions for item in partition.values()]


class MotoServer:
    """moto on 127.0.0.1 (port 0: a free one), one request at a time, with
    faults; `lean` and `max_mb` as --lean and --max-mb."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, lean: bool = False, max_mb: float = 0
    ) -> None:
        from moto.server import (  # type: ignore[attr-defined]
            DomainDispatcherApplication,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        if lean:
            lean_transactions()
            lean_queries()
        self.max_mb = max_mb
        self.faults: dict[str, Fault] = {}
        self._moto = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(host, port, self._app, threaded=False)
        self.port = self._server.server_port
        self.endpoint = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None

    def __enter__(self) -> MotoServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def inject(self, operation: str, fault: Fault) -> Fault:
        self.faults[operation] = fault
        return fault

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        operation = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        if self.max_mb and operation in WRITES and (used := peak_mb()) > self.max_mb:
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            message = (
                f"This local moto has used {used:,.0f} MB of memory, over its limit of "
                f"{self.max_mb:,.0f} MB (MOTO_MAX_MB): it refuses writes and still answers "
                "reads. Restart make run-dynamodb to begin empty, or raise MOTO_MAX_MB"
            )
            start_response("400 Bad Request", [("Content-Type", "application/x-amz-json-1.0")])
            return [json.dumps({"__type": FULL_TYPE, "message": message}).encode()]
        fault = self.faults.get(operation)
        if fault is None or not fault.strikes():
            answer: Iterable[bytes] = self._moto(environ, start_response)
            return answer
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        body = fault.body
        if callable(body):
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                request = {}
            body = body(request if isinstance(request, dict) else {})
        # In the JSON protocol version the request was sent in.
        kind = environ.get("CONTENT_TYPE") or "application/x-amz-json-1.0"
        start_response(f"{fault.status} Fault", [("Content-Type", kind)])
        return [json.dumps(body).encode()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("MOTO_PORT", "5000")))
    parser.add_argument(
        "--lean", action="store_true", help="roll failed transactions back without copying tables"
    )
    parser.add_argument(
        "--max-mb", type=float, default=0, help="refuse writes once this much memory is used"
    )
    args = parser.parse_args(argv)
    try:
        server = MotoServer(args.host, args.port, lean=args.lean, max_mb=args.max_mb)
    except OSError as exc:
        print(f"moto cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    # The first line says where it listens, for callers that asked for port 0.
    print(server.port, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
