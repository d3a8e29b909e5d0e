"""What one workflow may hold, so that every run of it can be stored. Pure.

A definition is checked once, when it is made and at each append, against
the stricter of the two stores, DynamoDB (SQLite has no such limits), so
that both accept the same definitions and no run of an accepted one can
ever meet a write its store refuses (a 409 or 503 forever, while the
permissions answer says allowed). DynamoDB stores at most 400 KB an item,
and writes at most 100 items and 4 MB in one transaction; every change is
one transaction (chalicelib/storage/dynamodb/keys.py lists what each
writes). What a definition puts in them, at worst, with every field of a
run at its own limit (a title of 500 four-byte characters, names of 200,
comments of 5,000 control characters escaped six bytes each in JSON, an
input of 32 KiB that may grow to twice that as Python writes its numbers):

    items of one move       the run, its decision (or resubmit), a skip for
                            each step passed, an inbox entry for each of its
                            next step's principals (at most 50), or the check
                            of a completion: 2 + MAX_SKIPPED + 50 = 64. A
                            start writes its events as items of their own:
                            1 + 2 * MAX_SKIPPED + 2 + 50 = 77. Both < 100.
    the move's last action  carries the change's events (carried.py): the
                            decision's (its comment in two), one a step
                            skipped (the step, its condition in words, the
                            run's fields), the next step's or the end's; a
                            resubmit's with its input: about 350 KB at worst,
                            uncompressed, of 400.
    the run item            its input (64 KiB as stored), title, its step
                            (MAX_STEP_BYTES), the quorum so far (40 names),
                            everyone who approved in its round (2 names an
                            approval: MAX_APPROVALS x 2 x 824 bytes), the
                            inbox keys it leaves: under 300 KB.
    the workflow item       and its workflow.created event: the definition,
                            at most MAX_DEFINITION_BYTES, with its steps.

tests/unit/test_limits.py works the budget out with the rules themselves;
tests/api/test_api_definition_limits.py runs a workflow at the limits on
both backends (DynamoDB through moto), every field of its runs at its own,
and refuses one past each limit on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from chalicelib.domain.models import MAX_ID, Step, Workflow
from chalicelib.domain.shapes import compact, step_text, workflow_shape

# Steps a workflow holds, and the approvals they require in all (a run keeps
# the name of everyone who approved in its round: at most two an approval).
MAX_STEPS = 100
# Steps a workflow is defined with: its write puts each as an item, with the
# workflow, its name's guard and its event (53 items); more are appended.
MAX_INITIAL_STEPS = 50
MAX_APPROVALS = 100
# Principals a step's `notify` names (told besides its approvers, or on a
# step open to anyone the ones told): as many as escalate_to takes.
MAX_NOTIFY = 20
# Steps with a condition in a row: one move may skip them all.
MAX_SKIPPED = 12
# A step, as events carry it (compact JSON, UTF-8, its ids and order at their largest),
# and its condition in its canonical form (in words, a skip's comment is at
# most three times as long).
MAX_STEP_BYTES = 8 * 1024
MAX_CONDITION_BYTES = 2 * 1024
# The workflow as its answer and its workflow.created event carry it.
MAX_DEFINITION_BYTES = 320 * 1024


def definition_problem(workflow: Workflow) -> Optional[str]:
    """Why no store could keep every run of `workflow`, with its steps as
    defined or appended (None: every store can): the limit it passes, named."""
    steps = workflow.steps
    if len(steps) > MAX_STEPS:
        return f"A workflow holds at most {MAX_STEPS} steps"
    for step in steps:
        found = _step_problem(step)
        if found:
            return found
    approvals = sum(step.required_approvals for step in steps)
    if approvals > MAX_APPROVALS:
        return (
            f"A workflow's steps may require at most {MAX_APPROVALS} approvals in all "
            f"(their required_approvals); these require {approvals}"
        )
    skipped = _longest_conditional_run(steps)
    if len(skipped) > MAX_SKIPPED:
        return (
            f"Steps {skipped[0].name!r} to {skipped[-1].name!r} are {len(skipped)} steps in a "
            f"row with a condition; at most {MAX_SKIPPED}, as one approval may skip them all "
            "and records each skip in the same write"
        )
    size = definition_size(workflow)
    if size > MAX_DEFINITION_BYTES:
        return (
            f"The workflow would be {size:,} bytes in its canonical form, its steps with it; "
            f"at most {MAX_DEFINITION_BYTES:,}"
        )
    return None


def _step_problem(step: Step) -> Optional[str]:
    if step.when is not None:
        size = _bytes(compact(step.when))
        if size > MAX_CONDITION_BYTES:
            return (
                f"Step {step.name!r}: 'when' is {size:,} bytes in its canonical form; at most "
                f"{MAX_CONDITION_BYTES:,}"
            )
    size = step_size(step)
    if size > MAX_STEP_BYTES:
        return (
            f"Step {step.name!r} is {size:,} bytes in its canonical form (its ids and order "
            f"counted at their largest); at most {MAX_STEP_BYTES:,}"
        )
    return None


def step_size(step: Step) -> int:
    """The bytes of `step` as events carry it, its ids and order counted at
    their largest (so that a step is as large wherever it stands)."""
    widest = step._replace(id=MAX_ID, workflow_id=MAX_ID, step_order=MAX_STEPS)
    return _bytes(step_text(widest, ascii=False))


def definition_size(workflow: Workflow) -> int:
    """The bytes of `workflow`, its steps with it, in its canonical form, its
    ids counted at their largest."""
    steps = tuple(step._replace(id=MAX_ID, workflow_id=MAX_ID) for step in workflow.steps)
    return _bytes(compact(workflow_shape(workflow._replace(id=MAX_ID, steps=steps))))


def _longest_conditional_run(steps: Sequence[Step]) -> Sequence[Step]:
    """The longest run of consecutive steps that each have a condition."""
    longest: Sequence[Step] = ()
    start = 0
    for end, step in enumerate(steps, start=1):
        if step.when is None:
            start = end
        elif end - start > len(longest):
            longest = steps[start:end]
    return longest


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))
