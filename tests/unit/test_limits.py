"""The budget of chalicelib/domain/limits.py, worked out with the rules
themselves: the largest moves a definition at its limits allows, with every
field of a run at its own, fit what DynamoDB writes in one transaction (100
items) and one item (400 KB), their events uncompressed (deflate only ever
shrinks them). And what the limits refuse."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain import errors, limits, transitions
from chalicelib.domain.changes import RunChange
from chalicelib.domain.lifecycle import ActionKind
from chalicelib.domain.models import (
    DEFAULT_POLICY,
    MAX_ID,
    Run,
    Step,
    StepRule,
    Workflow,
)

WIDE = "\U0001f600"  # four bytes in UTF-8
NOW = "2030-01-02T03:04:05.000Z"
PERSON = WIDE * 200
COMMENT = "\x01" * 5000  # six bytes each in JSON
# DynamoDB's, and what a carried item holds beside its events: its key, ids,
# names, hash and counters (2 KB is more than they take).
ITEM_BYTES = 400 * 1024
ACTION_ATTRIBUTES = 2 * 1024
# An input of 32 KiB in its canonical form, as stored: twice that, at worst,
# once the canonical form is RFC 8785's (0.0 is "0" there and "0.0" here).
STORED_INPUT = 2 * 32 * 1024


def widest_rule(name: str, when: Any = None) -> StepRule:
    """A rule of exactly MAX_STEP_BYTES: 50 principals, the step's name of
    200 four-byte characters (as long as a name is) less what fills it."""
    approvers = ("group:g", *(f"user:{WIDE * 20}{n:02d}" for n in range(49)))
    rule = StepRule(name, approvers, 1, None, when)
    padding = limits.MAX_STEP_BYTES - limits.step_size(rule.stored(0, 0, 1))
    rule = rule._replace(approvers=(*approvers[:-1], approvers[-1] + "x" * padding))
    assert limits.step_size(rule.stored(0, 0, 1)) == limits.MAX_STEP_BYTES
    return rule


def widest_condition(n: int) -> dict[str, Any]:
    """A condition of MAX_CONDITION_BYTES, which holds for input {"n": n} only,
    and as long in words as a condition of its size gets (`or` of zeros:
    "0," is "0 or ")."""
    condition: dict[str, Any] = {"or": [{"==": [{"var": "n"}, n]}]}
    while limits.MAX_CONDITION_BYTES - len(_compact(condition)) >= 2:
        condition["or"].append(0)
    return condition


def _compact(value: Any) -> str:
    from chalicelib.domain.shapes import compact

    return compact(value)


def workflow_of(rules: list[StepRule]) -> Workflow:
    steps = tuple(rule.stored(100 + n, 1, n) for n, rule in enumerate(rules, start=1))
    workflow = Workflow(1, "W", "", NOW, steps, DEFAULT_POLICY)
    assert limits.definition_problem(workflow) is None
    return workflow


def started(workflow: Workflow, data: dict[str, Any]) -> Run:
    start = transitions.start_run(workflow, WIDE * 500, PERSON, NOW, data)
    return start.made(1).run


def carried(change: RunChange) -> int:
    """What the change's last action item holds: its events, uncompressed, and
    its own attributes (its comment, its step's name)."""
    # Any sequence: it is written zero-padded to 20 digits, the same width for all.
    first = 1
    events = sum(
        len(f"{draft.id}\t{draft.type}\t{draft.body(first + n)}\n".encode())
        for n, draft in enumerate(change.events)
    )
    last = change.actions[-1]
    own = len(last.comment.encode()) + len(last.step_name.encode()) + ACTION_ATTRIBUTES
    return events + own


def input_of(size: int, n: int) -> dict[str, Any]:
    """{"n": n, "note": ...} of `size` bytes in its canonical form."""
    data = {"n": n, "note": ""}
    data["note"] = "x" * (size - len(_compact(data)))
    assert len(_compact(data)) == size
    return data


def test_the_largest_moves_fit_one_transaction_and_their_events_one_item() -> None:
    """A start and a resubmit that skip MAX_SKIPPED steps and complete, an
    approval that skips as many and lands on a step with 50 principals: the
    decision's comment in two events, the input in one, a skip's condition
    in words in its event and its action, every step at MAX_STEP_BYTES."""
    skippable = [widest_rule(f"C{n}", widest_condition(n)) for n in range(limits.MAX_SKIPPED)]
    workflow = workflow_of([*skippable])
    data = input_of(32 * 1024, limits.MAX_SKIPPED - 1)
    run = started(workflow, data)  # skips all but the last, which holds
    assert len(run.actions) == limits.MAX_SKIPPED - 1
    assert run.current_step is not None
    returned = transitions.decide(run, ActionKind.RETURN, PERSON, COMMENT, (), NOW).after
    # A new input for which none holds: all of them skipped, the run completed.
    change = transitions.resubmit(returned, workflow, PERSON, COMMENT, input_of(32 * 1024, -1), NOW)
    assert change.after.status == "completed"
    assert len(change.actions) == 1 + limits.MAX_SKIPPED
    growth = STORED_INPUT - 32 * 1024  # the input's, as stored, at worst
    assert carried(change) + growth < ITEM_BYTES, carried(change) + growth
    writes = 1 + len(change.actions) + 1  # the run, the actions, the completion's check
    assert writes <= 100

    gate = widest_rule("Gate")
    landing = widest_rule("Landing")
    workflow = workflow_of([gate, *skippable, landing])
    run = started(workflow, input_of(32 * 1024, -1))
    assert run.current_step is not None and run.current_step.name == "Gate"
    following = workflow.steps[1:]
    change = transitions.decide(run, ActionKind.APPROVE, PERSON, COMMENT, following, NOW, PERSON)
    assert change.after.current_step is not None
    assert change.after.current_step.name == "Landing"
    assert carried(change) < ITEM_BYTES, carried(change)
    assert 1 + len(change.actions) + len(change.enters) <= 100, len(change.enters)


def test_the_largest_start_fits_one_transaction() -> None:
    """A start writes its events as items of their own."""
    skippable = [widest_rule(f"C{n}", widest_condition(n)) for n in range(limits.MAX_SKIPPED)]
    workflow = workflow_of([*skippable, widest_rule("Landing")])
    start = transitions.start_run(workflow, WIDE * 500, PERSON, NOW, input_of(32 * 1024, -1))
    made = start.made(1)
    writes = 1 + len(made.actions) + len(made.events) + len(made.enters)
    assert (len(made.actions), len(made.enters)) == (limits.MAX_SKIPPED, 50)
    assert writes <= 100, writes
    assert max(len(draft.body(1).encode()) for draft in made.events) < ITEM_BYTES


def test_a_round_keeps_at_most_two_names_an_approval_in_its_run() -> None:
    """The run item keeps everyone who approved in its round; names of 200
    four-byte characters, two an approval (a delegate and whom they stand
    for), for MAX_APPROVALS approvals, with its input as stored, its title,
    its step and the quorum so far, fit its 400 KB."""
    name = len("user:") + len(PERSON.encode()) + 3  # a list entry's own bytes
    round_ = 2 * limits.MAX_APPROVALS * name
    quorum = 2 * 20 * name  # approved_by and on_behalf_of of a step of 20
    inbox_left = limits.MAX_STEP_BYTES + 71 * 64  # the keys of the principals it leaves
    rest = STORED_INPUT + len((WIDE * 500).encode()) + name + limits.MAX_STEP_BYTES + 2 * 1024
    assert round_ + quorum + inbox_left + rest < ITEM_BYTES


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ([StepRule("S", (), 20)] * 5 + [StepRule("T")], "require 101"),
        ([StepRule(f"S{n}", when={"==": [1, 1]}) for n in range(13)], "13 steps in a row"),
        ([StepRule("S", when={"and": [0] * 1020})], "'when' is 2,049 bytes"),
        ([StepRule("S", ("group:" + "g" * 200,) * 40)], "at most 8,192"),
    ],
)
def test_a_definition_past_a_limit_is_refused_naming_it(rules: list[StepRule], says: str) -> None:
    with pytest.raises(errors.Unprocessable, match=says):
        transitions.define_workflow("W", "", rules, DEFAULT_POLICY, NOW)


def test_a_workflow_is_defined_with_at_most_50_steps_and_appended_to_100() -> None:
    with pytest.raises(errors.InvalidInput, match="at most 50 steps; append more"):
        transitions.define_workflow("W", "", [StepRule("S")] * 51, DEFAULT_POLICY, NOW)
    full = workflow_of([StepRule(f"S{n}") for n in range(limits.MAX_STEPS)])
    with pytest.raises(errors.Unprocessable, match="A workflow holds at most 100 steps"):
        transitions.append_step(full, StepRule("One too many"), NOW)


def test_the_longest_run_of_conditions_is_counted_wherever_it_stands() -> None:
    conditional = StepRule("C", when={"==": [1, 1]})
    at_limit = [StepRule("A"), *[conditional] * 12, StepRule("B"), *[conditional] * 12]
    assert transitions.define_workflow("W", "", at_limit, DEFAULT_POLICY, NOW)
    workflow = workflow_of(at_limit)
    with pytest.raises(errors.Unprocessable, match="13 steps in a row"):
        transitions.append_step(workflow, conditional, NOW)
    assert transitions.append_step(workflow, StepRule("Plain"), NOW).after_order == 26


def test_a_step_is_as_large_wherever_it_stands() -> None:
    step = Step(1, 1, "S", 1, (), 1, None, None)
    assert limits.step_size(step) == limits.step_size(step._replace(id=MAX_ID, step_order=99))
