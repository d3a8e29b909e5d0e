"""The events of each transition (chalicelib/domain/events.py): pure, no storage."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.api.representations import listed_event, shape
from chalicelib.domain import events
from chalicelib.domain.audit import input_digest
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Decision, Run, Step, Workflow
from tests.unit.test_representations import ANY_TEXT, JSON_VALUES, MAYBE_TEXT, runs, step_fields

# The fields every run event's data starts with (an extra never repeats one).
RUN_DATA_FIELDS = (
    "run_id",
    "workflow_id",
    "title",
    "requested_by",
    "status",
    "step",
    "actor",
    "head_hash",
    "input_digest",
    "round",
    "comment",
)
T0 = "2030-01-02T03:04:05.000Z"
T1 = "2030-01-02T03:04:06.000Z"
FIRST = Step(11, 3, "Manager", 1)
SECOND = Step(12, 3, "Finance", 2)
RUN = Run(7, 3, "PO-1", RunStatus.IN_PROGRESS, FIRST, T0, T0, (), "rita", "a" * 64)


def _types(drafts: list[events.Draft]) -> list[str]:
    return [draft.type for draft in drafts]


def test_starting_a_run_is_run_started_then_the_first_step_activated() -> None:
    started, activated = events.run_started(RUN)
    assert (started.type, activated.type) == (events.RUN_STARTED, events.STEP_ACTIVATED)
    assert started.subject == activated.subject == "runs/7"
    assert started.time == activated.time == T0
    assert started.data == {
        "run_id": 7,
        "workflow_id": 3,
        "title": "PO-1",
        "requested_by": "rita",
        "status": RunStatus.IN_PROGRESS,
        "step": shape(FIRST),
        "actor": "rita",
        "head_hash": "a" * 64,
        "input_digest": None,
        "round": 1,
        "input": {},
    }
    assert activated.data["step"] == shape(FIRST) and activated.data["actor"] is None


def test_an_approval_that_moves_on_activates_the_next_step() -> None:
    decision = Decision(ActionKind.APPROVE, "maria", "fine", RunStatus.IN_PROGRESS, SECOND, T1)
    after = RUN._replace(current_step=SECOND, head_hash="b" * 64)
    approved, activated = events.decided(RUN, decision, after)
    assert (approved.type, activated.type) == (events.STEP_APPROVED, events.STEP_ACTIVATED)
    assert approved.data["step"] == shape(FIRST)
    assert (approved.data["actor"], approved.data["comment"]) == ("maria", "fine")
    assert approved.data["head_hash"] == "b" * 64
    assert activated.data["step"] == shape(SECOND)
    assert "comment" not in activated.data


def test_the_last_approval_completes_the_run() -> None:
    decision = Decision(ActionKind.APPROVE, "maria", "", RunStatus.COMPLETED, None, T1)
    after = RUN._replace(status=RunStatus.COMPLETED, current_step=None)
    drafts = events.decided(RUN, decision, after)
    assert _types(drafts) == [events.STEP_APPROVED, events.RUN_COMPLETED]
    assert drafts[1].data["status"] == RunStatus.COMPLETED and drafts[1].data["step"] is None
    assert "comment" not in drafts[0].data  # none was given


def test_an_approval_below_the_quorum_is_one_event() -> None:
    decision = Decision(ActionKind.APPROVE, "maria", "", RunStatus.IN_PROGRESS, FIRST, T1)
    assert _types(events.decided(RUN, decision, RUN)) == [events.STEP_APPROVED]


def test_a_rejection_rejects_the_step_then_the_run() -> None:
    decision = Decision(ActionKind.REJECT, "bob", "too dear", RunStatus.REJECTED, None, T1)
    after = RUN._replace(status=RunStatus.REJECTED, current_step=None)
    drafts = events.decided(RUN, decision, after)
    assert _types(drafts) == [events.STEP_REJECTED, events.RUN_REJECTED]
    assert [draft.data["actor"] for draft in drafts] == ["bob", "bob"]


def test_a_rejection_by_the_deadline_is_the_steps_expiry() -> None:
    decision = Decision(ActionKind.REJECT, events.DEADLINE_ACTOR, "", RunStatus.REJECTED, None, T1)
    after = RUN._replace(status=RunStatus.REJECTED, current_step=None)
    drafts = events.decided(RUN, decision, after)
    assert _types(drafts) == [events.STEP_EXPIRED, events.RUN_REJECTED]
    assert drafts[1].data["actor"] == "system:deadline"


def test_cancelling_is_run_cancelled() -> None:
    after = RUN._replace(status=RunStatus.CANCELLED, current_step=None)
    drafts = events.cancelled(RUN, after, "rita", "not needed", T1)
    assert _types(drafts) == [events.RUN_CANCELLED]
    assert (drafts[0].data["status"], drafts[0].data["comment"]) == ("cancelled", "not needed")


def test_a_workflow_is_created_with_its_steps_and_a_step_is_added() -> None:
    workflow = Workflow(3, "Purchase", "", T0, (FIRST,))
    (created,) = events.workflow_created(workflow)
    assert (created.type, created.subject) == (events.WORKFLOW_CREATED, "workflows/3")
    assert created.data["workflow"] == shape(workflow)
    assert created.data["run_id"] is None and created.data["step"] is None
    (added,) = events.step_added(SECOND, T1)
    assert (added.type, added.time, added.data["step"]) == (
        events.STEP_ADDED,
        T1,
        shape(SECOND),
    )


def test_a_recorded_event_is_a_cloudevent_with_its_sequence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKFLOW_STAGE", "prod")
    draft = events.run_started(RUN)[0]
    event = events.recorded(draft, 4, new_id=lambda: "evt-1")
    assert (event.id, event.subject, event.sequence, event.type) == (
        "evt-1",
        "runs/7",
        4,
        events.RUN_STARTED,
    )
    assert json.loads(event.body) == {
        "specversion": "1.0",
        "id": "evt-1",
        "source": "/approval-workflows/prod",
        "type": events.RUN_STARTED,
        "subject": "runs/7",
        "time": T0,
        "datacontenttype": "application/json",
        "sequence": "00000000000000000004",
        "data": draft.data,
    }
    assert listed_event(event) == json.loads(event.body)


def test_the_sequence_is_a_string_of_20_digits_that_sorts_as_text_as_the_events_do() -> None:
    # The CloudEvents Sequence extension: a lexicographically-orderable string.
    draft = events.run_started(RUN)[0]
    numbers = [1, 2, 9, 10, 11, 99, 100, 12345, 2**63 - 1, 10**20 - 1]
    texts = [json.loads(events.recorded(draft, n).body)["sequence"] for n in numbers]
    assert texts[:4] == ["0" * 19 + "1", "0" * 19 + "2", "0" * 19 + "9", "0" * 18 + "10"]
    assert all(isinstance(text, str) and len(text) == 20 for text in texts)
    assert sorted(texts) == texts and [int(text) for text in texts] == numbers
    for beyond in (0, 10**20):
        with pytest.raises(ValueError):
            events.recorded(draft, beyond)


def test_ids_are_unique_and_the_stage_defaults_to_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKFLOW_STAGE", raising=False)
    draft = events.run_started(RUN)[0]
    recorded = [events.recorded(draft, 1) for _ in range(50)]
    assert len({event.id for event in recorded}) == 50
    assert json.loads(recorded[0].body)["source"] == "/approval-workflows/dev"


def test_an_event_body_is_the_compact_unescaped_json_of_its_cloudevent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKFLOW_STAGE", 'st"a\\ge\u00e9\u2028')
    draft = events.Draft('t"ype\n', "runs/\u00e97", 'at "\t" \U0001f600', {"k": "\u00e9"})
    event = events.recorded(draft, 12, new_id=lambda: 'i"d\\')
    envelope = {
        "specversion": "1.0",
        "id": 'i"d\\',
        "source": events.source(),
        "type": draft.type,
        "subject": draft.subject,
        "time": draft.time,
        "datacontenttype": "application/json",
        "sequence": "00000000000000000012",
        "data": draft.data,
    }
    assert event.body == json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


def test_event_ids_are_random_uuids_as_uuid4_spells_them() -> None:
    import uuid

    ids = [events.recorded(events.run_started(RUN)[0], 1).id for _ in range(200)]
    parsed = [uuid.UUID(event_id) for event_id in ids]
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in parsed)
    assert [str(u) for u in parsed] == ids
    assert len(set(ids)) == len(ids)


@settings(max_examples=150, deadline=None)
@given(
    runs(),
    # What a transition leaves: a run waiting, or ended (a return has an event of its own).
    runs().filter(lambda run: run.status != "returned"),
    MAYBE_TEXT,
    ANY_TEXT,
    st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=3),
)
def test_a_run_events_data_is_the_json_its_fields_encode_to(
    before: Run, after: Run, actor: Optional[str], comment: str, extra: dict[str, Any]
) -> None:
    """The data a run's event carries is written out as text (events.RunData):
    whatever the values, the text is what the events' encoder writes for the
    dict of its fields, in order, and reading it gives that dict."""
    extra = {name: value for name, value in extra.items() if name not in RUN_DATA_FIELDS}
    drafts = events.transition(before, after, events.STEP_APPROVED, actor, comment, T1, **extra)
    step = before.current_step
    expected = {
        "run_id": after.id,
        "workflow_id": after.workflow_id,
        "title": after.title,
        "requested_by": after.requested_by,
        "status": after.status,
        "step": step_fields(step) if step else None,
        "actor": actor,
        "head_hash": after.head_hash,
        "input_digest": input_digest(after.input),
        "round": after.round,
        **({"comment": comment} if comment else {}),
        **extra,
    }
    data = drafts[0].data
    assert isinstance(data, events.RunData)
    assert data.text == json.dumps(expected, separators=(",", ":"), ensure_ascii=False)
    assert data == expected and dict(data) == expected
