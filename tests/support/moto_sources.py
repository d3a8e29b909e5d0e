"""What each test-only change to moto checks first (moto_*.py here): that
moto's code is the code the change was read against."""

from __future__ import annotations

import hashlib
import inspect
from typing import Any


def is_as_read(code: Any, digest: str) -> bool:
    """Whether the source of `code` (a module, class or function) has this sha256."""
    return hashlib.sha256(inspect.getsource(code).encode()).hexdigest() == digest
