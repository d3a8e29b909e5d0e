"""The audit chain recomputed from its definition in docs/audit.md, with
hashlib and the rfc8785 package (a well-kept implementation of RFC 8785, the
canonical form the definition names) only: never through chalicelib/domain/
audit.py or its canonical_json, which the tests check against it."""

from __future__ import annotations

import hashlib
from typing import Any, Optional

import rfc8785


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(value: Any) -> str:
    return rfc8785.dumps(value).decode("utf-8")


def genesis_of(run: dict[str, Any]) -> str:
    """The genesis hash of a run in the API's shape (its input digested where
    it is not empty), or of an audit answer's genesis (its input_digest given)."""
    record = {
        "run_id": run.get("run_id", run.get("id")),
        "workflow_id": run["workflow_id"],
        "title": run["title"],
        "requested_by": run["requested_by"],
        "created_at": run["created_at"],
    }
    if run.get("input"):
        record["input_digest"] = sha256(canonical(run["input"]))
    elif "input_digest" in run:
        record["input_digest"] = run["input_digest"]
    if "run_id" in run and "workflow_version" in run:  # an answer's, after version 1
        record["workflow_version"] = run["workflow_version"]
    if run.get("definition_digest") is not None:  # a run started since definitions are bound
        record["definition_digest"] = run["definition_digest"]
        record["definition_steps"] = run["definition_steps"]
    return sha256(canonical(record))


def link(prev: str, action: dict[str, Any], seq: int) -> str:
    """The hash of an action in the API's shape at position `seq`, chained to `prev`."""
    entry = {
        "run_id": action["run_id"],
        "seq": seq,
        "step_id": action["step_id"],
        "step_name": action["step_name"],
        "action": action["action"],
        "actor": action["actor"],
        "comment": action["comment"],
        "created_at": action["created_at"],
    }
    # Hashed only where an action has them (the definition's optional fields).
    if action.get("on_behalf_of") is not None:
        entry["on_behalf_of"] = action["on_behalf_of"]
    if action.get("round", 1) > 1:
        entry["round"] = action["round"]
    if action.get("input_digest") is not None:
        entry["input_digest"] = action["input_digest"]
    if action.get("channel", "api") != "api":
        entry["channel"] = action["channel"]
    # A reassign's, a move's; the definitions bound on arriving at a step, or by a move.
    for name in (
        "approvers",
        "workflow_version",
        "next_step_digest",
        "definition_digest",
        "definition_steps",
    ):
        if action.get(name) is not None:
            entry[name] = action[name]
    return sha256(prev + "\n" + canonical(entry))


def hashes_of(run: dict[str, Any]) -> list[str]:
    """The genesis and each action's hash, as the definition gives them for the
    run's values (a run in the API's shape, its actions oldest first)."""
    hashes = [genesis_of(run)]
    for seq, action in enumerate(run["actions"], start=1):
        hashes.append(link(hashes[-1], action, seq))
    return hashes


def assert_chained(run: dict[str, Any]) -> None:
    """Every hash the run carries is the one the definition gives."""
    genesis, *hashes = hashes_of(run)
    assert [action["hash"] for action in run["actions"]] == hashes
    assert run["head_hash"] == (hashes or [genesis])[-1]


def first_broken(audit: dict[str, Any]) -> Optional[int]:
    """The first seq of an audit answer whose stored hash is not the one the
    definition gives for its values and the stored hash before it (None if none)."""
    prev = genesis_of(audit["genesis"])
    for seq, entry in enumerate(audit["entries"], start=1):
        if entry["hash"] != link(prev, entry, seq):
            return seq
        prev = entry["hash"]
    return None


# The members of a version's answer that are not its definition (docs/audit.md).
NOT_DEFINITION = ("id", "name", "created_at", "version", "version_created_at", "retired")


def _setting(record: dict[str, Any]) -> dict[str, Any]:
    """The members that set something: null, false, [] and {} left out."""
    return {k: v for k, v in record.items() if v is not False and v not in (None, [], {})}


def step_digest(step: dict[str, Any]) -> str:
    """The digest of a step as a version's answer shows it."""
    return sha256(canonical(_setting(step)))


def definition_digest(version: dict[str, Any], steps: int) -> str:
    """The digest of a version's answer (GET /workflows/{id}/versions/{n}) as a
    definition, with its first `steps` steps."""
    definition = _setting({k: v for k, v in version.items() if k not in NOT_DEFINITION})
    definition["steps"] = [_setting(step) for step in version["steps"][:steps]]
    return sha256(canonical(definition))
