"""Every key of the one DynamoDB table, built and parsed here and nowhere else,
with the access patterns they serve.

Items (PK, SK are strings):

    item         PK                          SK                       holds
    workflow     WF#<id>                     #WORKFLOW                name, created_at, retired, its
                                                                      newest version (`version`,
                                                                      as its version item holds
                                                                      it), event_seq
    version      WF#<id>                     VERSION#<n, 6 digits>    description, policy, schema,
                                                                      max_returns, steps (copies
                                                                      of its step items), when
    step         WF#<workflow id>            STEP#<version, 6 d.>#    id, name, rules
                                             <order, 10 digits>
    step count   WF#<id>[#V<version>]        #STEPS                   step_count (n = 0..15; no
                 #STEPS#<n>                                           #V for version 1)
    name guard   WFNAME#<name>               #WFNAME                  workflow_id (names unique)
    run          RUN#<id>                    #RUN                     status, current step and
                                                                      its rules, seq, head_hash,
                                                                      approvals, policy, event_seq,
                                                                      list keys, workflow_version,
                                                                      inbox_shards (the list shards
                                                                      its inbox entries were put
                                                                      with)
    action       RUN#<run id>                ACT#<seq, 10 digits>     the action, its hash; the
                                                                      last of a change's carries
                                                                      its events (carried.py)
    id counter   COUNTER#<kind>              #ID                      next_id of that kind's block
    event        EVT#<subject>               <sequence, 10 digits>    the CloudEvent as delivered
                                                                      (a change without an action:
                                                                      a start, a deadline's
                                                                      reminder, a workflow's)
    idempotency  IDEM#<key>                  #IDEM                    fingerprint, claim, lease,
                                                                      response; expires_at (TTL)
      its parts  IDEM#<key>                  #IDEM#PART#<n, 4 digits> part of a long response
    inbox entry  INBOX#user:<id>             <since>#<run id, 16 d.>  run_id, step_id: the run
                 INBOX#<shard>#group:<name>                           waits in this principal's
                 INBOX#<shard>#*                                      inbox (*: anyone's)
    delegation   DELEGATIONS                 DELEG#<id, 16 digits>    the delegation, its keys,
                                                                      event_seq
    lent to      DELEGATE#<principal key>    <ends_at>#<id, 16 d.>    a copy of the delegation,
                                                                      while it is not revoked
    contact      CONTACTS                    <principal key>          email, slack (notices.py)
    notice sent  NOTICE#<once-key>           #NOTICE                  the claim of its sender
    action link  LINK#<token's SHA-256>      #LINK                    run, round, step, person,
                                                                      action, expiry
    link used    LINKUSE#<run>#<round>#<step>#<person key>  #USE      the digest used, when
    slack post   SLACK#<run>#<round>#<step>  <channel>#<ts>           a message posted about it

Indexes (schema.py), partition key -> sort key, all sorted by `id` but `due`:

    all                      all_pk = WORKFLOWS                      workflows, whole items
    runs                     runs_pk = RUNS#<shard>                  runs, keys only
    runs_by_workflow         workflow_runs_pk = WF#<wid>#<shard>     runs, keys only
    runs_by_status           status_runs_pk = <status>#<shard>       runs, keys only (in_progress
                                                                     over twice the shards)
    runs_by_workflow_status  workflow_status_runs_pk =               runs, keys only (in_progress
                             WF#<wid>#<status>#<shard>               over twice the shards)
    due                      due_pk = DEADLINE#<shard> (runs whose   keys only, sorted by due_at
                             deadline is still to apply) or DELIVERY
                             (events to send, `make run-dynamodb`)
    runs_by_workflow_started workflow_runs_pk = WF#<wid>#<shard>     runs, keys only, sorted by
                                                                     created_at

A run's shard is `id % WORKFLOW_LIST_SHARDS` (16 by default) in each list and
group inbox; twice as many in the in-progress lists (a run enters and leaves
them: two writes per run), three times as many in the open steps' inbox
(INBOX#<shard>#*: every open step's moves), four times as many for its
deadline (only the sweeper reads them). A user's inbox is one partition,
paced by what one person can decide. A run's inbox entries keep the shards
they were put with (its item's inbox_shards), so that raising the setting
leaves none behind.

Access patterns: what each request reads and writes.

    request                   reads                               writes (one transaction)
    POST /workflows           -                                   name guard, workflow, its
                                                                  version 1, steps, events
    GET /workflows/{id}       workflow item (Query)               -
    GET /workflows            `all`: one Query                    -
    POST /workflows/{id}/steps  workflow item (Query: the rules'  step (at the order after the
                              read, then the store's, for its     last step read), the steps of
                              newest version and event_seq)       the workflow and version items
                                                                  (on the version and event_seq
                                                                  read), the version's 16 step
                                                                  counts, event
    POST /workflows/{id}/versions  workflow item (Query, twice,   version item and its steps
                              as for an append)                   (keys free), workflow item (on
                                                                  the version and event_seq
                                                                  read), event
    GET /workflows/{id}/versions  workflow item, then its         -
                              VERSION# items (Query each)
    GET .../versions/{n}      workflow item and VERSION#<n>       -
                              (two Queries, at once)
    retire, reinstate         workflow item (Query, twice)        workflow item (on the flag and
                                                                  event_seq read), event
    POST /runs                workflow item (Query)               run (with its version), its 2
                                                                  events, its first step's inbox
                                                                  entries
    GET /runs/{id}            RUN#<id> partition (Query)          -
    approve, reject, cancel,  RUN#<id> (Query; with return=minimal  run, action (carrying the
    reassign                  the run item alone)                 events), inbox entries entered
                                                                  (and left, but where the
                                                                  stream's relay deletes them);
                                                                  a completion checks a step count
                                                                  of the run's version
    move                      RUN#<id>, the VERSION#<n> moved to  as a decision
    a decision's next step    VERSION#<n> of the run's version,   -
                              once per container (then kept)
    GET /runs                 one Query per shard of its list,    -
                              one BatchGetItem of its runs
    GET /inbox                one Query per inbox partition of    -
                              each of the caller's keys (16 a
                              group, 48 the open steps'), one
                              BatchGetItem of its runs
    GET /runs/{id}/events     EVT#runs/<id> and RUN#<id>'s        -
                              actions (two Queries, at once)
    POST /delegations         workflow item, where it names one   delegation, lent-to entry,
                                                                  event
    DELETE /delegations/{id}  the delegation (Query)              delegation, lent-to entry
                                                                  deleted, event
    GET /delegations          DELEGATIONS (Queries, filtered)     -
    a delegate's decision     DELEGATE#<key> of the caller and    -
    or inbox                  each group (Query each)
    the sweeper               `due`: one Query per deadline shard, run (as a decision); a
                              then each run due (Query)           reminder or escalation
    GET /workflows/{id}/stats workflow item (Query); one Query per    -
                              shard of runs_by_workflow_started;
                              BatchGetItems of its runs, then of
                              their actions (by their keys)
    Idempotency-Key           -                                   one conditional put of the key;
                                                                  its response (and parts) after
    PUT /contacts/{p}         -                                   the contact
    GET /contacts             CONTACTS (one Query)                -
    a notification            CONTACTS (BatchGetItem)             one conditional put of its
                                                                  marker, its links
    GET /act/{token}          LINK#, LINKUSE# (Query each)        -
    POST /act/{token}         as GET, then as a decision          one conditional put of the
                                                                  use, then the decision

No boto3 here, and no rule: these functions say where an item lives.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from chalicelib.domain.lifecycle import RunStatus
from chalicelib.domain.models import ANYONE
from chalicelib.storage.dynamodb.schema import (
    DEADLINE_DUE,
    RUNS_BY_STATUS_INDEX,
    RUNS_BY_WORKFLOW_INDEX,
    RUNS_BY_WORKFLOW_STATUS_INDEX,
    RUNS_INDEX,
)
from chalicelib.storage.failures import unavailable

Item = dict[str, dict[str, Any]]

WORKFLOW_SK = "#WORKFLOW"
DELEGATIONS_PK = "DELEGATIONS"
CONTACTS_PK = "CONTACTS"
NOTICE_SK = "#NOTICE"
LINK_SK = "#LINK"
LINK_USE_SK = "#USE"
NAME_SK = "#WFNAME"
RUN_SK = "#RUN"
STEP_PREFIX = "STEP#"
VERSION_PREFIX = "VERSION#"
ACTION_PREFIX = "ACT#"
EVENT_PREFIX = "EVT#"
IDEMPOTENCY_SK = "#IDEM"
PART_PREFIX = "#IDEM#PART#"
STEP_COUNT_SK = "#STEPS"
COUNTER_SK = "#ID"
# The partition of the `all` index that lists workflows.
WORKFLOWS_PK = "WORKFLOWS"
INBOX_PREFIX = "INBOX#"

SHARDS_VARIABLE = "WORKFLOW_LIST_SHARDS"
DEFAULT_SHARDS = 16
# BatchGetItem reads at most 100 keys; pages hold at most 100 runs.
MAX_SHARDS = 100
# Deadlines take this many shards per list shard: every step change of a run
# with a deadline moves its entry (a delete and a put), and only the sweeper,
# once a minute, reads them all.
DEADLINE_SHARDS_PER_SHARD = 4
# The two keys that take more writes than the others of their kind, and so more
# shards (benchmark 5, docs/performance.md): a run enters and leaves the
# in-progress lists (two writes per run, where the other lists take one), and
# every move of a run between steps open to anyone puts and deletes an entry in
# the open steps' inbox (where each group's takes only its steps' moves).
IN_PROGRESS_SHARDS_PER_SHARD = 2
OPEN_INBOX_SHARDS_PER_SHARD = 3


def configured_shards() -> int:
    """WORKFLOW_LIST_SHARDS (default 16); Unavailable, logged, if it is no count.
    It may be raised at any time (a run keeps the shard it was written to, its
    inbox entries the shards they were put with, and a list reads every shard
    below the setting); lowering it would hide the runs in the shards above it.
    The hot keys' shard counts (IN_PROGRESS_SHARDS_PER_SHARD,
    OPEN_INBOX_SHARDS_PER_SHARD) are multiples of it, so they rise with it."""
    raw = os.environ.get(SHARDS_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_SHARDS
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_SHARDS:
        raise unavailable(
            f"{SHARDS_VARIABLE} is {raw!r}: set it to a whole number from 1 to {MAX_SHARDS} "
            f"(default {DEFAULT_SHARDS}), never lower than it has been for the table"
        )
    return int(raw)


# -- items ---------------------------------------------------------------------------


def workflow_pk(workflow_id: int) -> str:
    return f"WF#{workflow_id}"


def run_pk(run_id: int) -> str:
    return f"RUN#{run_id}"


def run_id_of(pk: str) -> int:
    """The run id of a RUN#<id> partition key."""
    return int(pk.removeprefix("RUN#"))


def name_pk(name: str) -> str:
    return f"WFNAME#{name}"


def step_sk(order: int, version: int = 1) -> str:
    return f"{STEP_PREFIX}{version:06d}#{order:010d}"


def version_sk(version: int) -> str:
    return f"{VERSION_PREFIX}{version:06d}"


def action_sk(seq: int) -> str:
    return f"{ACTION_PREFIX}{seq:010d}"


def event_pk(subject: str) -> str:
    return f"{EVENT_PREFIX}{subject}"


def subject_of(pk: str) -> str:
    """The subject of an EVT#<subject> partition key, or of the RUN#<id> one
    whose action items carry a run's events (carried.py)."""
    if pk.startswith("RUN#"):
        return run_subject(run_id_of(pk))
    return pk.removeprefix(EVENT_PREFIX)


# A run's events' subject, as chalicelib.domain.events names it (a unit test
# holds the two together): the storage finds the action items that carry its
# events by it.
RUN_SUBJECT_PREFIX = "runs/"


def run_subject(run_id: int) -> str:
    return f"{RUN_SUBJECT_PREFIX}{run_id}"


def run_of_subject(subject: str) -> Optional[int]:
    """The run whose events `subject` names (None: a workflow's)."""
    number = subject.removeprefix(RUN_SUBJECT_PREFIX)
    return int(number) if subject.startswith(RUN_SUBJECT_PREFIX) and number.isdigit() else None


def event_sk(sequence: int) -> str:
    return f"{sequence:010d}"


def step_count_pk(workflow_id: int, copy: int, version: int = 1) -> str:
    """A copy of the step count of the workflow's `version` (its first's
    keys name no version)."""
    of_version = "" if version == 1 else f"#V{version}"
    return f"{workflow_pk(workflow_id)}{of_version}#STEPS#{copy}"


def counter_pk(kind: str) -> str:
    return f"COUNTER#{kind}"


def idempotency_pk(key: str) -> str:
    return f"IDEM#{key}"


def part_sk(number: int) -> str:
    return f"{PART_PREFIX}{number:04d}"


# -- inboxes and deadlines (the shared partitions) -------------------------------------


def open_inbox_shards(shards: int) -> int:
    """The partitions of the open steps' inbox, at `shards` list shards."""
    return shards * OPEN_INBOX_SHARDS_PER_SHARD


def _inbox_shards(principal: str, shards: int, open_shards: int) -> int:
    return open_shards if principal == ANYONE else shards


def inbox_pk(principal: str, run_id: int, shards: int, open_shards: int) -> str:
    """The partition of `principal`'s inbox that holds run `run_id`'s entries,
    a group's over `shards`, the open steps' over `open_shards`."""
    if principal.startswith("user:"):
        return INBOX_PREFIX + principal
    return f"{INBOX_PREFIX}{run_id % _inbox_shards(principal, shards, open_shards)}#{principal}"


def inbox_pks(principal: str, shards: int, open_shards: int) -> list[str]:
    """Every partition of `principal`'s inbox. A principal never starts with a
    digit, so a shard's key cannot be mistaken for another principal's."""
    if principal.startswith("user:"):
        return [INBOX_PREFIX + principal]
    count = _inbox_shards(principal, shards, open_shards)
    return [f"{INBOX_PREFIX}{shard}#{principal}" for shard in range(count)]


def principal_of(inbox_partition: str) -> str:
    """The principal of an inbox partition key, sharded (INBOX#<shard>#<principal>)
    or not (INBOX#<principal>): a principal never starts with a digit."""
    rest = inbox_partition.removeprefix(INBOX_PREFIX)
    shard, sep, principal = rest.partition("#")
    return principal if sep and shard.isdigit() else rest


def inbox_sk(since: str, run_id: int) -> str:
    """An inbox entry's sort key: when its run reached the step, then the run's
    id, zero-padded so that text order is (since, id) order."""
    return f"{since}#{run_id:016d}"


def inbox_position(sk: str) -> tuple[str, int]:
    """The (since, run id) an inbox entry's sort key stands for."""
    since, run_id = sk.rsplit("#", 1)
    return since, int(run_id)


def deadline_pk(run_id: int, shards: int) -> str:
    """The due index partition of a run whose deadline is still to apply."""
    return f"{DEADLINE_DUE}#{run_id % (shards * DEADLINE_SHARDS_PER_SHARD)}"


def deadline_pks(shards: int) -> list[str]:
    """Every due index partition of deadlines."""
    return [f"{DEADLINE_DUE}#{shard}" for shard in range(shards * DEADLINE_SHARDS_PER_SHARD)]


# -- the run lists -----------------------------------------------------------------------


def _workflow_part(workflow_id: int) -> str:
    return f"WF#{workflow_id}"


def status_shards(status: str, shards: int) -> int:
    """The shards of the lists of runs in `status`, at `shards` list shards."""
    return shards * IN_PROGRESS_SHARDS_PER_SHARD if status == RunStatus.IN_PROGRESS else shards


def status_keys(run_id: int, workflow_id: int, status: str, shards: int) -> Item:
    """A run's index keys that follow its status."""
    shard = run_id % status_shards(status, shards)
    return {
        "status_runs_pk": {"S": f"{status}#{shard}"},
        "workflow_status_runs_pk": {"S": f"{_workflow_part(workflow_id)}#{status}#{shard}"},
    }


def run_keys(run_id: int, workflow_id: int, status: str, shards: int) -> Item:
    """Every index key of a run: what puts it into each of the four run lists."""
    shard = run_id % shards
    return {
        "runs_pk": {"S": f"RUNS#{shard}"},
        "workflow_runs_pk": {"S": f"{_workflow_part(workflow_id)}#{shard}"},
        **status_keys(run_id, workflow_id, status, shards),
    }


def partitions(
    workflow_id: Optional[int], status: Optional[str], shards: int
) -> tuple[str, list[str]]:
    """The index and its partitions (one per shard) that list the runs of
    `workflow_id` and `status` (None: any)."""
    if workflow_id is not None and status is not None:
        index, prefix = RUNS_BY_WORKFLOW_STATUS_INDEX, f"{_workflow_part(workflow_id)}#{status}"
    elif workflow_id is not None:
        index, prefix = RUNS_BY_WORKFLOW_INDEX, _workflow_part(workflow_id)
    elif status is not None:
        index, prefix = RUNS_BY_STATUS_INDEX, status
    else:
        index, prefix = RUNS_INDEX, "RUNS"
    count = shards if status is None else status_shards(status, shards)
    return index, [f"{prefix}#{shard}" for shard in range(count)]


def workflow_run_pks(workflow_id: int, shards: int) -> list[str]:
    """Every partition of a workflow's runs (runs_by_workflow, runs_by_workflow_started)."""
    return partitions(workflow_id, None, shards)[1]


def delegation_sk(delegation_id: int) -> str:
    return f"DELEG#{delegation_id:016d}"


def delegate_pk(principal_key: str) -> str:
    return f"DELEGATE#{principal_key}"


def delegate_sk(ends_at: str, delegation_id: int) -> str:
    return f"{ends_at}#{delegation_id:016d}"


def notice_pk(once_key: str) -> str:
    return f"NOTICE#{once_key}"


def link_pk(digest: str) -> str:
    return f"LINK#{digest}"


def slack_posts_pk(run_id: int, round_: int, step_id: int) -> str:
    return f"SLACK#{run_id}#{round_}#{step_id}"


def link_use_pk(use_key: str) -> str:
    return f"LINKUSE#{use_key}"
