"""scripts/moto_server.py in its own process on loopback, one request at a time.

Its own process, so that CPU time measured in the benchmark's process is the
service's alone. The server skips two of moto's slow paths (speed_up_moto):
on tables of thousands of items they made a transaction take longer than the
client waits, and its retry then met the first attempt's writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from bench._common import PROJECT_DIR, offline_aws_env


class MotoProcess:
    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.endpoint = ""

    def start(self) -> MotoProcess:
        server = os.path.join(PROJECT_DIR, "scripts", "moto_server.py")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.moto_process", server, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=PROJECT_DIR,
            env=offline_aws_env(),
        )
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def __enter__(self) -> MotoProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def speed_up_moto() -> None:
    """Two shortcuts in moto that leave its answers as they are: it deep-copies
    a table per transaction item, to roll back a failed transaction (none of
    this replay fails), and it sorts the whole table for every Query of the
    table itself, to pick one partition's items (picked here directly)."""
    import copy
    import inspect

    import moto.dynamodb.models as moto_models
    from moto.dynamodb.models.table import Table

    class NoTableCopy:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            if isinstance(value, moto_models.Table):  # type: ignore[attr-defined]
                return value
            return copy.deepcopy(value, memo)

    moto_models.copy = NoTableCopy  # type: ignore[attr-defined, assignment]
    query, all_items = Table.query, Table.all_items
    signature = inspect.signature(query)

    def partition_query(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs).arguments
        hash_key = bound.get("hash_key")
        if bound.get("index_name") or hash_key is None:
            return query(self, *args, **kwargs)
        partition = self.items.get(hash_key, {})
        self.all_items = lambda: sorted(partition.values(), key=lambda item: item.range_key)
        try:
            return query(self, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = partition_query  # type: ignore[method-assign]
    assert all_items is Table.all_items


if __name__ == "__main__":
    # The server, in this process, with moto's slow paths skipped.
    import runpy

    speed_up_moto()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
