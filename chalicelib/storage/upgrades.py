"""What the one-time upgrades of stored data need from the rules."""

from __future__ import annotations

from collections.abc import Callable

from chalicelib.domain.models import Run
from chalicelib.domain.record import Record


class Upgrades(Record):
    """What the one-time upgrades of data stored before a feature need from the
    rules, handed in by whoever opens the storage (engine.open_storage): the
    storage stores what they compute and computes nothing itself."""

    # The genesis and each action's hash of a run's history (audit.recomputed).
    chain: Callable[[Run], list[str]]
    # Whose inboxes hold a waiting run (decision.awaited_by).
    awaited_by: Callable[[Run], tuple[str, ...]]
