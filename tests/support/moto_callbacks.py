"""moto's mock_aws, registering the same callbacks on each start.

Each time a mock starts, moto 5.2.5 builds a `responses` callback for every
URL pattern of every AWS service and method, about 1,300 objects, and drops
them when it stops: that was 7 of the 9 ms a DynamoDB test's setup took once
its table was copied (tests/support/backends.py). The callbacks hold nothing
of a test (a pattern, a method and moto's one dispatcher), so `install` builds
them once and registers those same ones on every start. What moto resets,
patches and answers is unchanged.

Only the moto code this was read against is changed (its source's digest);
another version is left as it is, and `install()` says so (False: a contract
test fails then, so that whoever upgrades moto looks again).
"""

from __future__ import annotations

import functools
from typing import Any

from tests.support.moto_sources import is_as_read

# sha256 of moto 5.2.5's MockAWS._enable_patching source.
CHECKED = "68bca5576a322f68e20705f13f272c540489f55d2abc7ffdd2b96e63b216fe25"


@functools.cache
def install() -> bool:
    """Patch moto (once per process); False if its code is not the one checked."""
    from moto.core import models

    original = models.MockAWS._enable_patching
    if not is_as_read(original, CHECKED):
        return False
    callbacks: list[Any] = []

    def _enable_patching(self: models.MockAWS, reset: bool = True) -> None:
        if not callbacks:
            original(self, reset=reset)
            callbacks.extend(models.responses_mock.registered())
            return
        models.botocore_stubber.enabled = True
        if reset:
            self.reset()
        models.responses_mock.start()
        for callback in callbacks:
            models.responses_mock.add(callback)

    models.MockAWS._enable_patching = _enable_patching  # type: ignore[method-assign]
    return True
