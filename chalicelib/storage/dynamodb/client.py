"""DynamoDB's request layer: the client, its retries, and what a refusal means.

Every request of the adapter goes through `Requests`: throttling, server
errors and connection faults are botocore's to retry (standard mode,
MAX_ATTEMPTS); a write that meets a transaction in flight is retried here with
jittered backoff; a transaction's cancellation reasons come back to the
caller, which knows what each of its conditions guarded; anything else is a
503 whose log line says what to fix (chalicelib/storage/failures.py).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional, TypeVar

from chalicelib.domain import errors
from chalicelib.storage.dynamodb.keys import Item
from chalicelib.storage.dynamodb.schema import DUE_AT, DUE_INDEX, DUE_KEY, INDEX_KEYS
from chalicelib.storage.failures import unavailable

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError
    from mypy_boto3_dynamodb import DynamoDBClient

Read = TypeVar("Read")

# DynamoDB's limit of items per TransactWriteItems, and of keys per BatchGetItem.
MAX_TRANSACTION_ITEMS = 100
MAX_BATCH_KEYS = 100
# A page's BatchGetItem, retried while DynamoDB leaves keys unprocessed.
BATCH_GET_ATTEMPTS = 6
# Threads that Query the partitions of a page (a run list's, an inbox's, the deadlines') at once.
MAX_PARALLEL_QUERIES = 16
# Attempts per request, the first included, under botocore's standard retry
# mode (throttling, 5xx, connection errors): four keep the worst-case backoff
# far inside API Gateway's 29 s limit.
MAX_ATTEMPTS = 4
# Lost races on a transaction (TransactionConflict) are retried this often.
CONFLICT_RETRIES = 5


class TransactionConflict(Exception):
    """A write met another transaction on the same item; DynamoDB wrote nothing."""


class ItemTooLarge(errors.Conflict):
    """DynamoDB refused a write that would grow an item past 400 KB."""


def back_off(attempt: int) -> None:
    """Wait before retry `attempt` (from 0): jittered, doubling from 20 ms."""
    time.sleep(random.uniform(0, 0.02 * 2**attempt))


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


class Requests:
    """The requests of one table, sent through one client (thread-safe)."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self.client = client
        self.table = table
        # The threads that Query a list's shards at once (made at the first page).
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pool_lock = threading.Lock()

    def list_page(
        self, index: str, pk: str, after: Optional[int], limit: int
    ) -> tuple[list[Item], bool]:
        """One Query of `index`: up to `limit` items of partition `pk` past id
        `after`, by id, and whether any follow."""
        page = self.query_index(index, pk, after, limit + 1, newest_first=False)
        items: list[Item] = page["Items"]
        if len(items) > limit:
            return items[:limit], True
        if "LastEvaluatedKey" in page and len(items) > 1:
            # Stopped at DynamoDB's 1 MB per Query, not at our Limit: the last
            # item read proves that one follows, so return the ones before it.
            return items[:-1], True
        return items, "LastEvaluatedKey" in page and bool(items)

    def query_index(
        self, index: str, pk: str, past: Optional[int], limit: int, newest_first: bool
    ) -> Any:
        """One Query of partition `pk` of `index`: up to `limit` entries by id,
        past id `past` (below it newest first, above it otherwise)."""
        condition = "#pk = :pk"
        names = {"#pk": INDEX_KEYS[index]}
        values: Item = {":pk": s(pk)}
        if past is not None:
            condition += f" AND #id {'<' if newest_first else '>'} :past"
            names["#id"] = "id"
            values[":past"] = n(past)
        return self.call(
            "query",
            TableName=self.table,
            IndexName=index,
            KeyConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ScanIndexForward=not newest_first,
            Limit=limit,
        )

    def call(self, operation: str, **params: Any) -> Any:
        """The client's `operation`; a single-item write that collides with a
        transaction in flight (TransactionConflictException, which botocore
        does not retry) is retried with jittered backoff, then answers 503."""
        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                return self.send(operation, **params)
            except TransactionConflict as exc:
                if attempt == CONFLICT_RETRIES:
                    raise unavailable(
                        f"DynamoDB {operation} on table {self.table!r} met a transaction in "
                        f"flight {CONFLICT_RETRIES + 1} times (TransactionConflictException)",
                        transient=True,
                    ) from exc
                back_off(attempt)
        raise AssertionError("unreachable")

    def send(self, operation: str, **params: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, operation)(**params)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                raise
            if code == "TransactionConflictException":
                raise TransactionConflict() from exc
            if code == "ValidationException" and "size" in exc.response["Error"].get("Message", ""):
                raise ItemTooLarge("The item would exceed DynamoDB's 400 KB") from exc
            raise refused(self.client, self.table, exc) from exc
        except BotoCoreError as exc:
            raise not_answered(self.client, self.table, operation, exc) from exc

    def query_partition(self, pk: str, sk_prefix: str = "") -> Iterator[Item]:
        """Every item of partition `pk` (whose sort key starts with `sk_prefix`)."""
        params: dict[str, Any] = {
            "TableName": self.table,
            "ConsistentRead": True,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": s(pk)},
        }
        if sk_prefix:
            params["KeyConditionExpression"] += " AND begins_with(SK, :prefix)"
            params["ExpressionAttributeValues"][":prefix"] = s(sk_prefix)
        return self.query_all(params)

    def query_after(self, pk: str, after_sk: Optional[str], limit: int) -> tuple[list[Item], bool]:
        """One consistent Query: up to `limit` items of partition `pk` whose sort
        key follows `after_sk` (None: from the first), and whether it stopped
        before the partition's end."""
        condition = "PK = :pk"
        values: Item = {":pk": s(pk)}
        if after_sk is not None:
            condition += " AND SK > :after"
            values[":after"] = s(after_sk)
        page = self.call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            Limit=limit,
        )
        return page["Items"], "LastEvaluatedKey" in page

    def query_between(
        self, pk: str, first_sk: str, last_sk: str, limit: int
    ) -> tuple[list[Item], bool]:
        """One consistent Query: up to `limit` items of partition `pk` whose sort
        key is from `first_sk` to `last_sk`, and whether more follow (one more
        read, or DynamoDB's 1 MB per Query reached before it)."""
        page = self.call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="PK = :pk AND SK BETWEEN :first AND :last",
            ExpressionAttributeValues={":pk": s(pk), ":first": s(first_sk), ":last": s(last_sk)},
            Limit=limit + 1,
        )
        found: list[Item] = page["Items"]
        return found[:limit], len(found) > limit or "LastEvaluatedKey" in page

    def query_all(self, params: dict[str, Any]) -> Iterator[Item]:
        """Every item the Query `params` finds, one page after the other, as read."""
        while True:
            page = self.call("query", **params)
            yield from page["Items"]
            if "LastEvaluatedKey" not in page:
                return
            params = {**params, "ExclusiveStartKey": page["LastEvaluatedKey"]}

    def put_new(self, item: Item) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }

    def transact(self, items: list[dict[str, Any]], raced: bool = False) -> list[str]:
        """Write all items or none; the codes of failed conditions, [] on success.

        raced: the caller's refusal is a lost race that its engine reads again
        and decides again (a run's change): transactions in flight on its
        items past the retries here are answered as such a refusal, with
        "TransactionConflict" among the codes, rather than as Unavailable."""
        from botocore.exceptions import ClientError

        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                self.call("transact_write_items", TransactItems=items)
                return []
            except ClientError as exc:
                reasons = [
                    reason.get("Code", "None")
                    for reason in exc.response.get("CancellationReasons", [])
                ]
                if "ConditionalCheckFailed" in reasons:
                    return reasons
                if "ValidationError" in reasons:
                    # Our requests are well formed: what the transaction's
                    # changes can break is an item's 400 KB limit.
                    raise ItemTooLarge("The item would exceed DynamoDB's 400 KB") from exc
                if "TransactionConflict" in reasons:
                    if attempt < CONFLICT_RETRIES:
                        back_off(attempt)
                        continue
                    if raced:
                        return reasons
                raise unavailable(
                    f"DynamoDB refused a transaction on table {self.table!r} "
                    f"({', '.join(reasons) or exc.response['Error']['Code']})",
                    transient=True,
                ) from exc
        raise AssertionError("unreachable")

    def read_item(self, pk: dict[str, str], sk: dict[str, str]) -> Optional[Item]:
        """One item by its key, read consistently; a Query, as the role may only
        Query (no GetItem grant)."""
        items: list[Item] = self.call(
            "query",
            TableName=self.table,
            ConsistentRead=True,
            KeyConditionExpression="PK = :pk AND SK = :sk",
            ExpressionAttributeValues={":pk": pk, ":sk": sk},
        )["Items"]
        return items[0] if items else None

    def in_parallel(self, call: Callable[[str], Read], args: Sequence[str]) -> list[Read]:
        """call(arg) for each of `args`, at once on a pool of threads (a page's
        Queries, one per shard: their latencies overlap instead of adding up)."""
        if len(args) < 2:
            return [call(arg) for arg in args]
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            with self._pool_lock:
                if self._pool is None:
                    # Threads start as calls need them, up to the most any
                    # page sends at once: not sized by the first caller's count.
                    self._pool = ThreadPoolExecutor(
                        max_workers=MAX_PARALLEL_QUERIES, thread_name_prefix="shards"
                    )
        return list(self._pool.map(call, args))

    def due(self, kind: str, now: str, page: int) -> Iterator[Item]:
        """The keys of the items of due index partition `kind` due by `now`,
        soonest first, `page` per Query."""
        return self.query_all(
            {
                "TableName": self.table,
                "IndexName": DUE_INDEX,
                "KeyConditionExpression": "#kind = :kind AND #at <= :now",
                "ExpressionAttributeNames": {"#kind": DUE_KEY, "#at": DUE_AT},
                "ExpressionAttributeValues": {":kind": s(kind), ":now": s(now)},
                "Limit": page,
            }
        )

    def get_items(self, keys: Sequence[Item]) -> list[Item]:
        """The items of `keys` (PK and SK), read consistently, in the keys' order
        (those that do not exist left out): one BatchGetItem per 100 keys, again
        for any DynamoDB leaves unprocessed."""
        found: dict[tuple[str, str], Item] = {}
        for start in range(0, len(keys), MAX_BATCH_KEYS):
            pending = list(keys[start : start + MAX_BATCH_KEYS])
            for attempt in range(BATCH_GET_ATTEMPTS):
                answer = self.call(
                    "batch_get_item",
                    RequestItems={self.table: {"Keys": pending, "ConsistentRead": True}},
                )
                for item in answer["Responses"].get(self.table, []):
                    found[key_of(item)] = item
                pending = answer.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
                if not pending:
                    break
                back_off(attempt)
            else:
                raise unavailable(
                    f"DynamoDB left keys of a BatchGetItem on table {self.table!r} unprocessed "
                    f"{BATCH_GET_ATTEMPTS} times",
                    transient=True,
                )
        return [found[key_of(key)] for key in keys if key_of(key) in found]


def key_of(item: Item) -> tuple[str, str]:
    return item["PK"]["S"], item["SK"]["S"]


def create_client(session: Optional[boto3.session.Session] = None) -> DynamoDBClient:
    """A DynamoDB client configured the boto3 way (region, profile, endpoint);
    Unavailable, with the log saying what to set, when that configuration is wrong.

    A new session parses botocore's service models (0.3 to 0.6 s), a client from
    an existing one takes about 0.03 s: callers that need several clients pass
    one session. Clients are thread-safe; sessions are not."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    config = Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=3,
        read_timeout=10,
        tcp_keepalive=True,
    )
    try:
        session = session or boto3.session.Session()
        # Lambda and some tools set only AWS_REGION, which botocore does not read.
        region = session.region_name or os.environ.get("AWS_REGION")
        if not region:
            raise unavailable(
                "No AWS region is configured for DynamoDB: set AWS_REGION or "
                "AWS_DEFAULT_REGION (or a region in the AWS_PROFILE's config)"
            )
        return session.client("dynamodb", region_name=region, config=config)
    except (BotoCoreError, ValueError) as exc:
        # AWS_PROFILE naming no profile (ProfileNotFound), an
        # AWS_ENDPOINT_URL_DYNAMODB that is no URL (ValueError), ...
        raise unavailable(
            f"The DynamoDB client cannot be created: {exc}. Check AWS_PROFILE, "
            "AWS_REGION and AWS_ENDPOINT_URL_DYNAMODB"
        ) from exc


def table_name() -> str:
    name = os.environ.get("WORKFLOW_TABLE", "").strip()
    if not name:
        raise unavailable(
            "WORKFLOW_TABLE is not set: set it to the DynamoDB table's name "
            "(`make dynamodb-table` creates one)"
        )
    return name


# What the log tells the operator to do about a request DynamoDB refused, by
# error code; any other code is a passing fault (throttling, a server error)
# that outlasted the retries.
_CREDENTIALS_FIX = (
    "check the AWS credentials and region (AWS_PROFILE, AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION)"
)
_FIXES = {
    "ResourceNotFoundException": (
        "the table does not exist there: create it with `make dynamodb-table`, "
        "or set WORKFLOW_TABLE to a table that exists"
    ),
    "AccessDeniedException": (
        "the credentials may not do this: grant the actions that docs/deploy.md lists"
    ),
    "UnrecognizedClientException": _CREDENTIALS_FIX,
    "InvalidSignatureException": _CREDENTIALS_FIX,
    "IncompleteSignature": _CREDENTIALS_FIX,
    "MissingAuthenticationToken": _CREDENTIALS_FIX,
    "ExpiredTokenException": _CREDENTIALS_FIX,
}


def not_answered(
    client: DynamoDBClient, table: str, operation: str, exc: BotoCoreError
) -> errors.Unavailable:
    """The 503 for a request that got no answer from DynamoDB, logged with why."""
    from botocore.exceptions import NoCredentialsError

    if isinstance(exc, NoCredentialsError):
        return unavailable(
            f"DynamoDB {operation} on table {table!r} was not sent: no AWS credentials "
            "were found. Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    # Unreachable after the retries, a timeout, a partial set of credentials, ...
    return unavailable(
        f"DynamoDB {operation} on table {table!r} at {client.meta.endpoint_url} failed: {exc}",
        transient=True,
    )


def refused(client: DynamoDBClient, table: str, exc: ClientError) -> errors.Unavailable:
    """The 503 for a request DynamoDB refused, logged with its code and what to do."""
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    fix = _FIXES.get(code)
    return unavailable(
        f"DynamoDB refused {exc.operation_name} on table {table!r} at "
        f"{client.meta.endpoint_url} ({code}: {error.get('Message', '')}): "
        + (fix or "retries ran out; retry later, or raise the table's capacity if it persists"),
        transient=fix is None,
    )
