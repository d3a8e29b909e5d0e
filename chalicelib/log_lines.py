"""Whole lines on standard output, from any thread.

The access lines (chalicelib/api/access_log.py, written from request threads)
and the event lines of WORKFLOW_EVENTS=log (chalicelib/delivery/dispatch.py,
written from the dispatcher thread) share standard output. Each is written
here: the line and its newline in one write, flushed, under one lock, so that
no line is ever cut by another. `print()` is not used: it writes the text and
the newline apart, and another thread's line can land between them.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Optional, TextIO

_LOCK = threading.Lock()


def write(text: str, stream: Optional[TextIO] = None) -> None:
    """Write `text` and a newline to `stream` (None: standard output at the
    time of writing, so that whoever replaces sys.stdout gets it), flushed."""
    out = stream or sys.stdout
    line = text + "\n"
    with _LOCK:
        out.write(line)
        out.flush()


def own_logger(name: str) -> logging.Logger:
    """A logger writing one line per record to standard error (CloudWatch Logs
    on Lambda), not passed on to "approval-workflows", which Chalice points at
    standard output: that stream holds the JSON access lines only."""
    logger = logging.getLogger(name)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger
