"""DynamoDB items <-> records: every attribute the adapter writes, and what it reads back.

An attribute that is absent stands for its record's default only where the
writer leaves it out for that default (a run's empty input, a first round, an
action for nobody else, a step without a deadline or a condition); the rest
are always written, and read as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from chalicelib.domain.models import (
    Action,
    Deadline,
    Event,
    Policy,
    Run,
    Step,
    Workflow,
)
from chalicelib.domain.record import Record
from chalicelib.storage.dynamodb import carried, keys
from chalicelib.storage.dynamodb.client import n, s
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.schema import DELIVERY_DUE, DUE_AT, DUE_KEY


def key(pk: str, sk: str) -> Item:
    """An item's key."""
    return {"PK": s(pk), "SK": s(sk)}


def strings(values: Sequence[str]) -> dict[str, Any]:
    return {"L": [s(value) for value in values]}


def texts(item: Item, name: str) -> tuple[str, ...]:
    return tuple(value["S"] for value in item[name]["L"]) if name in item else ()


def step_item(step: Step, version: int) -> Item:
    return {
        "PK": s(keys.workflow_pk(step.workflow_id)),
        "SK": s(keys.step_sk(step.step_order, version)),
        "id": n(step.id),
        "name": s(step.name),
        "step_order": n(step.step_order),
        **rule_attrs(step),
    }


def rule_attrs(step: Step) -> Item:
    """Who may decide a step, its quorum, its deadline, when it applies and whom
    else it tells, as its items keep them (`notify` only where it names anyone)."""
    return {
        "approvers": strings(step.approvers),
        "required_approvals": n(step.required_approvals),
        **deadline_attrs(step, "deadline"),
        **json_attr("when", step.when),
        **({"notify": strings(step.notify)} if step.notify else {}),
    }


def json_attr(name: str, value: Any) -> Item:
    """A JSON value as attribute `name`, its text (none where it is None)."""
    return {name: s(_json_text(value))} if value is not None else {}


def json_of(item: Item, name: str, default: Any = None) -> Any:
    """The JSON value attribute `name` holds (`default` without it)."""
    if name not in item:
        return default
    import json

    return json.loads(item[name]["S"])


def input_attrs(data: dict[str, Any]) -> Item:
    """A run's input as its item keeps it (none while it is empty)."""
    return json_attr("input", data) if data else {}


def _json_text(value: Any) -> str:
    """Compact, and in the order given: a schema's properties are in the order its
    author chose, which the page shows its fields in, and an input in the order
    it was sent (its digest sorts on its own: domain/audit.py)."""
    import json

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def deadline_attrs(step: Step, name: str) -> Item:
    """The step's deadline as attribute `name` (none without a deadline)."""
    deadline = step.deadline
    if deadline is None:
        return {}
    escalate_to = {"L": [s(principal) for principal in deadline.escalate_to]}
    value = {
        "seconds": n(deadline.seconds),
        "action": s(deadline.action),
        "escalate_to": escalate_to,
    }
    return {name: {"M": value}}


def deadline_of(item: Item, name: str) -> Optional[Deadline]:
    if name not in item:
        return None
    value = item[name]["M"]
    return Deadline(
        int(value["seconds"]["N"]),
        value["action"]["S"],
        tuple(principal["S"] for principal in value["escalate_to"]["L"]),
    )


def workflow_item(workflow: Workflow) -> Item:
    """The workflow item: the workflow at its newest version (in the `all` index)."""
    return {
        **version_item(workflow),
        "SK": s(keys.WORKFLOW_SK),
        "all_pk": s(keys.WORKFLOWS_PK),
        "retired": {"BOOL": workflow.retired},
    }


def version_item(workflow: Workflow) -> Item:
    """The item of the workflow's version: what its runs decide under."""
    return {
        "PK": s(keys.workflow_pk(workflow.id)),
        "SK": s(keys.version_sk(workflow.version)),
        **version_attrs(workflow),
        "steps": {"L": [step_entry(step) for step in workflow.steps]},
    }


def version_attrs(workflow: Workflow) -> Item:
    """A version's attributes but its steps, as its item and the workflow
    item (at its newest version) hold them."""
    return {
        "id": n(workflow.id),
        "name": s(workflow.name),
        "description": s(workflow.description),
        "created_at": s(workflow.created_at),
        **{flag: {"BOOL": on} for flag, on in workflow.policy._asdict().items()},
        **json_attr("input_schema", workflow.input_schema),
        "max_returns": n(workflow.max_returns),
        "version": n(workflow.version),
        "version_created_at": s(workflow.version_created_at or workflow.created_at),
    }


def workflow_of(item: Item, retired: Optional[bool] = None) -> Workflow:
    """The workflow an item holds at its version (`retired`: the workflow's
    flag, where the item is a version's, which does not keep it)."""
    workflow_id = int(item["id"]["N"])
    steps = (step_of(entry["M"], workflow_id) for entry in item["steps"]["L"])
    return Workflow(
        workflow_id,
        item["name"]["S"],
        item["description"]["S"],
        item["created_at"]["S"],
        tuple(sorted(steps, key=lambda step: step.step_order)),
        policy_of(item),
        json_of(item, "input_schema"),
        max_returns_of(item),
        version_of(item),
        retired_of(item) if retired is None else retired,
        item["version_created_at"]["S"]
        if "version_created_at" in item
        else item["created_at"]["S"],
    )


# A workflow item written before versions (docs/storage.md) has no `version`,
# `retired` or `version_created_at`, a run item no `workflow_version`: read as
# its first version, not retired, published when the workflow was defined.
def version_of(item: Item) -> int:
    """The workflow version a workflow, version or run item is of."""
    return int(item["version"]["N"]) if "version" in item else 1


def retired_of(item: Item) -> bool:
    """Whether a workflow item says its workflow is retired."""
    return bool(item["retired"]["BOOL"]) if "retired" in item else False


def max_returns_of(item: Item) -> int:
    """A workflow's (or a run's) max_returns."""
    return int(item["max_returns"]["N"])


def policy_item(policy: Policy) -> dict[str, Any]:
    """A run's policy flags, as its item keeps them."""
    return {"M": {flag: {"BOOL": on} for flag, on in policy._asdict().items()}}


def policy_of(item: Item) -> Policy:
    """The policy flags an item holds."""
    return Policy(*(item[flag]["BOOL"] for flag in Policy._fields))


def step_entry(step: Step) -> dict[str, Item]:
    """A step as its workflow item lists it."""
    return {
        "M": {
            "id": n(step.id),
            "name": s(step.name),
            "step_order": n(step.step_order),
            **rule_attrs(step),
        }
    }


# A step's attributes: in its own item, and as a run item's current step.
STEP_ATTRIBUTES = (
    "id",
    "name",
    "step_order",
    "approvers",
    "required_approvals",
    "deadline",
    "when",
    "notify",
)
CURRENT_STEP_ATTRIBUTES = (
    "step_id",
    "step_name",
    "step_order",
    "step_approvers",
    "step_required",
    "step_deadline",
    "step_when",
    "step_notify",
)


def step_of(item: Item, workflow_id: int, names: tuple[str, ...] = STEP_ATTRIBUTES) -> Step:
    """The step `item` holds under `names`."""
    step_id, name, order, approvers, required, deadline, when, notify = names
    return Step(
        int(item[step_id]["N"]),
        workflow_id,
        item[name]["S"],
        int(item[order]["N"]),
        texts(item, approvers),
        int(item[required]["N"]),
        deadline_of(item, deadline),
        json_of(item, when),
        texts(item, notify),
    )


def current_step_state(run: Run, shards: int) -> tuple[Item, list[str]]:
    """The run item's attributes for where it waits: its current step with that
    step's rules and deadline (in the due index while it is still to apply),
    since when, who approved it so far; and the attributes it must drop."""
    sets: Item = {
        "deadline_passed": {"BOOL": run.deadline_passed},
        "approved_by": strings(run.current_step_approved_by),
        "on_behalf_of": strings(run.current_step_on_behalf_of),
    }
    removed: list[str] = []
    step = run.current_step
    if step is None:
        removed += [
            "step_id",
            "step_name",
            "step_order",
            "step_approvers",
            "step_required",
            "current_step_since",
        ]
    else:
        sets.update(
            step_id=n(step.id),
            step_name=s(step.name),
            step_order=n(step.step_order),
            step_approvers=strings(step.approvers),
            step_required=n(step.required_approvals),
        )
        if run.current_step_since is not None:
            sets["current_step_since"] = s(run.current_step_since)
        else:
            removed.append("current_step_since")  # returned: it waits for no decision
    deadline = deadline_attrs(step, "step_deadline") if step else {}
    sets.update(deadline)
    removed += [] if deadline else ["step_deadline"]
    when = json_attr("step_when", step.when) if step else {}
    sets.update(when)
    removed += [] if when else ["step_when"]
    if step is not None and step.notify:
        sets["step_notify"] = strings(step.notify)
    else:
        removed.append("step_notify")
    if run.current_step_due_at is None:
        removed += ["current_step_due_at", DUE_KEY, DUE_AT]
    else:
        sets["current_step_due_at"] = s(run.current_step_due_at)
        if not run.deadline_passed:
            sets.update(
                {
                    DUE_KEY: s(keys.deadline_pk(run.id, shards)),
                    DUE_AT: s(run.current_step_due_at),
                }
            )
        else:
            removed += [DUE_KEY, DUE_AT]
    return sets, removed


# On a run item: the list shards (WORKFLOW_LIST_SHARDS) in force when the inbox
# entries of the step it waits at were put, whose keys follow them. A run item
# written before issue 43 has none: its entries were put at the setting (read
# as the one in force now), the open steps' over as many shards as a group's.
INBOX_SHARDS = "inbox_shards"


class RunRevision(Record):
    """What the next write of a run needs of its item as read: the sequence of
    its last event (which the write numbers on from and is conditional on), and
    the list shards its inbox entries were put with (None: not kept)."""

    event_seq: int
    inbox_shards: Optional[int]


def run_of(item: Item, actions: tuple[Action, ...]) -> Run:
    workflow_id = int(item["workflow_id"]["N"])
    current = step_of(item, workflow_id, CURRENT_STEP_ATTRIBUTES) if "step_id" in item else None
    # Absent where the run waits for no decision (returned, or ended).
    since = item["current_step_since"]["S"] if "current_step_since" in item else None
    return Run(
        int(item["id"]["N"]),
        workflow_id,
        item["title"]["S"],
        item["status"]["S"],
        current,
        item["created_at"]["S"],
        item["updated_at"]["S"],
        actions,
        item["requested_by"]["S"] if "requested_by" in item else None,
        # Always written: absent only where someone removed it (the audit shows it).
        item["head_hash"]["S"] if "head_hash" in item else None,
        texts(item, "approved_by"),
        since,
        policy_of(item["policy"]["M"]),
        texts(item, "approvers"),
        RunRevision(
            event_seq(item), int(item[INBOX_SHARDS]["N"]) if INBOX_SHARDS in item else None
        ),
        item["current_step_due_at"]["S"] if "current_step_due_at" in item else None,
        item["deadline_passed"]["BOOL"],
        0,
        json_of(item, "input", {}),
        int(item["round"]["N"]) if "round" in item else 1,
        texts(item, "on_behalf_of"),
        item["genesis_input_digest"]["S"] if "genesis_input_digest" in item else None,
        max_returns_of(item),
        int(item["workflow_version"]["N"]) if "workflow_version" in item else 1,
        int(item["genesis_version"]["N"]) if "genesis_version" in item else None,
        item["definition_digest"]["S"] if "definition_digest" in item else None,
        int(item["definition_steps"]["N"]) if "definition_steps" in item else None,
    )


def action_item(action: Action, seq: int) -> Item:
    item = {
        "PK": s(keys.run_pk(action.run_id)),
        "SK": s(keys.action_sk(seq)),
        "id": n(action.id),
        "step_id": n(action.step_id),
        "step_name": s(action.step_name),
        "action": s(action.action),
        "actor": s(action.actor),
        "comment": s(action.comment),
        "created_at": s(action.created_at),
    }
    if action.hash is not None:
        item["hash"] = s(action.hash)
    if action.on_behalf_of is not None:
        item["on_behalf_of"] = s(action.on_behalf_of)
    if action.round > 1:
        item["round"] = n(action.round)
    if action.input_digest is not None:
        item["input_digest"] = s(action.input_digest)
    if action.channel != "api":
        item["channel"] = s(action.channel)
    if action.approvers is not None:
        item["approvers"] = strings(action.approvers)
    if action.workflow_version is not None:
        item["workflow_version"] = n(action.workflow_version)
    if action.next_step_digest is not None:
        item["next_step_digest"] = s(action.next_step_digest)
    if action.definition_digest is not None:
        item.update(definition_attrs(action.definition_digest, action.definition_steps))
    return item


def definition_attrs(digest: Optional[str], steps: Optional[int]) -> Item:
    """The attributes of a definition's digest a run's genesis or a move binds
    (none where it binds none: a run started before definitions were bound)."""
    if digest is None or steps is None:
        return {}
    return {"definition_digest": s(digest), "definition_steps": n(steps)}


def action_of(item: Item, run_id: int) -> Action:
    return Action(
        int(item["id"]["N"]),
        run_id,
        int(item["step_id"]["N"]),
        item["step_name"]["S"],
        item["action"]["S"],
        item["actor"]["S"],
        item["comment"]["S"],
        item["created_at"]["S"],
        item["hash"]["S"] if "hash" in item else None,
        item["on_behalf_of"]["S"] if "on_behalf_of" in item else None,
        int(item["round"]["N"]) if "round" in item else 1,
        item["input_digest"]["S"] if "input_digest" in item else None,
        item["channel"]["S"] if "channel" in item else "api",
        texts(item, "approvers") if "approvers" in item else None,
        int(item["workflow_version"]["N"]) if "workflow_version" in item else None,
        item["next_step_digest"]["S"] if "next_step_digest" in item else None,
        item["definition_digest"]["S"] if "definition_digest" in item else None,
        int(item["definition_steps"]["N"]) if "definition_steps" in item else None,
    )


def carrying(events: Sequence[Event], due_at: Optional[str]) -> Item:
    """The attributes with which an action item carries its change's `events`
    (carried.py): pending delivery; in the due index from `due_at` (their
    time) where this service sends them from the table, None where the
    stream carries them."""
    first = events[0]
    due = {DUE_KEY: s(DELIVERY_DUE), DUE_AT: s(due_at)} if due_at is not None else {}
    return {
        carried.EVENTS: {"B": carried.pack([(e.id, e.type, e.body) for e in events])},
        carried.FROM: n(first.sequence),
        carried.COUNT: n(len(events)),
        **due,
    }


def carried_events(item: Item, subject: str) -> list[Event]:
    """The events an action item carries, in order (none for one that carries none)."""
    if not carried.carries(item):
        return []
    first = int(item[carried.FROM]["N"])
    return [
        Event(event_id, subject, first + place, kind, body)
        for place, (event_id, kind, body) in enumerate(carried.unpack(item[carried.EVENTS]["B"]))
    ]


def carried_delivered(item: Item) -> int:
    """How many of the events an action item carries were delivered."""
    return int(item[carried.DELIVERED]["N"]) if carried.DELIVERED in item else 0


def event_seq(item: Item) -> int:
    """The sequence of the last event of the stream whose counter `item` keeps."""
    return int(item["event_seq"]["N"])


def event_item(event: Event, time: str, in_due_index: bool) -> Item:
    """An event as recorded: pending delivery; in the due index from its time on
    where this service sends it from the table (not where the stream carries it)."""
    due = {DUE_KEY: s(DELIVERY_DUE), DUE_AT: s(time)} if in_due_index else {}
    return {
        "PK": s(keys.event_pk(event.subject)),
        "SK": s(keys.event_sk(event.sequence)),
        "event_id": s(event.id),
        "sequence": n(event.sequence),
        "type": s(event.type),
        "event": s(event.body),
        **due,
    }


def event_of(item: Item) -> Event:
    return Event(
        item["event_id"]["S"],
        keys.subject_of(item["PK"]["S"]),
        int(item["sequence"]["N"]),
        item["type"]["S"],
        item["event"]["S"],
    )


# On a run item, in a stream-delivered table: the inbox entries the change
# that wrote it left behind (its step's, in the inboxes the run left), which
# the relay deletes when it reads the run's stream record (relay.py): JSON,
# {"step_id": <the step left>, "keys": [[PK, SK], ...]}.
INBOX_LEFT = "inbox_left"


def inbox_left(step_id: int, entries: Sequence[Item]) -> Item:
    """The attribute that hands the keys of `entries` to the relay to delete."""
    import json

    left = {"step_id": step_id, "keys": [[e["PK"]["S"], e["SK"]["S"]] for e in entries]}
    return {INBOX_LEFT: s(json.dumps(left, separators=(",", ":")))}


def inbox_item(
    principal: str, run_id: int, step_id: int, since: str, shards: tuple[int, int]
) -> Item:
    """The entry that puts a run waiting at step `step_id` since `since` into
    `principal`'s inbox (`shards`: a group's inbox's and the open steps')."""
    return {
        "PK": s(keys.inbox_pk(principal, run_id, *shards)),
        "SK": s(keys.inbox_sk(since, run_id)),
        "run_id": n(run_id),
        "step_id": n(step_id),
    }
