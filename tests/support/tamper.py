"""Changes made straight in the database, behind the service's back, as an
operator with write access could: in the SQLite file with sqlite3, in the
DynamoDB table with the client. Actions are named by their seq (position in
the run's history, from 1)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator

from chalicelib.storage import Backend
from chalicelib.storage.dynamodb import adapter as dynamodb
from chalicelib.storage.dynamodb import keys
from chalicelib.storage.sqlite.adapter import SQLiteStorage


@contextlib.contextmanager
def _sqlite(storage: SQLiteStorage) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(storage.path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _action_id(conn: sqlite3.Connection, run_id: int, seq: int) -> int:
    (action_id,) = conn.execute(
        "SELECT id FROM workflow_actions WHERE run_id = ? ORDER BY id LIMIT 1 OFFSET ?",
        (run_id, seq - 1),
    ).fetchone()
    return int(action_id)


def _action_key(run_id: int, seq: int) -> dict[str, dict[str, str]]:
    return {"PK": {"S": f"RUN#{run_id}"}, "SK": {"S": f"ACT#{seq:010d}"}}


def edit_action(storage: Backend, run_id: int, seq: int, field: str, value: str) -> None:
    """Set a text field (actor, comment) of the run's action at `seq`."""
    assert field in ("actor", "comment")
    if isinstance(storage, SQLiteStorage):
        with _sqlite(storage) as conn:
            conn.execute(
                f"UPDATE workflow_actions SET {field} = ? WHERE id = ?",
                (value, _action_id(conn, run_id, seq)),
            )
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    storage.client.update_item(
        TableName=storage.table,
        Key=_action_key(run_id, seq),
        UpdateExpression="SET #field = :value",
        ExpressionAttributeNames={"#field": field},
        ExpressionAttributeValues={":value": {"S": value}},
    )


def delete_action(storage: Backend, run_id: int, seq: int) -> None:
    if isinstance(storage, SQLiteStorage):
        with _sqlite(storage) as conn:
            conn.execute(
                "DELETE FROM workflow_actions WHERE id = ?", (_action_id(conn, run_id, seq),)
            )
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    storage.client.delete_item(TableName=storage.table, Key=_action_key(run_id, seq))


def swap_actions(storage: Backend, run_id: int, first: int, second: int) -> None:
    """Swap two actions' places in the history, each keeping its values and hash."""
    if isinstance(storage, SQLiteStorage):
        with _sqlite(storage) as conn:
            ids = (_action_id(conn, run_id, first), _action_id(conn, run_id, second))
            # Through a free id: ids are the history's order.
            conn.execute("UPDATE workflow_actions SET id = -1 WHERE id = ?", (ids[0],))
            conn.execute("UPDATE workflow_actions SET id = ? WHERE id = ?", (ids[0], ids[1]))
            conn.execute("UPDATE workflow_actions SET id = ? WHERE id = -1", (ids[1],))
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    items = [
        storage.client.get_item(TableName=storage.table, Key=_action_key(run_id, seq))["Item"]
        for seq in (first, second)
    ]
    for item, seq in zip(items, (second, first), strict=True):
        storage.client.put_item(TableName=storage.table, Item={**item, **_action_key(run_id, seq)})


# The run's derived state as each backend keeps it: names lists, texts, numbers.
NAME_LISTS = ("approved_by", "on_behalf_of", "approvers")


def set_run_state(storage: Backend, run_id: int, **state: object) -> None:
    """Set derived state of the run, as the storage keeps it: `approved_by`,
    `on_behalf_of` (lists, the current step's approvals and whom each was for),
    `approvers` (a list: everyone who approved a step of the round), `status`
    (a text) and `round` (a number)."""
    assert set(state) <= {*NAME_LISTS, "status", "round"}
    if isinstance(storage, SQLiteStorage):
        with _sqlite(storage) as conn:
            for column, value in state.items():
                stored = json.dumps(value) if column in NAME_LISTS else value
                conn.execute(
                    f"UPDATE workflow_runs SET {column} = ? WHERE id = ?", (stored, run_id)
                )
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    values = {f":{name}": _attribute(value) for name, value in state.items()}
    storage.client.update_item(
        TableName=storage.table,
        Key={"PK": {"S": f"RUN#{run_id}"}, "SK": {"S": "#RUN"}},
        UpdateExpression="SET " + ", ".join(f"#{name} = :{name}" for name in state),
        ExpressionAttributeNames={f"#{name}": name for name in state},
        ExpressionAttributeValues=values,
    )


def _attribute(value: object) -> dict[str, object]:
    if isinstance(value, list):
        return {"L": [{"S": item} for item in value]}
    if isinstance(value, int):
        return {"N": str(value)}
    return {"S": str(value)}


def remove_head(storage: Backend, run_id: int) -> None:
    """Remove the run's stored head (head_hash)."""
    if isinstance(storage, SQLiteStorage):
        with _sqlite(storage) as conn:
            conn.execute("UPDATE workflow_runs SET head_hash = NULL WHERE id = ?", (run_id,))
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    storage.client.update_item(
        TableName=storage.table,
        Key={"PK": {"S": f"RUN#{run_id}"}, "SK": {"S": "#RUN"}},
        UpdateExpression="REMOVE head_hash",
    )


def edit_input(storage: Backend, run_id: int, data: dict[str, object]) -> None:
    """Set the run's stored input (what the run is about) to `data`."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if isinstance(storage, SQLiteStorage):
        with _sqlite(storage) as conn:
            conn.execute("UPDATE workflow_runs SET input = ? WHERE id = ?", (text, run_id))
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    storage.client.update_item(
        TableName=storage.table,
        Key={"PK": {"S": keys.run_pk(run_id)}, "SK": {"S": keys.RUN_SK}},
        UpdateExpression="SET #input = :value",
        ExpressionAttributeNames={"#input": "input"},
        ExpressionAttributeValues={":value": {"S": text}},
    )


def edit_version_step(
    storage: Backend, workflow_id: int, version: int, step_order: int, **rule: object
) -> None:
    """Set a rule of a stored version's step: `approvers` (a list of principals)
    or `when` (a condition): on SQLite its row of workflow_steps, on DynamoDB
    its entry in the version's item (VERSION#<n>), which decisions and the
    audit read."""
    assert set(rule) <= {"approvers", "when"}
    texts = {name: json.dumps(value) for name, value in rule.items()}
    if isinstance(storage, SQLiteStorage):
        columns = {"approvers": "approvers", "when": "when_condition"}
        with _sqlite(storage) as conn:
            for name, text in texts.items():
                changed = conn.execute(
                    f"UPDATE workflow_steps SET {columns[name]} = ? "
                    "WHERE workflow_id = ? AND version = ? AND step_order = ?",
                    (text, workflow_id, version, step_order),
                ).rowcount
                assert changed == 1
        return
    assert isinstance(storage, dynamodb.DynamoDBStorage)
    key = {"PK": {"S": keys.workflow_pk(workflow_id)}, "SK": {"S": keys.version_sk(version)}}
    item = storage.client.get_item(TableName=storage.table, Key=key)["Item"]
    orders = [int(entry["M"]["step_order"]["N"]) for entry in item["steps"]["L"]]
    at = orders.index(step_order)
    values = {
        f":{name}": _attribute(value) if name == "approvers" else {"S": texts[name]}
        for name, value in rule.items()
    }
    storage.client.update_item(
        TableName=storage.table,
        Key=key,
        UpdateExpression="SET " + ", ".join(f"steps[{at}].#{name} = :{name}" for name in rule),
        ExpressionAttributeNames={f"#{name}": name for name in rule},
        ExpressionAttributeValues=values,
    )
