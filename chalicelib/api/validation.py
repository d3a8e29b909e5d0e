"""Request bodies, path ids and query strings, turned into typed values.

Every function takes what the client sent (a parsed JSON body, a path segment,
the query parameters) and returns plain values for the engine, or raises
InvalidInput (NotFound for a path id that can name nothing). No storage here:
a request refused here has changed nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from chalicelib.api import json_numbers
from chalicelib.api.paths import shown
from chalicelib.domain import errors
from chalicelib.domain.limits import MAX_INITIAL_STEPS, MAX_NOTIFY
from chalicelib.domain.models import (
    DEFAULT_MAX_RETURNS,
    GROUP_PREFIX,
    USER_PREFIX,
    Deadline,
    Policy,
    StepRule,
)
from chalicelib.domain.names import (
    canonical_principal,
    combination_problem,
    has_control_characters,
    is_blank,
    written_problem,
)
from chalicelib.domain.record import Record

MAX_NAME = 200
MAX_TITLE = 500
MAX_ACTOR = 200
MAX_TEXT = 5_000
MAX_DATE_TIME = 40
MAX_APPROVERS = 50
MAX_REQUIRED_APPROVALS = 20
# Groups one caller may name (none mode); more than anyone's directory holds.
MAX_GROUPS = 100
# A step's deadline: one second to a year.
MAX_DEADLINE_SECONDS = 31_536_000
MAX_ESCALATE_TO = 20
# Returns for changes a workflow may allow a run.
MAX_RETURNS = 100
STEP_DEADLINE_FIELDS = ("deadline_seconds", "on_deadline", "escalate_to")


class NewWorkflow(Record):
    name: str
    description: str
    steps: list[StepRule]
    policy: Policy
    input_schema: Optional[dict[str, Any]] = None
    max_returns: int = DEFAULT_MAX_RETURNS


class NewRun(Record):
    workflow_id: int
    title: str
    requested_by: Optional[str] = None
    input: Optional[dict[str, Any]] = None


class DecisionRequest(Record):
    actor: Optional[str]
    comment: str
    expected_step_id: Optional[int]
    # Asserted in `none` mode; None when not given.
    groups: Optional[frozenset[str]] = None
    expected_round: Optional[int] = None
    # A delegator the caller decides for (None: as the rules find).
    on_behalf_of: Optional[str] = None


class Resubmission(Record):
    actor: Optional[str]
    comment: str
    input: Optional[dict[str, Any]]


class NewDelegation(Record):
    delegator: Optional[str]
    delegate: str
    workflow_id: Optional[int]
    starts_at: str
    ends_at: str
    reason: str


class CancelRequest(Record):
    actor: Optional[str]
    reason: str


# -- bodies ----------------------------------------------------------------------


def json_body(raw: bytes) -> Any:
    """The request body as JSON (None when empty); InvalidInput if it is not
    JSON: a duplicated key or NaN/Infinity is refused, not guessed at, and so
    is a number a double does not keep as written (json_numbers.py)."""
    if not raw:
        return None
    try:
        # What json.loads does with bytes, with one decoder for the process
        # instead of one per body (json.loads builds one when given hooks).
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
        return _decoder.decode(text)
    except json_numbers.UnkeptNumber as exc:
        raise errors.InvalidInput(json_numbers.problem(text)) from exc
    except _NotJSON as exc:
        raise errors.InvalidInput(f"The request body is not valid JSON: {exc}") from exc
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise errors.InvalidInput("The request body is not valid JSON") from exc


class _NotJSON(ValueError):
    """What json.loads lets through and JSON (RFC 8259) does not mean."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fields = dict(pairs)
    if len(fields) != len(pairs):
        names = [name for name, _ in pairs]
        duplicated = next(name for n, name in enumerate(names) if name in names[:n])
        raise _NotJSON(f"the key {shown(duplicated)} appears twice")
    return fields


def _not_a_number(constant: str) -> Any:
    raise _NotJSON(f"{constant} is not a JSON number")


_decoder = json.JSONDecoder(
    object_pairs_hook=_object,
    parse_constant=_not_a_number,
    parse_float=json_numbers.read_float,
    parse_int=json_numbers.read_int,
)


def new_workflow(body: Any) -> NewWorkflow:
    """POST /workflows: {"name", "description"?, "steps"?: [step, ...], the
    policy flags?, "input_schema"?}, where a step is its name or {"name",
    "approvers"?, "required_approvals"?, the deadline's fields?, "when"?,
    "notify"?}."""
    fields = _fields(body, required=("name",), optional=DEFINITION_FIELDS)
    return _definition(fields, _text(fields, "name", MAX_NAME))


def new_version(body: Any) -> tuple[NewWorkflow, Optional[int]]:
    """POST /workflows/{id}/versions: what POST /workflows takes but its name
    (the definition, whole), and "expected_version"? (the version edited)."""
    fields = _fields(body, required=(), optional=(*DEFINITION_FIELDS, "expected_version"))
    return _definition(fields, ""), _optional_id(fields, "expected_version")


DEFINITION_FIELDS = ("description", "steps", *Policy._fields, "input_schema", "max_returns")


def _definition(fields: Mapping[str, Any], name: str) -> NewWorkflow:
    """A workflow's definition named `name`: its steps, policy, schema, returns."""
    description = _text(fields, "description", MAX_TEXT, required=False)
    steps = fields.get("steps")
    if steps is None:
        steps = []
    if not isinstance(steps, list):
        raise errors.InvalidInput("'steps' must be a list of steps (names or step objects)")
    if len(steps) > MAX_INITIAL_STEPS:
        raise errors.InvalidInput(
            f"'steps' may hold at most {MAX_INITIAL_STEPS} steps; append more one by one"
        )
    rules = [
        _step_rule(step, "steps[]")
        if isinstance(step, dict)
        else StepRule(_text({"steps[]": step}, "steps[]", MAX_NAME))
        for step in steps
    ]
    policy = Policy(*(_flag(fields, flag) for flag in Policy._fields))
    return NewWorkflow(
        name, description, rules, policy, _input_schema(fields), _max_returns(fields)
    )


def _max_returns(fields: Mapping[str, Any]) -> int:
    """How often a run may be sent back for changes: 0 (never) to MAX_RETURNS."""
    value = fields.get("max_returns")
    if value is None:
        return DEFAULT_MAX_RETURNS
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETURNS:
        raise errors.InvalidInput(f"'max_returns' must be an integer from 0 to {MAX_RETURNS}")
    return value


def _input_schema(fields: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    schema = fields.get("input_schema")
    if schema is None:
        return None
    from chalicelib.domain import content

    return content.checked_schema(schema)


def new_step(body: Any) -> StepRule:
    """POST /workflows/{id}/steps: {"name", "approvers"?, "required_approvals"?,
    "deadline_seconds"?, "on_deadline"?, "escalate_to"?, "when"?, "notify"?}."""
    return _step_rule(body)


def _step_rule(body: Any, where: str = "") -> StepRule:
    """A step's definition: its name, who may decide it, its quorum, its
    deadline, when it applies, and whom else it tells."""
    fields = _fields(
        body,
        required=("name",),
        optional=("approvers", "required_approvals", *STEP_DEADLINE_FIELDS, "when", "notify"),
    )
    name = _text(fields, "name", MAX_NAME)
    approvers = _principals(fields.get("approvers"), "approvers", MAX_APPROVERS)
    required = fields.get("required_approvals")
    if required is None:
        required = 1
    if isinstance(required, float) and required.is_integer():
        required = int(required)
    if (
        isinstance(required, bool)
        or not isinstance(required, int)
        or not 1 <= required <= MAX_REQUIRED_APPROVALS
    ):
        raise errors.InvalidInput(
            f"{where and where + ' '}'required_approvals' must be an integer from 1 to "
            f"{MAX_REQUIRED_APPROVALS}"
        )
    users = [approver for approver in approvers if approver.startswith(USER_PREFIX)]
    if approvers and len(users) == len(approvers) and required > len(users):
        # Valid by the document's schema, which cannot count a list against a number.
        raise errors.Unprocessable(
            f"Step {name!r} requires {required} approvals but lists only {len(users)} "
            "approvers, all users: it could never be approved"
        )
    deadline, when = step_deadline(fields), _when(fields, name)
    notify = _principals(fields.get("notify"), "notify", MAX_NOTIFY)
    return StepRule(name, approvers, required, deadline, when, notify)


def _when(fields: Mapping[str, Any], step: str) -> Optional[dict[str, Any]]:
    """A step's condition, as conditions.py reads them (its `var` paths are
    checked against the workflow's input_schema by the transition)."""
    when = fields.get("when")
    if when is None:
        return None
    from chalicelib.domain import conditions

    return conditions.checked(when, step)


def step_deadline(fields: Mapping[str, Any]) -> Optional[Deadline]:
    """A step's deadline from its fields: `deadline_seconds` (1 to a year) and
    `on_deadline` (remind, escalate or reject; remind when left out); with
    escalate, `escalate_to` names whom ("user:<id>" or "group:<name>")."""
    seconds, action = fields.get("deadline_seconds"), fields.get("on_deadline")
    escalate_to = fields.get("escalate_to")
    if seconds is None:
        if action is not None or escalate_to is not None:
            raise errors.InvalidInput("'on_deadline' and 'escalate_to' need 'deadline_seconds'")
        return None
    if isinstance(seconds, float) and seconds.is_integer():
        seconds = int(seconds)
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise errors.InvalidInput("'deadline_seconds' must be an integer")
    if not 1 <= seconds <= MAX_DEADLINE_SECONDS:
        raise errors.InvalidInput(
            f"'deadline_seconds' must be from 1 to {MAX_DEADLINE_SECONDS:,} (a year)"
        )
    from chalicelib.domain.lifecycle import OnDeadline  # only steps with a deadline

    try:
        outcome = OnDeadline.REMIND if action is None else OnDeadline(action)
    except (ValueError, TypeError):
        raise errors.InvalidInput(f"'on_deadline' must be one of {', '.join(OnDeadline)}") from None
    escalate = OnDeadline.ESCALATE
    if outcome != escalate:
        if escalate_to is not None:
            raise errors.InvalidInput(f"'escalate_to' is only for on_deadline '{escalate}'")
        return Deadline(seconds, outcome)
    escalated = _principals(escalate_to, "escalate_to", MAX_ESCALATE_TO)
    if not escalated:
        raise errors.InvalidInput(
            f"'escalate_to' must list 1 to {MAX_ESCALATE_TO} principals "
            f"for on_deadline '{escalate}'"
        )
    return Deadline(seconds, outcome, escalated)


def _principals(value: Any, name: str, most: int) -> tuple[str, ...]:
    """At most `most` distinct "user:<id>" and "group:<name>" principals (a
    step's approvers, those a passed deadline escalates it to, or those it tells)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise errors.InvalidInput(f'{name!r} must be a list of "user:<id>" or "group:<name>"')
    if len(value) > most:
        raise errors.InvalidInput(f"{name!r} may list at most {most} principals")
    principals: list[str] = []
    for entry in value:
        if not isinstance(entry, str):
            raise errors.InvalidInput(f"Each of {name!r} must be a string")
        prefix = next((p for p in (USER_PREFIX, GROUP_PREFIX) if entry.startswith(p)), None)
        if prefix is None:
            raise errors.InvalidInput(
                f'{shown(entry)} in {name!r} must be "user:<id>" or "group:<name>"'
            )
        principal = prefix + _name(entry[len(prefix) :], f"{name}[]")
        if canonical_principal(principal) in map(canonical_principal, principals):
            # The schema's uniqueItems refuses a repeat as sent (400); one that
            # only trimming, NFC or one person's other spelling makes a repeat
            # ("user:a", "user:a ", "user:A") is valid by it, and refused for a
            # rule it cannot state (422).
            twice = (
                errors.InvalidInput if entry in value[: len(principals)] else errors.Unprocessable
            )
            raise twice(f"{shown(principal)} is listed twice in {name!r}")
        principals.append(principal)
    return tuple(principals)


def _flag(fields: Mapping[str, Any], name: str) -> bool:
    value = fields.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise errors.InvalidInput(f"{name!r} must be true or false")
    return value


def groups(value: Any) -> Optional[frozenset[str]]:
    """The groups a caller names (`none` mode): a list of group names."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_GROUPS:
        raise errors.InvalidInput(f"'groups' must be a list of at most {MAX_GROUPS} group names")
    return frozenset(
        principal_name({"groups[]": group}, "groups[]", GROUP_PREFIX) for group in value
    )


def new_run(body: Any) -> NewRun:
    """POST /runs: {"workflow_id", "title", "requested_by"?, "input"?}."""
    fields = _fields(body, required=("workflow_id", "title"), optional=("requested_by", "input"))
    workflow_id = _id(fields, "workflow_id")
    title = _text(fields, "title", MAX_TITLE)
    requested_by = (
        principal_name(fields, "requested_by") if fields.get("requested_by") is not None else None
    )
    return NewRun(workflow_id, title, requested_by, _run_input(fields.get("input")))


def _run_input(data: Any) -> Optional[dict[str, Any]]:
    """What the run is about (content.py's rules): 400, or 413 when too large."""
    if data is None:
        return None
    from chalicelib.domain import content

    return content.checked_input(data)


def decision(
    body: Any, actor_required: bool = True, comment_required: bool = False
) -> DecisionRequest:
    """POST /runs/{id}/approve|reject|return: {"actor", "comment"? (required
    to return), "expected_step_id"?, "expected_round"?, "on_behalf_of"?,
    "groups"?}; where the caller is verified (actor_required False), `actor`
    may be left out and `groups` is the token's to say."""
    names = ("comment", "expected_step_id", "expected_round", "on_behalf_of")
    fields = (
        _fields(body, required=("actor",), optional=(*names, "groups"))
        if actor_required
        else _fields(body, required=(), optional=("actor", *names))
    )
    if comment_required and is_blank(str(fields.get("comment") or "")):
        raise errors.InvalidInput(
            "'comment' is required: say what should change before the run is resubmitted"
        )
    comment = _text(fields, "comment", MAX_TEXT, required=False)
    return DecisionRequest(
        _actor(fields),
        comment,
        _optional_id(fields, "expected_step_id"),
        groups(fields.get("groups")),
        _optional_id(fields, "expected_round"),
        principal_name(fields, "on_behalf_of") if fields.get("on_behalf_of") is not None else None,
    )


def resubmission(body: Any, actor_required: bool = True) -> Resubmission:
    """POST /runs/{id}/resubmit: {"actor", "comment"?, "input"?}; `actor` may be
    left out where the caller is verified."""
    fields = (
        _fields(body, required=("actor",), optional=("comment", "input"))
        if actor_required
        else _fields(body, required=(), optional=("actor", "comment", "input"))
    )
    comment = _text(fields, "comment", MAX_TEXT, required=False)
    return Resubmission(_actor(fields), comment, _run_input(fields.get("input")))


def new_delegation(body: Any, delegator_required: bool = True) -> NewDelegation:
    """POST /delegations: {"delegator", "delegate", "workflow_id"?, "starts_at",
    "ends_at", "reason"?}; `delegator` may be left out where the caller is
    verified (then it is the caller)."""
    required = ("delegate", "starts_at", "ends_at")
    optional = ("workflow_id", "reason")
    fields = (
        _fields(body, required=("delegator", *required), optional=optional)
        if delegator_required
        else _fields(body, required=required, optional=("delegator", *optional))
    )
    delegator = principal_name(fields, "delegator") if fields.get("delegator") is not None else None
    return NewDelegation(
        delegator,
        delegate_name(fields, "delegate"),
        _optional_id(fields, "workflow_id"),
        _date_time(fields, "starts_at"),
        _date_time(fields, "ends_at"),
        _text(fields, "reason", MAX_TEXT, required=False),
    )


def _date_time(fields: Mapping[str, Any], name: str) -> str:
    """A date-time field as sent, untrimmed: the domain holds it to RFC 3339
    (delegations.RFC3339_PATTERN, the document's pattern), which has no spaces."""
    return _text(fields, name, MAX_DATE_TIME, required=False)


def delegate_name(fields: Mapping[str, Any], name: str) -> str:
    """A delegate as a principal: "group:<name>", or a user's name (bare or
    "user:<name>") as "user:<name>"."""
    delegate = fields.get(name)
    if isinstance(delegate, str) and delegate.startswith(GROUP_PREFIX):
        return GROUP_PREFIX + _name(delegate[len(GROUP_PREFIX) :], name)
    return USER_PREFIX + principal_name(fields, name)


def _optional_id(fields: Mapping[str, Any], name: str) -> Optional[int]:
    return _id(fields, name) if fields.get(name) is not None else None


def cancellation(body: Any, actor_required: bool = True) -> CancelRequest:
    """POST /runs/{id}/cancel: {"actor", "reason"?}; `actor` may be left out
    where the caller is verified (actor_required False)."""
    fields = (
        _fields(body, required=("actor",), optional=("reason",))
        if actor_required
        else _fields(body, required=(), optional=("actor", "reason"))
    )
    return CancelRequest(_actor(fields), _text(fields, "reason", MAX_TEXT, required=False))


def _actor(fields: Mapping[str, Any]) -> Optional[str]:
    return principal_name(fields, "actor") if fields.get("actor") is not None else None


# -- fields ------------------------------------------------------------------------


def _fields(
    body: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise errors.InvalidInput("The request body must be a JSON object")
    unknown = sorted(set(body) - set(required) - set(optional))
    if unknown:
        allowed = ", ".join(required + optional)
        raise errors.InvalidInput(f"Unknown field {unknown[0]!r}; allowed: {allowed}")
    missing = [name for name in required if body.get(name) is None]
    if missing:
        raise errors.InvalidInput(f"Missing required field {missing[0]!r}")
    return body


def _text(fields: Mapping[str, Any], name: str, limit: int, required: bool = True) -> str:
    """A string field. Required ones are names: no control characters, trimmed,
    normalised to NFC (so one name typed two ways is one name), not blank.
    Optional ones are free text, kept as sent. `limit` counts what was sent."""
    value = fields.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise errors.InvalidInput(f"{name!r} must be a string")
    if len(value) > limit:
        raise errors.InvalidInput(f"{name!r} must be at most {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.InvalidInput(f"{name!r} is not valid Unicode text") from exc
    if not required:
        return value
    if value.isascii() and value.isprintable():
        # Most names: no control or invisible characters, already NFC.
        value = value.strip()
        if not value:
            raise errors.InvalidInput(f"{name!r} must not be blank")
        return value
    if has_control_characters(value):
        raise errors.InvalidInput(
            f"{name!r} must not contain control characters (tab and newline are allowed)"
        )
    import unicodedata  # only names beyond printable ASCII get here

    value = unicodedata.normalize("NFC", value.strip())
    if is_blank(value):
        raise errors.InvalidInput(f"{name!r} must not be blank")
    return value


def principal_name(fields: Mapping[str, Any], name: str, kind: str = USER_PREFIX) -> str:
    """A user's name (an actor, a requester, a delegator), or with `kind`
    GROUP_PREFIX a group's, written bare or with its kind ("user:rita" is
    rita): one person, one spelling, stored bare. The other kind is refused."""
    value = fields.get(name)
    if not isinstance(value, str):
        raise errors.InvalidInput(f"{name!r} must be a string")
    other = GROUP_PREFIX if kind == USER_PREFIX else USER_PREFIX
    if value.startswith(other):
        meant = "a user's" if kind == USER_PREFIX else "a group's"
        raise errors.InvalidInput(f"{name!r} must be {meant} name (bare or {kind}<name>)")
    return _name(value.removeprefix(kind), name)


def _name(value: str, name: str) -> str:
    """A user's or a group's name, after its kind: a name by the rules of
    chalicelib/domain/names.py, which tokens' callers meet too. Surrounding
    spaces are trimmed; any other character it refuses is refused wherever it
    is, so that what is stored is what was read. A character no name may hold
    is 400 (the document's pattern states it); characters that may not go
    together (two scripts) are 422 (no pattern does)."""
    if len(value) > MAX_ACTOR:
        raise errors.InvalidInput(f"{name!r} must be at most {MAX_ACTOR} characters")
    trimmed = value.strip(" ")
    if not trimmed:
        raise errors.InvalidInput(f"{name!r} must not be blank")
    problem = written_problem(trimmed)
    if problem:
        raise errors.InvalidInput(f"{name!r} {problem}")
    if trimmed.isascii():
        return trimmed
    try:
        trimmed.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.InvalidInput(f"{name!r} is not valid Unicode text") from exc
    problem = combination_problem(trimmed)
    if problem:
        raise errors.Unprocessable(f"{name!r} {problem}")
    import unicodedata

    return unicodedata.normalize("NFC", trimmed)


def _id(fields: Mapping[str, Any], name: str) -> int:
    """A positive integer field; an integral number such as 7.0 or 7e0 is that
    integer (JSON has one number type, and JSON Schema's integer accepts it)."""
    value: Optional[Any] = fields.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.InvalidInput(f"{name!r} must be a positive integer")
    return value
