"""What every Storage adapter promises of the audit chain, on each backend: the
hashes it stores are the definition's, written with the record they cover."""

from __future__ import annotations

import pytest

from chalicelib.api.representations import shape
from chalicelib.domain import errors
from chalicelib.domain.lifecycle import ActionKind
from chalicelib.storage import Storage
from tests.support import chain
from tests.support.stored import NOW, decide, stored_run, workflow_with_steps


def test_a_new_run_stores_its_genesis_as_its_head(storage: Storage) -> None:
    run = stored_run(storage, workflow_with_steps(storage, "A"), "Café ✓", NOW, "maria")

    assert run.head_hash == chain.genesis_of(shape(run))
    assert storage.get_run(run.id) == run


@pytest.mark.parametrize("last", [ActionKind.APPROVE, ActionKind.REJECT])
def test_each_decision_stores_the_hash_that_extends_the_head(
    storage: Storage, last: ActionKind
) -> None:
    run = stored_run(storage, workflow_with_steps(storage, "A", "B", "C"), "t", NOW)

    done = decide(
        storage, decide(storage, decide(storage, run), ActionKind.APPROVE, "bob"), last, "cy"
    )

    chain.assert_chained(shape(done))
    assert storage.get_run(run.id) == done


def test_lists_show_each_runs_head(storage: Storage) -> None:
    workflow = workflow_with_steps(storage, "A", "B")
    decided = decide(storage, stored_run(storage, workflow, "first", NOW))
    fresh = stored_run(storage, workflow, "second", NOW)

    listed = storage.list_runs(None, None, None, 10).items

    assert [run.head_hash for run in listed] == [fresh.head_hash, decided.head_hash]


def test_a_decision_on_a_snapshot_behind_the_stored_head_is_refused_at_the_same_step(
    storage: Storage,
) -> None:
    started = stored_run(storage, workflow_with_steps(storage, "A", "B"), "t", NOW)
    moved = decide(storage, started)
    # At the step the run is at, but with the history (and head) of before.
    behind = moved._replace(actions=(), head_hash=started.head_hash)

    with pytest.raises(errors.LostWrite):
        decide(storage, behind)

    assert storage.get_run(started.id) == moved
