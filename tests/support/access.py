"""The access lines (chalicelib/api/access_log.py) in what a test captured of standard output."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chalicelib.api import access_log


def access_lines(out: str) -> list[dict[str, Any]]:
    """The access lines in `out`, in order: the JSON objects with a request_id."""
    lines = []
    for text in out.splitlines():
        if text.startswith("{"):
            line = json.loads(text)
            if "request_id" in line:
                lines.append(line)
    return lines


@contextmanager
def silenced() -> Iterator[None]:
    """No access lines while the block runs (a fuzzer's thousands of requests)."""
    with open(os.devnull, "w") as devnull:
        access_log.set_stream(devnull)
        try:
            yield
        finally:
            access_log.set_stream(None)
