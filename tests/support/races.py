"""The race harness: threads released together, and clocks that hold racers
until every one of them has read the same state.

Threads call the engine directly: chalice.test.Client keeps the current request
on the shared app object, so it cannot serve several threads at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Optional

from chalicelib import engine

THREADS = 16
# Generous bounds so that a broken race fails instead of hanging; never asserted on.
WAIT_SECONDS = 60

# What a racer got: its result, or the exception it raised.
Outcome = Any


def rendezvous_clock(barrier: Any) -> Callable[[], str]:
    """A clock that returns only once every racer (process) has asked for the time."""

    def clock() -> str:
        barrier.wait(timeout=WAIT_SECONDS)
        return engine.utc_now()

    return clock


class Rendezvous:
    """A rendezvous clock for threads, and a guard for racers that fail before it."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties)
        self._passed = threading.local()

    def clock(self) -> str:
        self.barrier.wait(timeout=WAIT_SECONDS)
        self._passed.clock = True
        return engine.utc_now()

    def guard(self, task: Callable[[], Any]) -> Callable[[], Any]:
        """The task; if it fails before reaching the clock, the barrier breaks so that
        the other racers stop waiting for it (after the clock, failing is a result)."""

        def run() -> Any:
            try:
                return task()
            except BaseException:
                if not getattr(self._passed, "clock", False):
                    self.barrier.abort()
                raise

        return run


def releasing(barrier: Any, task: Callable[[], Any]) -> Callable[[], Any]:
    """The task, breaking `barrier` if it fails, so that no other racer waits in vain."""

    def run() -> Any:
        try:
            return task()
        except BaseException:
            barrier.abort()
            raise

    return run


def run_together(
    tasks: Sequence[Callable[[], Any]], warm_up: Optional[Sequence[Callable[[], Any]]] = None
) -> list[Outcome]:
    """Run each task in its own thread, all released at once; their results or exceptions.

    `warm_up[i]` runs in thread i before the release (to open its connection),
    so that no racer starts late because it was still connecting.
    """
    start = threading.Barrier(len(tasks))
    outcomes: list[Outcome] = [None] * len(tasks)

    def work(index: int) -> None:
        try:
            if warm_up is not None:
                releasing(start, warm_up[index])()
            start.wait(timeout=WAIT_SECONDS)
            outcomes[index] = tasks[index]()
        except BaseException as exc:  # handed to the test, which asserts on it
            outcomes[index] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(tasks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
    return outcomes
