"""The access lines (chalicelib/access_log.py) in what a test captured of standard output."""

from __future__ import annotations

import json
from typing import Any


def access_lines(out: str) -> list[dict[str, Any]]:
    """The access lines in `out`, in order: the JSON objects with a request_id."""
    lines = []
    for text in out.splitlines():
        if text.startswith("{"):
            line = json.loads(text)
            if "request_id" in line:
                lines.append(line)
    return lines
