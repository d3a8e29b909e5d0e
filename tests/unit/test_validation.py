"""Requests into typed values: what is accepted, and everything else refused."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from chalice.app import MultiDict

from chalicelib.api import http, paths, queries, validation
from chalicelib.domain import errors, names
from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import MAX_ID, Policy, StepRule

# -- bodies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        "name",
        3,
        True,
        {"name": " "},
        {"name": 1},
        {"name": "n" * 201},
        {"name": "x", "description": 1},
        {"name": "x", "steps": "A"},
        {"name": "x", "extra": 1},
    ],
    ids=repr,
)
def test_create_workflow_with_invalid_body_raises_invalid_input(body: Any) -> None:
    with pytest.raises(errors.InvalidInput):
        validation.new_workflow(body)


def test_create_workflow_accepts_up_to_50_initial_steps() -> None:
    names = [f"Step {n}" for n in range(1, 51)]

    steps = validation.new_workflow({"name": "Fifty", "steps": names}).steps
    assert [step.name for step in steps] == names


def test_create_workflow_refuses_more_than_50_initial_steps() -> None:
    names = [f"Step {n}" for n in range(1, 52)]

    with pytest.raises(errors.InvalidInput, match="at most 50"):
        validation.new_workflow({"name": "Too many", "steps": names})


@pytest.mark.parametrize(
    "body",
    [
        {"title": "x"},
        {"workflow_id": "1", "title": "x"},
        {"workflow_id": True, "title": "x"},
        {"workflow_id": 1.5, "title": "x"},
        {"workflow_id": -2.0, "title": "x"},
        {"workflow_id": 0, "title": "x"},
        {"workflow_id": 1},
        {"workflow_id": 1, "title": ""},
        {"workflow_id": 1, "title": 5},
        {"workflow_id": 1, "title": "t" * 501},
    ],
    ids=repr,
)
def test_start_run_with_invalid_body_raises_invalid_input(body: Any) -> None:
    with pytest.raises(errors.InvalidInput):
        validation.new_run(body)


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {},
        {"actor": ""},
        {"actor": "  "},
        {"actor": 1},
        {"actor": False},
        {"actor": "a" * 201},
        {"actor": "a", "comment": 1},
        {"actor": "a", "comment": "c" * 5001},
        {"actor": "\ud800"},
        {"actor": "a", "comment": "\udfff"},
    ],
    ids=repr,
)
def test_invalid_decision_raises_invalid_input(body: Any) -> None:
    with pytest.raises(errors.InvalidInput):
        validation.decision(body)


@pytest.mark.parametrize("number", [7, 7.0, 7e0, 0.07e2])
def test_an_integral_json_number_is_the_integer_it_is(number: float) -> None:
    # JSON has one number type, and JSON Schema's "integer" accepts 7.0.
    assert validation.new_run({"workflow_id": number, "title": "x"}).workflow_id == 7
    decided = validation.decision({"actor": "a", "expected_step_id": number})
    assert decided.expected_step_id == 7
    assert type(decided.expected_step_id) is int


def test_required_text_is_taken_without_surrounding_whitespace() -> None:
    workflow = validation.new_workflow({"name": "  Padded  ", "steps": [" A "]})
    run = validation.new_run({"workflow_id": 1, "title": "\tT\n"})
    decided = validation.decision({"actor": " alice ", "comment": " as is "})

    assert (workflow.name, [step.name for step in workflow.steps]) == ("Padded", ["A"])
    assert run.title == "T"
    assert (decided.actor, decided.comment) == ("alice", " as is ")


def test_optional_fields_given_as_null_are_absent() -> None:
    assert validation.new_workflow(
        {"name": "n", "description": None, "steps": None}
    ) == validation.NewWorkflow("n", "", [], Policy())
    assert validation.decision(
        {"actor": "a", "comment": None, "expected_step_id": None}
    ) == validation.DecisionRequest("a", "", None)


# -- path ids ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw_id",
    [
        "abc",
        "0",
        "-1",
        "1.5",
        "",
        " 1",
        "１",
        "²",
        "١",
        "99999999999999999999999",
        "9007199254740992",
        "9" * 4301,
    ],
)
@pytest.mark.parametrize("kind", ["Workflow", "Run"])
def test_malformed_path_ids_raise_not_found(raw_id: str, kind: str) -> None:
    assert not paths.is_path_id(raw_id)
    with pytest.raises(errors.NotFound):
        paths.path_id(raw_id, kind)


@pytest.mark.parametrize("raw_id, value", [("1", 1), ("42", 42), ("9007199254740991", 2**53 - 1)])
def test_path_ids_are_positive_integers_up_to_2_53_minus_1(raw_id: str, value: int) -> None:
    assert paths.path_id(raw_id, "Run") == value


# -- queries ---------------------------------------------------------------------------


def test_run_query_reads_every_parameter() -> None:
    query = {"workflow_id": "7", "status": "completed", "limit": "3", "cursor": "c"}

    assert queries.run_query(query) == queries.RunQuery(7, RunStatus.COMPLETED, 3, "c")
    assert queries.run_query({}) == queries.RunQuery(None, None, queries.DEFAULT_LIMIT, None)


@pytest.mark.parametrize(
    "query",
    [
        {"limit": "0"},
        {"limit": "101"},
        {"limit": "x"},
        {"status": "done"},
        {"workflow_id": "-1"},
        {"page": "2"},
    ],
    ids=repr,
)
def test_run_query_refuses_what_it_does_not_know(query: dict[str, str]) -> None:
    with pytest.raises(errors.InvalidInput):
        queries.run_query(query)


def test_a_workflow_id_beyond_every_id_is_one_past_the_largest() -> None:
    assert queries.run_query({"workflow_id": "9" * 40}).workflow_id == MAX_ID + 1


# -- text ------------------------------------------------------------------------------


def test_names_are_normalised_to_nfc() -> None:
    composed, decomposed = "Caf\u00e9", "Cafe\u0301"

    assert validation.new_workflow({"name": decomposed}).name == composed
    assert validation.new_step({"name": decomposed}).name == composed
    assert validation.new_run({"workflow_id": 1, "title": decomposed}).title == composed
    assert validation.decision({"actor": decomposed}).actor == composed


def test_free_text_is_kept_as_sent() -> None:
    decided = validation.decision({"actor": "a", "comment": "Cafe\u0301 \x01 "})
    assert decided.comment == "Cafe\u0301 \x01 "


@pytest.mark.parametrize(
    "invisible",
    ["\u200b", "\u200c\u200d", "\ufeff", "\u2060 \u00ad", " \u180e\t", "\U000e0041"],
    ids=repr,
)
def test_a_name_of_invisible_characters_is_blank(invisible: str) -> None:
    with pytest.raises(errors.InvalidInput, match="blank"):
        validation.new_workflow({"name": invisible})
    # A user's name may hold none of them at all (one person, one name).
    with pytest.raises(errors.InvalidInput, match=r"invisible|control"):
        validation.decision({"actor": invisible})


@pytest.mark.parametrize("control", ["\x00", "\x07", "\r", "\x1b[31m", "\x7f", "\x85", "\x9f"])
def test_control_characters_are_refused_in_names_titles_and_actors(control: str) -> None:
    for parse in (
        lambda: validation.new_workflow({"name": f"a{control}b"}),
        lambda: validation.new_step({"name": f"a{control}b"}),
        lambda: validation.new_run({"workflow_id": 1, "title": f"a{control}b"}),
        lambda: validation.decision({"actor": f"a{control}b"}),
    ):
        with pytest.raises(errors.InvalidInput, match="control character"):
            parse()


def test_tab_and_newline_are_allowed_inside_a_name_but_not_a_users() -> None:
    assert validation.new_workflow({"name": "a\tb\nc"}).name == "a\tb\nc"
    with pytest.raises(errors.InvalidInput, match="control character"):
        validation.decision({"actor": "a\tb"})


def test_a_length_limit_counts_what_was_sent() -> None:
    # The OpenAPI document's maxLength applies to the string as sent.
    with pytest.raises(errors.InvalidInput, match="at most 200"):
        validation.new_step({"name": "n" * 199 + "  "})


# -- JSON --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [b'{"workflow_id": 999, "workflow_id": 1}', b'{"a": {"b": 1, "b": 1}}', b'[{"x": 1, "x": 2}]'],
)
def test_a_duplicated_key_is_refused_not_guessed(raw: bytes) -> None:
    with pytest.raises(errors.InvalidInput, match="appears twice"):
        validation.json_body(raw)


@pytest.mark.parametrize("raw", [b"NaN", b'{"workflow_id": NaN}', b"[Infinity]", b"-Infinity"])
def test_nan_and_infinity_are_not_json(raw: bytes) -> None:
    with pytest.raises(errors.InvalidInput, match="not a JSON number"):
        validation.json_body(raw)


def test_a_body_over_one_megabyte_is_too_large_before_it_is_read() -> None:
    http.check_body_size(b" " * http.MAX_BODY_BYTES)
    with pytest.raises(errors.PayloadTooLarge):
        http.check_body_size(b" " * (http.MAX_BODY_BYTES + 1))


def test_a_long_path_id_is_not_shown_back_in_full() -> None:
    with pytest.raises(errors.NotFound) as raised:
        paths.path_id("9" * 5000, "Run")
    assert len(raised.value.message) < 200


# -- approver rules ------------------------------------------------------------------


def test_steps_may_be_names_or_objects_with_approvers_and_a_quorum() -> None:
    workflow = validation.new_workflow(
        {
            "name": "Purchase",
            "steps": [
                "Manager",
                {"name": " Finance ", "approvers": ["group:finance", "user:cfo"]},
                {"name": "Board", "approvers": ["group:board"], "required_approvals": 3.0},
            ],
            "allow_self_approval": True,
            "reject_requires_comment": True,
        }
    )
    assert workflow.steps == [
        StepRule("Manager"),
        StepRule("Finance", ("group:finance", "user:cfo"), 1),
        StepRule("Board", ("group:board",), 3),
    ]
    assert workflow.policy == Policy(True, False, True)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"name": "S", "approvers": "user:a"}, "'approvers' must be a list"),
        ({"name": "S", "approvers": ["alice"]}, 'must be "user:<id>" or "group:<name>"'),
        ({"name": "S", "approvers": ["user:"]}, "must not be blank"),
        ({"name": "S", "approvers": ["user: "]}, "must not be blank"),
        ({"name": "S", "approvers": [7]}, "must be a string"),
        ({"name": "S", "approvers": ["user:a", "user:a"]}, "listed twice"),
        ({"name": "S", "approvers": ["user:" + "a" * 201]}, "at most 200"),
        ({"name": "S", "approvers": [f"user:u{i}" for i in range(51)]}, "at most 50"),
        ({"name": "S", "required_approvals": 0}, "from 1 to 20"),
        ({"name": "S", "required_approvals": 21}, "from 1 to 20"),
        ({"name": "S", "required_approvals": True}, "from 1 to 20"),
        ({"name": "S", "required_approvals": "2"}, "from 1 to 20"),
        ({"name": "S", "quorum": 2}, "Unknown field 'quorum'"),
    ],
)
def test_step_rules_that_break_a_rule_are_refused(step: dict[str, Any], message: str) -> None:
    for refuse in (
        validation.new_step,
        lambda s: validation.new_workflow({"name": "W", "steps": [s]}),
    ):
        with pytest.raises(errors.InvalidInput, match=re.escape(message)) as refused:
            refuse(step)
        # Rules the document's schema states: 400, not 422.
        assert not isinstance(refused.value, errors.Unprocessable)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"name": "S", "approvers": ["user:a"], "required_approvals": 2}, "never be approved"),
        ({"name": "S", "approvers": ["user:a", "user:b"], "required_approvals": 3}, "only 2"),
        ({"name": "S", "approvers": ["user:a", "user:a "]}, "'user:a' is listed twice"),
        ({"name": "S", "approvers": ["group:x", "group: x"]}, "'group:x' is listed twice"),
        (
            {
                "name": "S",
                "deadline_seconds": 1,
                "on_deadline": "escalate",
                "escalate_to": ["user:caf\u00e9", "user:cafe\u0301"],
            },
            "listed twice in 'escalate_to'",
        ),
    ],
)
def test_step_rules_no_schema_states_are_unprocessable(step: dict[str, Any], message: str) -> None:
    """The quorum against the approvers, and a principal that only trimming or
    NFC makes a repeat: valid by the document's schema, so 422 (Unprocessable)."""
    with pytest.raises(errors.Unprocessable, match=re.escape(message)):
        validation.new_step(step)
    with pytest.raises(errors.Unprocessable, match=re.escape(message)):
        validation.new_workflow({"name": "W", "steps": [step]})


def test_a_quorum_above_the_users_is_fine_where_a_group_may_supply_it() -> None:
    rule = validation.new_step(
        {"name": "S", "approvers": ["user:a", "group:g"], "required_approvals": 5}
    )
    assert rule == StepRule("S", ("user:a", "group:g"), 5)
    assert validation.new_step({"name": "S", "approvers": [], "required_approvals": 20}) == (
        StepRule("S", (), 20)
    )


@pytest.mark.parametrize("flag", ["allow_self_approval", "distinct_approvers"])
def test_policy_flags_are_booleans(flag: str) -> None:
    with pytest.raises(errors.InvalidInput, match="true or false"):
        validation.new_workflow({"name": "W", flag: 1})


def test_groups_are_asserted_only_where_the_actor_is() -> None:
    decided = validation.decision({"actor": "a", "groups": [" finance ", "finance"]})
    assert decided.groups == frozenset({"finance"})
    with pytest.raises(errors.InvalidInput, match="Unknown field 'groups'"):
        validation.decision({"groups": ["finance"]}, actor_required=False)
    with pytest.raises(errors.InvalidInput, match="'groups' must be a list"):
        validation.decision({"actor": "a", "groups": "finance"})


def test_a_cancellation_has_an_actor_and_a_reason() -> None:
    assert validation.cancellation({"actor": " ann ", "reason": "moot"}) == (
        validation.CancelRequest("ann", "moot")
    )
    with pytest.raises(errors.InvalidInput, match="Missing required field 'actor'"):
        validation.cancellation({"reason": "moot"})
    with pytest.raises(errors.InvalidInput, match="at most 5000"):
        validation.cancellation({"actor": "a", "reason": "x" * 5001})


def test_the_inbox_query_names_the_actor_and_repeats_group() -> None:
    query = MultiDict({"actor": ["fay"], "group": ["finance", "board"], "limit": ["5"]})
    assert queries.inbox_query(query, verified=False) == queries.InboxQuery(
        "fay", frozenset({"finance", "board"}), 5, None
    )
    with pytest.raises(errors.InvalidInput, match="Missing required query parameter 'actor'"):
        queries.inbox_query({"group": "finance"}, verified=False)
    with pytest.raises(errors.InvalidInput, match="Unknown query parameter 'actor'"):
        queries.inbox_query({"actor": "fay"}, verified=True)
    with pytest.raises(errors.InvalidInput, match="at most once"):
        queries.inbox_query(MultiDict({"actor": ["a", "b"]}), verified=False)


def test_a_null_quorum_is_the_default() -> None:
    assert validation.new_step({"name": "S", "required_approvals": None}) == StepRule("S")


def test_the_invisible_ranges_are_sorted_and_disjoint() -> None:
    """_invisible looks a character up by bisecting the ranges' starts."""
    ranges = names.INVISIBLE_RANGES
    assert all(low <= high for low, high in ranges)
    assert all(before[1] < after[0] for before, after in itertools.pairwise(ranges))
    for low, high in ranges:
        assert names.is_blank(chr(low)) and names.is_blank(chr(high))
        assert not names.is_blank(chr(high + 1)) or chr(high + 1).isspace()
