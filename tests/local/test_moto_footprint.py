"""`make run-dynamodb`'s moto has a bounded footprint and answers as moto does.

- `--lean` (scripts/moto_server.py) answers every transaction as stock moto
  does, failed ones rolled back alike, stream records included, and every
  Query page alike: the same operations on both, in processes of their own,
  leave the same answers and the same items.
- With it, a table that grows keeps transactions cheap and moto's memory
  small (stock moto copies the whole table per transaction item: 600 four-item
  transactions took it to 2.3 GB).
- Past MOTO_MAX_MB, writes are refused and reads still answer: the API
  answers 503 and logs moto's reason.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib.storage.dynamodb import schema as dynamodb_schema
from tests.support.http import request
from tests.support.processes import (
    PROJECT_DIR,
    command_env,
    free_port,
    own_lines,
    started,
    wait_listening,
)

TABLE = "footprint"


@contextlib.contextmanager
def moto_process(*flags: str) -> Iterator[tuple[subprocess.Popen[str], Any]]:
    """scripts/moto_server.py in a process of its own, and a client of it."""
    import boto3

    process = subprocess.Popen(
        [sys.executable, "scripts/moto_server.py", "--port", "0", *flags],
        cwd=PROJECT_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        client = boto3.client(
            "dynamodb",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        yield process, client
    finally:
        process.terminate()
        process.wait(10)


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def _put(pk: str, sk: str, condition: str | None = None, **attributes: str) -> dict[str, Any]:
    item = {**_key(pk, sk), **{name: {"S": value} for name, value in attributes.items()}}
    put: dict[str, Any] = {"TableName": TABLE, "Item": item}
    if condition:
        put["ConditionExpression"] = condition
    return {"Put": put}


NEW = "attribute_not_exists(PK)"
# Each a transaction; the ones after the first two fail part-way, after items
# before the failing one were written.
TRANSACTIONS: list[list[dict[str, Any]]] = [
    [_put("A", "1", v="a"), _put("B", "1", v="b"), _put("B", "2", v="b2")],
    [
        {
            "Update": {
                "TableName": TABLE,
                "Key": _key("C", "1"),
                "UpdateExpression": "ADD n :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
        _put("D", "1", v="d"),
    ],
    # An update of an existing item, a new item, then a condition that fails.
    [
        {
            "Update": {
                "TableName": TABLE,
                "Key": _key("A", "1"),
                "UpdateExpression": "SET v = :x, due_pk = :due",
                "ExpressionAttributeValues": {":x": {"S": "changed"}, ":due": {"S": "DUE"}},
            }
        },
        _put("E", "1", v="e"),
        _put("B", "1", NEW, v="again"),
    ],
    # A delete, a new item, then a condition check that fails.
    [
        {"Delete": {"TableName": TABLE, "Key": _key("B", "2")}},
        _put("F", "1", v="f"),
        {
            "ConditionCheck": {
                "TableName": TABLE,
                "Key": _key("D", "1"),
                "ConditionExpression": "v = :no",
                "ExpressionAttributeValues": {":no": {"S": "no"}},
            }
        },
    ],
    # The same item twice.
    [_put("G", "1", v="g"), _put("A", "1", v="x"), _put("A", "1", v="y")],
    # An item without its sort key.
    [_put("H", "1", v="h"), {"Put": {"TableName": TABLE, "Item": {"PK": {"S": "I"}}}}],
    [_put("J", "1", NEW, v="j"), _put("A", "1", v="last")],
]


def _queries(client: Any) -> list[Any]:
    """Queries of the table and of its indexes, page by page, after items
    that share index keys (ordered by the table's keys, then)."""
    for n in range(30):
        item = {
            **_key(f"W#{n % 3}", f"S#{n:02d}"),
            "all_pk": {"S": "ALL"},
            "id": {"N": str(n % 7)},
        }
        if n % 2:
            item |= {"due_pk": {"S": "DUE"}, "due_at": {"S": f"2026-12-0{n % 4 + 1}"}}
        client.put_item(TableName=TABLE, Item=item)
    value = {":p": {"S": "W#1"}, ":s": {"S": "S#1"}, ":a": {"S": "ALL"}, ":d": {"S": "DUE"}}
    queries: list[dict[str, Any]] = [
        {"KeyConditionExpression": "PK = :p"},
        {"KeyConditionExpression": "PK = :p AND begins_with(SK, :s)", "ScanIndexForward": False},
        {"IndexName": "all", "KeyConditionExpression": "all_pk = :a"},
        {
            "IndexName": "all",
            "KeyConditionExpression": "all_pk = :a AND id BETWEEN :lo AND :hi",
            "ScanIndexForward": False,
            "values": {":lo": {"N": "2"}, ":hi": {"N": "4"}},
        },
        {"IndexName": "due", "KeyConditionExpression": "due_pk = :d"},
    ]
    pages = []
    for query in queries:
        extra = query.pop("values", {})
        names = {name for name in value | extra if name in query["KeyConditionExpression"]}
        values = {name: (value | extra)[name] for name in names}
        start: dict[str, Any] = {}
        while True:
            page = client.query(
                TableName=TABLE, Limit=4, ExpressionAttributeValues=values, **query, **start
            )
            pages.append((page["Items"], page.get("LastEvaluatedKey")))
            if "LastEvaluatedKey" not in page:
                break
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
    return pages


def _replay(client: Any) -> list[Any]:
    """Every transaction's outcome, then every item, then the stream's records,
    then the pages of some queries."""
    outcomes: list[Any] = []
    for items in TRANSACTIONS:
        try:
            client.transact_write_items(TransactItems=items)
            outcomes.append("ok")
        except client.exceptions.ClientError as exc:
            error = exc.response["Error"]
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            outcomes.append((error["Code"], reasons))
    items = client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    outcomes.append(sorted(items, key=lambda item: (item["PK"]["S"], item["SK"]["S"])))
    outcomes.append(_stream_records(client))
    outcomes.append(_queries(client))
    return outcomes


def _stream_records(client: Any) -> list[Any]:
    import boto3

    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    streams = boto3.client(
        "dynamodbstreams",
        endpoint_url=client.meta.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    return [(r["eventName"], r["dynamodb"]["Keys"], r["dynamodb"].get("NewImage")) for r in records]


def test_lean_moto_answers_every_transaction_and_query_as_moto_does() -> None:
    replays = []
    for flags in ((), ("--lean",)):
        with moto_process(*flags) as (_, client):
            # With the deployed table's stream: its records are rolled back too.
            client.create_table(TableName=TABLE, **dynamodb_schema.TABLE_KEYS)
            replays.append(_replay(client))
    stock, lean = replays
    assert lean == stock
    assert len(stock[-1]) > 10  # the queries' pages
    outcomes = stock[: len(TRANSACTIONS)]
    assert outcomes[:2] == ["ok", "ok"] and outcomes[-1] == "ok"
    assert all(outcome != "ok" for outcome in outcomes[2:-1])  # the failures were real


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_lean_moto_keeps_transactions_cheap_and_its_memory_small_as_the_table_grows() -> None:
    with moto_process("--lean") as (process, client):
        keys = {k: v for k, v in dynamodb_schema.TABLE_KEYS.items() if k != "StreamSpecification"}
        client.create_table(TableName=TABLE, **keys)
        pad = "x" * 300
        for n in range(400):
            client.transact_write_items(
                TransactItems=[
                    _put(f"RUN#{n}", "RUN", NEW, runs_pk=f"RUNS#{n % 4}", pad=pad),
                    {
                        "Update": {
                            "TableName": TABLE,
                            "Key": _key("COUNTER", "RUNS"),
                            "UpdateExpression": "ADD n :one",
                            "ExpressionAttributeValues": {":one": {"N": "1"}},
                        }
                    },
                    _put(f"RUN#{n}", "EVENT#1", due_pk="DELIVERY", due_at="2026", pad=pad),
                    _put(f"RUN#{n}", "ACTION#1", pad=pad),
                ]
            )
        status = Path(f"/proc/{process.pid}/status").read_text()
        resident_mb = int(status.split("VmRSS:")[1].split()[0]) / 1024
    # Stock moto: about 1 GB by then; the lean one stays near its start (~85 MB).
    assert resident_mb < 250, resident_mb


def test_past_moto_max_mb_writes_answer_503_with_the_reason_and_reads_still_answer(
    tmp_path: Path,
) -> None:
    port, moto_port = free_port(), free_port()
    command = ["make", "--no-print-directory", "run-dynamodb", f"PORT={port}"]
    command += [f"MOTO_PORT={moto_port}", "MOTO_MAX_MB=1"]
    env = command_env(tmp_path, MOTO_LOG=str(tmp_path / "moto.log"))
    with started(command, env, tmp_path) as server:
        wait_listening(port, server, 60)
        refused = request(port, "POST", "/workflows", {"name": "Too much", "steps": ["a"]})
        assert refused.status == 503
        assert refused.json() == {"error": "The storage is not available; retry later"}
        assert request(port, "GET", "/workflows").status == 200
    (line,) = [
        line for line in own_lines((tmp_path / "stderr").read_text()) if "MOTO_MAX_MB" in line
    ]
    assert "ItemCollectionSizeLimitExceededException" in line
    assert "over its limit of 1 MB (MOTO_MAX_MB)" in line
