"""The audit chain: each run's history as a hash chain anyone can verify.

    canonical(x) = the RFC 8785 (JSON Canonicalization Scheme) text of x
    genesis      = sha256(canonical({run_id, workflow_id, title, requested_by, created_at}
                                    + {input_digest} where the run's input is not empty
                                    + {workflow_version} where it started on one after 1))
    input_digest = sha256(canonical(input))
    hash(seq)    = sha256(hash(seq - 1) + "\\n" + canonical({run_id, seq, step_id, step_name,
                                                          action, actor, comment, created_at}))

where hash(0) is the genesis, seq counts a run's actions from 1 in history
order, and sha256 is the lowercase hex digest of the text's UTF-8 bytes. A run
keeps its head_hash: the last action's hash, or the genesis while it has none.
docs/audit.md's definition is the contract; this module is one implementation.

The chain binds the definitions a run runs under: its genesis the digest of
its version's definition as it stood at the start (definition_digest, of its
first definition_steps steps), a move's entry that of the version moved to,
and every entry that brings the run to a step (next_step_digest) that step's.
Each digest is taken of the definition as GET /workflows/{id}/versions/{n}
answers it, so that an auditor holding that answer recomputes it.

Pure: no storage, no HTTP. The transitions (chalicelib/domain/transitions.py)
chain each action they record, `audit_of` recomputes a stored run's chain for
GET /runs/{id}/audit, and `python -m chalicelib.domain.audit verify FILE` checks a
saved answer of that route offline, with nothing but this module. Any action
kind is chained alike: the chain knows fields, not the state machine, which
this module never imports (the state the history leads to is replayed by
chalicelib/domain/replay.py, through the transitions themselves).

hashlib is imported inside the functions that hash: `import app` stays light
(tests/unit/test_cold_start.py).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from chalicelib.domain import shapes
from chalicelib.domain.canonical_json import canonical as _canonical
from chalicelib.domain.models import Action, Decision, Run, RunAudit, Step, Workflow

GENESIS_FIELDS = ("run_id", "workflow_id", "title", "requested_by", "created_at")
# In the genesis of a run whose input is not empty: what binds the chain to it.
INPUT_DIGEST = "input_digest"
# In the genesis of a run started on a version of its workflow after the first.
GENESIS_VERSION = "workflow_version"
# In the genesis of a run started since definitions are bound, and in a move's
# entry: the digest of the version's definition, and how many of its steps it covers.
DEFINITION_DIGEST = "definition_digest"
DEFINITION_STEPS = "definition_steps"
GENESIS_OPTIONAL = (INPUT_DIGEST, GENESIS_VERSION, DEFINITION_DIGEST, DEFINITION_STEPS)
# In the entry of an action that brings the run to a step: that step's digest.
NEXT_STEP_DIGEST = "next_step_digest"
# The members of a version's answer that say which it is and when, not what
# its runs do: left out of its definition's digest.
NOT_DEFINITION = ("id", "name", "created_at", "version", "version_created_at", "retired")
ENTRY_FIELDS = (
    "run_id",
    "seq",
    "step_id",
    "step_name",
    "action",
    "actor",
    "comment",
    "created_at",
)
# In the entry of an action that has them only: whom a delegate decided for, a
# round after the first, a resubmit's new input's digest. Older entries, and
# those of actions without them, are hashed as before. And the channel when
# not the API's, a reassign's new approvers, a move's version; the digests of
# the definitions an entry binds.
OPTIONAL_ENTRY_FIELDS = (
    "on_behalf_of",
    "round",
    "input_digest",
    "channel",
    "approvers",
    "workflow_version",
    NEXT_STEP_DIGEST,
    DEFINITION_DIGEST,
    DEFINITION_STEPS,
)
# The channel an entry of no `channel` came through: every action before
# channels were recorded, and every API call since.
DEFAULT_CHANNEL = "api"
AUDIT_FIELDS = ("run_id", "genesis", "head_hash", "valid", "first_invalid_seq", "entries")
# And what the service alone can check, which needs the workflow: not the offline verifier's.
STATE_ANSWER = ("state_valid", "state_mismatches")


def canonical(value: Any) -> str:
    """The one JSON text of `value` that every verifier hashes: RFC 8785's
    (chalicelib/domain/canonical_json.py)."""
    return _canonical(value)


def sha256_hex(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def genesis_hash(genesis: Mapping[str, Any]) -> str:
    """The hash the chain starts from: of the run's GENESIS_FIELDS (and its
    input_digest, for a run whose input is not empty, its workflow_version,
    for one started on a version after the first, and its definition_digest
    and definition_steps, where it has them), nothing else."""
    optional = (name for name in GENESIS_OPTIONAL if name in genesis)
    fields = (*GENESIS_FIELDS, *optional)
    return sha256_hex(canonical({name: genesis[name] for name in fields}))


def entry_hash(prev: str, entry: Mapping[str, Any]) -> str:
    """The hash of `entry` (its ENTRY_FIELDS, and those of OPTIONAL_ENTRY_FIELDS
    it has, nothing else) chained to `prev`."""
    fields = {name: entry[name] for name in ENTRY_FIELDS}
    fields.update((name, entry[name]) for name in OPTIONAL_ENTRY_FIELDS if name in entry)
    return sha256_hex(prev + "\n" + canonical(fields))


# -- the records of a run --------------------------------------------------------


def genesis_of(run: Run) -> dict[str, Any]:
    genesis = {
        "run_id": run.id,
        "workflow_id": run.workflow_id,
        "title": run.title,
        "requested_by": run.requested_by,
        "created_at": run.created_at,
    }
    digest = run.genesis_input_digest
    if digest is None:
        digest = input_digest(run.input)
    if digest:
        genesis["input_digest"] = digest
    version = run.genesis_version or run.workflow_version
    if version != 1:
        genesis[GENESIS_VERSION] = version
    if run.definition_digest is not None:
        genesis[DEFINITION_DIGEST] = run.definition_digest
        genesis[DEFINITION_STEPS] = run.definition_steps
    return genesis


def input_digest(data: Mapping[str, Any]) -> Optional[str]:
    """The SHA-256 hex of a run's input in its canonical form; None when empty."""
    return sha256_hex(canonical(data)) if data else None


def entry_of(action: Action, seq: int) -> dict[str, Any]:
    entry = {
        "run_id": action.run_id,
        "seq": seq,
        "step_id": action.step_id,
        "step_name": action.step_name,
        "action": action.action,
        "actor": action.actor,
        "comment": action.comment,
        "created_at": action.created_at,
    }
    if action.on_behalf_of is not None:
        entry["on_behalf_of"] = action.on_behalf_of
    if action.round > 1:
        entry["round"] = action.round
    if action.input_digest is not None:
        entry["input_digest"] = action.input_digest
    if action.channel != DEFAULT_CHANNEL:
        entry["channel"] = action.channel
    if action.approvers is not None:
        entry["approvers"] = list(action.approvers)
    if action.workflow_version is not None:
        entry["workflow_version"] = action.workflow_version
    if action.next_step_digest is not None:
        entry[NEXT_STEP_DIGEST] = action.next_step_digest
    if action.definition_digest is not None:
        entry[DEFINITION_DIGEST] = action.definition_digest
        entry[DEFINITION_STEPS] = action.definition_steps
    return entry


# -- the definitions a run runs under ------------------------------------------------


def _set(record: Mapping[str, Any]) -> dict[str, Any]:
    """The members of `record` that set something: those null, false, [] or {}
    left out, so that a rule added to steps or definitions later, unset where
    it is not used, leaves the digests taken before it as they were."""
    return {
        name: value
        for name, value in record.items()
        if value is not None and value is not False and value != [] and value != {}
    }


def step_digest(step: Mapping[str, Any]) -> str:
    """The digest of a step as a version's answer shows it (shapes.step_shape):
    of every member it sets, its id and order among them."""
    return sha256_hex(canonical(_set(step)))


def definition_digest(version: Mapping[str, Any], steps: int) -> str:
    """The digest of a version's definition, as GET /workflows/{id}/versions/{n}
    answers it (shapes.workflow_shape), with its first `steps` steps: every
    member it sets but NOT_DEFINITION, each step's as step_digest takes it."""
    definition = _set({k: v for k, v in version.items() if k not in NOT_DEFINITION})
    definition["steps"] = [_set(step) for step in version["steps"][:steps]]
    return sha256_hex(canonical(definition))


def digest_of_definition(workflow: Workflow) -> str:
    """definition_digest of `workflow` as read, with all its steps: what a run
    starting on it, or moved to it, binds."""
    return definition_digest(shapes.workflow_shape(workflow), len(workflow.steps))


def digest_of_step(step: Step) -> str:
    """step_digest of `step` as read: what the action bringing a run to it binds."""
    return _digest_of_step_text(shapes.step_text(step, ascii=False))


@functools.lru_cache(maxsize=256)
def _digest_of_step_text(text: str) -> str:
    """step_digest of the step whose JSON text is `text`: a decision that moves
    a run on takes the digest of a step the process has most likely taken
    before, and its canonical text costs a third of the decision."""
    return step_digest(json.loads(text))


def definitions_unbound(
    genesis: Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]],
    versions: Mapping[int, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Each digest the chain binds that the definitions of `versions` (each
    version's answer, by its number) do not give, or whose version is not
    among them: its seq (0: the genesis), its field, the version it is of.

    The version a record is of is the run's at it: the genesis's (1 where it
    names none), then each move's. A definition_digest is of that version's
    first definition_steps steps; a next_step_digest of one of its steps."""
    found: list[dict[str, Any]] = []
    # Each version's step digests, taken once: a long history arrives at many steps.
    steps: dict[int, set[str]] = {}
    version = 1
    for seq, record in enumerate((genesis, *entries)):
        version = record.get(GENESIS_VERSION, version)
        shown = versions.get(version)
        bound = record.get(DEFINITION_DIGEST)
        if bound is not None and (
            shown is None or definition_digest(shown, record[DEFINITION_STEPS]) != bound
        ):
            found.append({"seq": seq, "field": DEFINITION_DIGEST, "workflow_version": version})
        arrived = record.get(NEXT_STEP_DIGEST)
        if arrived is None:
            continue
        if shown is not None and version not in steps:
            steps[version] = {step_digest(step) for step in shown["steps"]}
        if arrived not in steps.get(version, ()):
            found.append({"seq": seq, "field": NEXT_STEP_DIGEST, "workflow_version": version})
    return found


def recomputed(run: Run) -> list[str]:
    """The genesis and the hash of each of the run's actions, from their values alone."""
    hashes = [genesis_hash(genesis_of(run))]
    for seq, action in enumerate(run.actions, start=1):
        hashes.append(entry_hash(hashes[-1], entry_of(action, seq)))
    return hashes


def head_of(run: Run) -> str:
    """The head a run's next action chains to: the one stored with it. A run
    stored without one (the service always stores one: only a hand edit
    removes it) chains to the empty text, so that its audit shows the break
    at that action; a head is never computed from the history on a write."""
    return run.head_hash or ""


def chained(action: Action, seq: int, head: str) -> Action:
    """`action`, recorded at `seq` of its run's history after `head`, with its hash.
    Only one write can append to a given head (the adapters' conditional
    write), so the chain never forks."""
    return action._replace(hash=entry_hash(head, entry_of(action, seq)))


def next_hash(run: Run, decision: Decision) -> str:
    """The hash of the action that `decision` appends to `run` as it was read.

    Only one write can append to a given head (the adapters' conditional write),
    so the chain never forks; the head is head_of's."""
    step = run.current_step
    assert step is not None, "only a run in progress has a decision to chain"
    entry = {
        "run_id": run.id,
        "seq": run.history_length + 1,
        "step_id": step.id,
        "step_name": step.name,
        "action": decision.action,
        "actor": decision.actor,
        "comment": decision.comment,
        "created_at": decision.at,
    }
    return entry_hash(head_of(run), entry)


def tail_holds(run: Run, last: Sequence[Action]) -> bool:
    """Whether `last`, the run's last actions in history order, chain to each
    other and to the run's stored head (and the first to the genesis, where it
    is the history's first): what they say is what the chain says."""
    if not last:
        return True
    first_seq = run.history_length - len(last) + 1
    previous: Optional[str]
    if first_seq == 1:
        previous, linked = genesis_hash(genesis_of(run)), enumerate(last, start=1)
    else:
        previous, linked = last[0].hash, enumerate(last[1:], start=first_seq + 1)
    for seq, action in linked:
        if previous is None or action.hash != entry_hash(previous, entry_of(action, seq)):
            return False
        previous = action.hash
    return last[-1].hash == run.head_hash


# -- verifying ---------------------------------------------------------------------


def first_invalid_seq(
    genesis: Mapping[str, Any], entries: Sequence[Mapping[str, Any]], head_hash: Optional[str]
) -> Optional[int]:
    """None if the chain holds; else the first seq that breaks it.

    An entry breaks it when its seq is not its position or its stored hash is
    not the one its values and its predecessor give (an edit, a deletion, an
    insertion or a move shows at the first entry it shifts). With every entry
    sound, a head_hash that is an earlier entry's names the entry after it (one
    added behind the run's back); any other head_hash names the seq after the
    last entry (the last ones were deleted, or the head was altered)."""
    hashes = [genesis_hash(genesis)]
    for seq, entry in enumerate(entries, start=1):
        if entry["seq"] != seq or entry["hash"] != entry_hash(hashes[-1], entry):
            return seq
        hashes.append(entry["hash"])
    if head_hash == hashes[-1]:
        return None
    return hashes.index(head_hash) + 1 if head_hash in hashes else len(entries) + 1


def audit_of(
    run: Run,
    state_mismatches: tuple[str, ...] = (),
    versions: Mapping[int, Mapping[str, Any]] = {},
) -> RunAudit:
    """The run's chain recomputed from its stored values, against its stored
    hashes, its stored input against the digest the chain binds, and the
    definitions of `versions` (each version's answer, by its number) against
    the digests it binds; with the fields of its stored state that its history
    does not lead to, where the caller replayed it (chalicelib/domain/replay.py)."""
    genesis = genesis_of(run)
    entries = tuple(
        {**entry_of(action, seq), "hash": action.hash}
        for seq, action in enumerate(run.actions, start=1)
    )
    unbound = tuple(definitions_unbound(genesis, entries, versions))
    broken = [
        seq
        for seq in (
            first_invalid_seq(genesis, entries, run.head_hash),
            input_unbound_at(genesis, entries, run.input),
            *(max(mismatch["seq"], 1) for mismatch in unbound),
        )
        if seq is not None
    ]
    return RunAudit(
        run.id,
        run.workflow_id,
        {**genesis, "hash": genesis_hash(genesis)},
        run.head_hash,
        min(broken, default=None),
        entries,
        state_mismatches,
        run.input,
        unbound,
    )


def input_unbound_at(
    genesis: Mapping[str, Any], entries: Sequence[Mapping[str, Any]], data: Mapping[str, Any]
) -> Optional[int]:
    """None if `data` is the input the chain binds now; else the seq of the
    entry that binds another: the last resubmit that gave a new input, or (1)
    the genesis, where none did.

    An input edited in the store breaks the chain where it is bound, as if the
    digest there had been recomputed from it: at the genesis, which is
    computed from the stored input until a resubmit gives a new one, that
    shows in the first entry's hash already; after one, only here."""
    at, bound = 0, genesis.get(INPUT_DIGEST)
    for seq, entry in enumerate(entries, start=1):
        if "input_digest" in entry:
            at, bound = seq, entry["input_digest"]
    # A resubmit binds even an empty input; the genesis binds none ({}).
    digest = sha256_hex(canonical(data)) if at else input_digest(data)
    return None if digest == bound else max(at, 1)


def verify_document(document: Any, versions: Sequence[Any] = ()) -> tuple[bool, str]:
    """What an auditor concludes from a saved answer of GET /runs/{id}/audit,
    recomputed from its values alone, and from `versions`, saved answers of
    GET /workflows/{id}/versions/{n} for the versions whose definitions the
    chain binds: whether it holds, and one line saying so. The answer's own
    `valid`, `first_invalid_seq` and `digest_mismatches` are not trusted."""
    problem = _shape_problem(document)
    if problem:
        return False, f"invalid: {problem}"
    try:
        return _verified(document, versions)
    except (ValueError, TypeError, UnicodeError, KeyError) as exc:  # no canonical text of it
        return (
            False,
            f"invalid: run {document['run_id']}, a value is not JSON a chain holds ({exc})",
        )


def _verified(document: Mapping[str, Any], versions: Sequence[Any]) -> tuple[bool, str]:
    genesis, entries = document["genesis"], document["entries"]
    run = f"run {document['run_id']}"
    if genesis["hash"] != genesis_hash(genesis):
        return False, f"invalid: {run}, the genesis hash is not that of the genesis record"
    if input_unbound_at(genesis, entries, document.get("input") or {}) is not None:
        return False, f"invalid: {run}, the input is not the one its chain binds"
    seq = first_invalid_seq(genesis, entries, document["head_hash"])
    if seq is not None:
        return False, f"invalid: {run}, first invalid seq {seq}"
    workflow = genesis["workflow_id"]
    shown = {v["version"]: v for v in versions if isinstance(v, dict) and v.get("id") == workflow}
    for mismatch in definitions_unbound(genesis, entries, shown):
        version, at = mismatch["workflow_version"], mismatch["seq"]
        if version not in shown:
            return False, f"invalid: {run} binds version {version}'s definition: give its answer"
        return False, f"invalid: {run}, version {version} is not as seq {at} binds it"
    return True, f"valid: {run}, {len(entries)} entries, head_hash {document['head_hash']}"


def _shape_problem(document: Any) -> Optional[str]:
    """What keeps `document` from being an audit answer at all (None: nothing)."""
    if not isinstance(document, dict) or not all(name in document for name in AUDIT_FIELDS):
        return f"not an audit answer: it needs {', '.join(AUDIT_FIELDS)}"
    genesis, entries = document["genesis"], document["entries"]
    if not isinstance(genesis, dict) or not all(
        name in genesis for name in (*GENESIS_FIELDS, "hash")
    ):
        return f"the genesis needs {', '.join(GENESIS_FIELDS)} and hash"
    if genesis["run_id"] != document["run_id"]:
        return "the genesis is of another run"
    if not isinstance(document.get("input", {}), dict):
        return "input is not an object"
    if not isinstance(entries, list):
        return "entries is not a list"
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not all(
            name in entry for name in (*ENTRY_FIELDS, "hash")
        ):
            return f"entry {position} needs {', '.join(ENTRY_FIELDS)} and hash"
    return None


def main(argv: Sequence[str]) -> int:
    """`verify FILE [VERSION_FILE ...]`: exit 0 if the saved audit answer holds
    (with the saved answers of the versions its chain binds), 1 if not, 2 on misuse."""
    if len(argv) < 2 or argv[0] != "verify":
        print(
            "usage: python -m chalicelib.domain.audit verify FILE [VERSION_FILE ...]",
            file=sys.stderr,
        )
        return 2
    documents = []
    for name in argv[1:]:
        try:
            with open(name, encoding="utf-8") as saved:
                documents.append(json.load(saved))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            print(f"invalid: {name} is not a readable JSON file ({exc})")
            return 1
    holds, verdict = verify_document(documents[0], documents[1:])
    print(verdict)
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
