"""The answers written out field by field are the JSON an encoder would write.

representations.action_text, listed_text, awaiting_text and page_text write
their JSON text directly (the hot path's answers). Whatever the values (any
text, absent ones, an input of any JSON), each text must parse to the record's
fields, and be exactly what the answers' encoder writes for what it parses
to: the same bytes the shape's dict would have given.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.api import representations
from chalicelib.domain.lifecycle import OnDeadline
from chalicelib.domain.models import Action, Awaiting, Deadline, Page, Run, Step
from chalicelib.domain.shapes import step_shape, step_text

ANY_TEXT = st.text(max_size=12)
MAYBE_TEXT = st.none() | ANY_TEXT
IDS = st.integers(min_value=1, max_value=2**53)
NAMES = st.lists(ANY_TEXT, max_size=3).map(tuple)
# What a request body can hold: numbers are finite (validation.json_body).
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)

actions = st.builds(
    Action,
    IDS,
    IDS,
    IDS,
    ANY_TEXT,
    ANY_TEXT,
    ANY_TEXT,
    ANY_TEXT,
    ANY_TEXT,
    MAYBE_TEXT,
    MAYBE_TEXT,
    st.integers(min_value=1, max_value=99),
    MAYBE_TEXT,
    next_step_digest=MAYBE_TEXT,
    definition_digest=MAYBE_TEXT,
    definition_steps=st.none() | st.integers(min_value=1, max_value=99),
)
steps = st.builds(
    Step,
    IDS,
    IDS,
    ANY_TEXT,
    st.integers(min_value=1, max_value=50),
    NAMES,
    st.integers(min_value=1, max_value=5),
    st.none() | st.builds(Deadline, st.integers(min_value=1), st.just(OnDeadline.ESCALATE), NAMES),
    st.none() | st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=2),
    NAMES,
)


@st.composite
def runs(draw: Any) -> Run:
    approved_by = draw(NAMES)
    return Run(
        draw(IDS),
        draw(IDS),
        draw(ANY_TEXT),
        draw(st.sampled_from(("in_progress", "completed", "returned"))),
        draw(st.none() | steps),
        draw(ANY_TEXT),
        draw(ANY_TEXT),
        tuple(draw(st.lists(actions, max_size=3))),
        requested_by=draw(MAYBE_TEXT),
        head_hash=draw(MAYBE_TEXT),
        current_step_approved_by=approved_by,
        current_step_since=draw(MAYBE_TEXT),
        current_step_due_at=draw(MAYBE_TEXT),
        deadline_passed=draw(st.booleans()),
        input=draw(st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=3)),
        round=draw(st.integers(min_value=1, max_value=9)),
        current_step_on_behalf_of=tuple(
            draw(st.lists(ANY_TEXT, min_size=len(approved_by), max_size=len(approved_by)))
        ),
        definition_digest=draw(MAYBE_TEXT),
        definition_steps=draw(st.none() | st.integers(min_value=1, max_value=99)),
    )


def encoded(text: str, ascii: bool = True) -> Any:
    """What `text` parses to, checked to be what the answers' encoder (or,
    not `ascii`, the events') writes for it."""
    parsed = json.loads(text)
    assert json.dumps(parsed, separators=(",", ":"), ensure_ascii=ascii) == text
    return parsed


def step_fields(step: Step) -> dict[str, Any]:
    deadline = step.deadline
    return {
        "id": step.id,
        "workflow_id": step.workflow_id,
        "name": step.name,
        "step_order": step.step_order,
        "approvers": list(step.approvers),
        "required_approvals": step.required_approvals,
        "deadline_seconds": deadline.seconds if deadline else None,
        "on_deadline": deadline.action if deadline else None,
        "escalate_to": list(deadline.escalate_to) if deadline else [],
        "when": step.when,
        "notify": list(step.notify),
    }


@settings(max_examples=150, deadline=None)
@given(steps)
def test_a_steps_text_is_its_fields_as_either_encoder_writes_them(step: Step) -> None:
    assert encoded(step_text(step)) == step_fields(step)
    assert encoded(step_text(step, ascii=False), ascii=False) == step_fields(step)
    assert step_shape(step) == step_fields(step)


@settings(max_examples=150, deadline=None)
@given(actions)
def test_an_actions_text_is_its_fields_as_the_encoder_writes_them(action: Action) -> None:
    assert encoded(representations.action_text(action)) == action._asdict()


@settings(max_examples=150, deadline=None)
@given(runs(), MAYBE_TEXT)
def test_a_runs_text_is_its_listed_fields_and_its_history(run: Run, behalf: Optional[str]) -> None:
    current = run.current_step
    listed = {
        "id": run.id,
        "workflow_id": run.workflow_id,
        "workflow_version": run.workflow_version,
        "title": run.title,
        "input": run.input,
        "round": run.round,
        "requested_by": run.requested_by,
        "status": run.status,
        "current_step_id": current.id if current else None,
        "current_step": step_fields(current) if current else None,
        "current_step_approved_by": list(run.current_step_approved_by),
        "current_step_on_behalf_of": [name or None for name in run.current_step_on_behalf_of],
        "current_step_since": run.current_step_since,
        "current_step_due_at": run.current_step_due_at,
        "current_step_escalated_to": list(run.current_step_escalated_to),
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "head_hash": run.head_hash,
        "definition_digest": run.definition_digest,
        "definition_steps": run.definition_steps,
    }
    assert encoded(representations.listed_text(run)) == listed
    history = [action._asdict() for action in run.actions]
    assert encoded(representations.text(run)) == {**listed, "actions": history}
    assert representations.shape(run) == {**listed, "actions": history}
    in_inbox = Awaiting(run, behalf)
    assert encoded(representations.awaiting_text(in_inbox)) == {**listed, "on_behalf_of": behalf}
    page = Page((run, run), behalf)
    assert encoded(representations.text(page)) == {"items": [listed, listed], "next_cursor": behalf}
