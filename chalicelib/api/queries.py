"""Query strings, turned into typed values for the engine (path ids: paths.py).

Every function takes what the client sent (the query parameters) and returns
plain values, or raises InvalidInput. The names a query carries (the inbox's and
the permissions' actor and groups, in `none` mode) follow the rules of names
in bodies (chalicelib/api/validation.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.api.validation import MAX_GROUPS, delegate_name, principal_name
from chalicelib.domain import errors
from chalicelib.domain.models import GROUP_PREFIX, MAX_ID
from chalicelib.domain.record import Record

if TYPE_CHECKING:
    from chalicelib.domain.lifecycle import RunStatus

DEFAULT_LIMIT = 50
MAX_LIMIT = 100


class InboxQuery(Record):
    # Asserted in `none` mode; None where the token says who calls.
    actor: Optional[str]
    groups: frozenset[str]
    limit: int
    cursor: Optional[str]


class CallerQuery(Record):
    # Asserted in `none` mode; None where the token says who calls.
    actor: Optional[str]
    groups: frozenset[str]
    # A delegator to ask about (GET /runs/{id}/permissions).
    on_behalf_of: Optional[str] = None


class DelegationQuery(Record):
    delegator: Optional[str]
    delegate: Optional[str]
    active_at: Optional[str]
    limit: int
    cursor: Optional[str]


class WorkflowQuery(Record):
    limit: int
    cursor: Optional[str]
    # GET /workflows: retired ones only (True), or not retired (False); None: all.
    retired: Optional[bool] = None


class RunQuery(Record):
    workflow_id: Optional[int]
    status: Optional[RunStatus]
    limit: int
    cursor: Optional[str]


def workflow_query(query: Mapping[str, Any]) -> WorkflowQuery:
    """GET /workflows: limit, cursor."""
    params = _query(query, ("limit", "cursor"))
    return WorkflowQuery(_limit(params), params.get("cursor"))


def workflow_list_query(query: Mapping[str, Any]) -> WorkflowQuery:
    """GET /workflows: limit, cursor, retired ("true" or "false")."""
    params = _query(query, ("limit", "cursor", "retired"))
    retired = params.get("retired")
    if retired not in (None, "true", "false"):
        raise errors.InvalidInput("'retired' must be true or false")
    flag = None if retired is None else retired == "true"
    return WorkflowQuery(_limit(params), params.get("cursor"), flag)


def run_query(query: Mapping[str, Any]) -> RunQuery:
    """GET /runs: workflow_id, status, limit, cursor; a workflow_id beyond every
    id is MAX_ID + 1 (it names no workflow, so its list is empty)."""
    params = _query(query, ("workflow_id", "status", "limit", "cursor"))
    workflow_id = _positive(params, "workflow_id")
    status = params.get("status")
    return RunQuery(workflow_id, _status(status), _limit(params), params.get("cursor"))


def _status(given: Optional[str]) -> Optional[RunStatus]:
    """The run status `given` names (None: none given); 400 for another text."""
    if given is None:
        return None
    from chalicelib.domain.lifecycle import RunStatus  # only a list filtered by status

    try:
        return RunStatus(given)
    except ValueError:
        raise errors.InvalidInput(f"'status' must be one of {', '.join(RunStatus)}") from None


def event_query(query: Mapping[str, Any]) -> WorkflowQuery:
    """GET /runs/{id}/events: limit, cursor, as GET /workflows takes them."""
    return workflow_query(query)


def inbox_query(query: Mapping[str, Any], verified: bool) -> InboxQuery:
    """GET /inbox: limit, cursor; in `none` mode (not `verified`) also actor
    (required) and group (repeated, one per group)."""
    if verified:
        params = _query(query, ("limit", "cursor"))
        return InboxQuery(None, frozenset(), _limit(params), params.get("cursor"))
    params = _query(query, ("actor", "group", "limit", "cursor"), repeatable=("group",))
    actor, groups = _asserted_caller(params, query)
    return InboxQuery(actor, groups, _limit(params), params.get("cursor"))


def caller_query(
    query: Mapping[str, Any], verified: bool, about: tuple[str, ...] = ()
) -> CallerQuery:
    """GET /runs/{id}/permissions (`about`: on_behalf_of), DELETE
    /delegations/{id}: nothing where the token says who calls; in `none` mode
    actor (required) and group (repeated), as the inbox takes them."""
    if verified:
        params = _query(query, about)
        return CallerQuery(None, frozenset(), _named(params, "on_behalf_of"))
    params = _query(query, ("actor", "group", *about), repeatable=("group",))
    return CallerQuery(*_asserted_caller(params, query), _named(params, "on_behalf_of"))


def delegation_query(query: Mapping[str, Any]) -> DelegationQuery:
    """GET /delegations: delegator, delegate, active_at, limit, cursor."""
    params = _query(query, ("delegator", "delegate", "active_at", "limit", "cursor"))
    return DelegationQuery(
        _named(params, "delegator"),
        delegate_name(params, "delegate") if params.get("delegate") is not None else None,
        params.get("active_at"),
        _limit(params),
        params.get("cursor"),
    )


class StatsQuery(Record):
    # Service timestamps (UTC, milliseconds); None: the default window.
    start: Optional[str]
    end: Optional[str]
    # Only the runs started on this version of the workflow (None: every version's).
    version: Optional[int] = None


def stats_query(query: Mapping[str, Any]) -> StatsQuery:
    """GET /workflows/{id}/stats: from, to (RFC 3339 date-times with offsets),
    version (a positive integer)."""
    from chalicelib.domain.delegations import normalised

    params = _query(query, ("from", "to", "version"))
    given = {name: normalised(params[name], name) for name in ("from", "to") if name in params}
    return StatsQuery(given.get("from"), given.get("to"), _positive(params, "version"))


def _named(params: Mapping[str, str], name: str) -> Optional[str]:
    """A user's name a query names, where it names one."""
    return principal_name(params, name) if params.get(name) is not None else None


def _asserted_caller(
    params: Mapping[str, str], query: Mapping[str, Any]
) -> tuple[str, frozenset[str]]:
    """The actor (required) and the groups a `none` mode query names."""
    if params.get("actor") is None:
        raise errors.InvalidInput("Missing required query parameter 'actor'")
    actor = principal_name(params, "actor")
    named = _repeated(query, "group")
    if len(named) > MAX_GROUPS:
        raise errors.InvalidInput(f"Give at most {MAX_GROUPS} 'group' parameters")
    return actor, frozenset(
        principal_name({"group": group}, "group", GROUP_PREFIX) for group in named
    )


def _query(
    query: Mapping[str, Any], allowed: tuple[str, ...], repeatable: tuple[str, ...] = ()
) -> dict[str, str]:
    """The query parameters, each given once (but those `repeatable`), all of them known."""
    unknown = sorted(set(query) - set(allowed))
    if unknown:
        raise errors.InvalidInput(
            f"Unknown query parameter {unknown[0]!r}; allowed: {', '.join(allowed) or 'none'}"
        )
    params: dict[str, str] = {}
    for name in query:
        values = _repeated(query, name)
        if len(values) != 1 and name not in repeatable:
            raise errors.InvalidInput(f"Give the query parameter {name!r} at most once")
        params[name] = values[0]
    return params


def _repeated(query: Mapping[str, Any], name: str) -> list[str]:
    """Every value of the query parameter `name`, in order."""
    if name not in query:
        return []
    getlist = getattr(query, "getlist", None)  # Chalice's MultiDict keeps repeats
    return list(getlist(name)) if getlist else [query[name]]


def _limit(params: Mapping[str, str]) -> int:
    raw = params.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    limit = _query_integer(raw)
    if limit is None or limit > MAX_LIMIT:
        raise errors.InvalidInput(f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    return limit


def _positive(params: Mapping[str, str], name: str) -> Optional[int]:
    """A positive integer query parameter; above MAX_ID it names nothing."""
    raw = params.get(name)
    if raw is None:
        return None
    value = _query_integer(raw)
    if value is None:
        raise errors.InvalidInput(f"{name!r} must be a positive integer")
    return value


def _query_integer(raw: str) -> Optional[int]:
    """A positive integer: ASCII digits (leading zeros allowed), or a JSON number
    whose value is one (7.0, 7e0), as bodies take it; MAX_ID + 1 for any beyond
    every id; None if `raw` is not one."""
    if raw.isascii() and raw.isdigit():
        digits = raw.lstrip("0")
        if not digits:
            return None
        # No int() of thousands of digits: past 16 it is beyond any id anyway.
        return int(digits) if len(digits) <= 16 else MAX_ID + 1
    return _integral_number(raw)


def _integral_number(raw: str) -> Optional[int]:
    """The positive integer a JSON number spelt with a fraction or exponent
    stands for, exactly; None for any other string."""
    import re
    from decimal import Decimal

    if len(raw) > 40 or not re.fullmatch(
        r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", raw
    ):
        return None
    mantissa, _, exponent = raw.lower().partition("e")
    if exponent and abs(int(exponent)) > 40:
        return MAX_ID + 1 if int(exponent) > 0 and Decimal(mantissa) > 0 else None
    value = Decimal(raw)
    if value <= 0 or value != value.to_integral_value():
        return None
    return int(value) if value <= MAX_ID else MAX_ID + 1
