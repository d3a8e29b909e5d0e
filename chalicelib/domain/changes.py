"""The changes the rules compute (chalicelib/domain/transitions.py), each for
the storage to write as one atomic write: the records a write takes.

Apart from the records of models.py because only writes use them: a read,
a cold start's usual first request, does not load this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Optional

from chalicelib.domain.models import Action, Delegation, EventDraft, Run, Step, Workflow
from chalicelib.domain.record import Record


class RunChange(Record):
    """One change of a run, computed from the run as read: a decision (with the
    action it records, and a skip for each step passed as its condition does
    not hold) or a deadline that reminds or escalates (no action).

    The storage writes it only if the run is still as `before` was read: its
    history (head and length) and its deadline's state; and, where the change
    completes the run, only if no step follows `last_step_order` in its
    workflow. It stores `after`, the actions, the events (numbered as it
    allocates) and the inbox keys the run leaves and enters, and nothing else."""

    before: Run
    # The run as the change leaves it; the actions it records are last in its
    # history, their ids 0 until the storage gives them.
    after: Run
    actions: tuple[Action, ...]
    events: tuple[EventDraft, ...]
    # The principals (inbox keys, chalicelib/domain/decision.py) whose inboxes the
    # run leaves, at before.current_step_since, and enters at after's.
    leaves: tuple[str, ...] = ()
    enters: tuple[str, ...] = ()
    # A completion: the step it found to be its workflow's last.
    last_step_order: Optional[int] = None

    def recorded(self, action_ids: Sequence[int]) -> Run:
        """The run after, its actions with the ids the storage gave them."""
        return _with_ids(self.after, self.actions, action_ids)


class Started(Record):
    """A new run, its events and the principals whose inboxes it enters; and the
    actions it starts with: a skip of each first step whose condition does not
    hold (their ids 0 until the storage gives them)."""

    run: Run
    events: tuple[EventDraft, ...]
    enters: tuple[str, ...]
    actions: tuple[Action, ...] = ()

    def recorded(self, action_ids: Sequence[int]) -> Run:
        """The run, its actions with the ids the storage gave them."""
        return _with_ids(self.run, self.actions, action_ids)


def _with_ids(run: Run, new: tuple[Action, ...], ids: Sequence[int]) -> Run:
    """`run`, its last actions (`new`) with these ids."""
    if not new:
        return run
    named = tuple(action._replace(id=action_id) for action, action_id in zip(new, ids, strict=True))
    return run._replace(actions=(*run.actions[: -len(new)], *named))


class RunStart(Record):
    """A run to start of `workflow`: `made` gives it once the storage has given it its id."""

    workflow: Workflow
    made: Callable[[int], Started]


class Defined(Record):
    workflow: Workflow
    events: tuple[EventDraft, ...]


class WorkflowDefinition(Record):
    """A workflow to define, named `name`, with `steps` first steps: `made` gives
    it once the storage has given it its id and its steps theirs."""

    name: str
    steps: int
    made: Callable[[int, tuple[int, ...]], Defined]


class Appended(Record):
    step: Step
    events: tuple[EventDraft, ...]


class StepAppend(Record):
    """A step to append to workflow `workflow_id` after its step `after_order`
    (0: it has none), its last when it was read: the storage appends it only
    there (else LostWrite: another append came first), and `made` gives it
    once the storage has given it its id and its order, after_order + 1."""

    workflow_id: int
    after_order: int
    made: Callable[[int, int], Appended]
    # The workflow's newest version as read, the one it extends: the storage
    # appends it only while that version is still the newest (else LostWrite).
    version: int = 1


class VersionPublish(Record):
    """The next version of a workflow read at version `read_version`, with
    `steps` steps: the storage writes it only while the workflow is still at
    `read_version` (else LostWrite: another publish came first), and `made`
    gives it (the workflow as it shows it, at the new version) once the
    storage has given its steps their ids."""

    workflow_id: int
    read_version: int
    steps: int
    made: Callable[[tuple[int, ...]], Defined]


class Retirement(Record):
    """A workflow retired or reinstated: the storage writes `after` only if
    the workflow's flag is still as `before` was read (else LostWrite)."""

    before: Workflow
    after: Workflow
    events: tuple[EventDraft, ...]


class Granted(Record):
    delegation: Delegation
    events: tuple[EventDraft, ...]


class DelegationGrant(Record):
    """A delegation to store: `made` gives it once the storage has given it its id."""

    made: Callable[[int], Granted]


class DelegationRevocation(Record):
    """A delegation revoked: the storage writes `after` only if the delegation
    is still as `before` was read (not revoked yet)."""

    before: Delegation
    after: Delegation
    events: tuple[EventDraft, ...]
