"""The audit chain on its own: hashes as docs/audit.md defines them, and what
verifying says of every way a history can be tampered with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chalicelib.api.representations import shape
from chalicelib.domain import audit
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import Action, Decision, Run, Step
from tests.support import chain, verifiers

AT = "2026-11-29T09:24:05.616Z"
LATER = "2026-11-29T09:31:12.004Z"
STEPS = tuple(
    Step(i, 1, name, i) for i, name in enumerate(("Manager", "Finance", "CFO", "Board"), 1)
)
# docs/audit.md's worked example, pinned: its hashes are the contract.
EXAMPLE_GENESIS = "a9640e487b6a12e5cccd45b5d19e36828718927c9c4839df82506fe56d10bc67"
EXAMPLE_FIRST = "b750c692197dee62b8ee35909ffe32f6d6d5860d89925ecc5757f8d16eb39f76"
EXAMPLE_INPUT_DIGEST = "f9e5779e3418d0cdc4de71fc757a6c75a099ed3030b70edcf818ba4d6776835f"
EXAMPLE_GENESIS_WITH_INPUT = "6180d405ae0218cf9555641e9afa1ee06a773f6f9a9ef3dec1614e2b38867db6"


def run_with(*actions: tuple[str, str, str], head: Any = "recompute") -> Run:
    """Run 1 ("PO-1042: 12 laptops", by ada) with `actions` (kind, actor, comment)
    on its steps in order, each carrying the hash the definition gives."""
    run = Run(1, 1, "PO-1042: 12 laptops", RunStatus.IN_PROGRESS, STEPS[0], AT, AT, (), "ada")
    stored = [
        Action(10 + i, 1, STEPS[i].id, STEPS[i].name, ActionKind(kind), actor, comment, LATER)
        for i, (kind, actor, comment) in enumerate(actions)
    ]
    hashes = chain.hashes_of({**shape(run), "actions": [shape(a) for a in stored]})
    stored = [action._replace(hash=h) for action, h in zip(stored, hashes[1:], strict=True)]
    return run._replace(
        actions=tuple(stored), head_hash=hashes[-1] if head == "recompute" else head
    )


THREE = (
    ("approve", "maria", "Café: within budget"),
    ("approve", "finn", ""),
    ("reject", "cfo", "Not this quarter"),
)


def answer(run: Run) -> dict[str, Any]:
    return shape(audit.audit_of(run))


# -- the hashes are the definition's -------------------------------------------------


def test_the_readmes_worked_example_hashes_as_pinned() -> None:
    genesis = {
        "run_id": 1,
        "workflow_id": 1,
        "title": "PO-1042: 12 laptops",
        "requested_by": "ada",
        "created_at": AT,
    }
    entry = {
        "run_id": 1,
        "seq": 1,
        "step_id": 1,
        "step_name": "Manager",
        "action": "approve",
        "actor": "maria",
        "comment": "Café: within budget",
        "created_at": LATER,
    }

    assert audit.genesis_hash(genesis) == chain.genesis_of(genesis) == EXAMPLE_GENESIS
    assert audit.entry_hash(EXAMPLE_GENESIS, entry) == EXAMPLE_FIRST
    assert audit.input_digest({"amount": 1200}) == EXAMPLE_INPUT_DIGEST
    with_input = {**genesis, "input_digest": EXAMPLE_INPUT_DIGEST}
    assert audit.genesis_hash(with_input) == EXAMPLE_GENESIS_WITH_INPUT
    assert chain.genesis_of({**genesis, "input": {"amount": 1200}}) == EXAMPLE_GENESIS_WITH_INPUT
    page = (Path(__file__).resolve().parents[2] / "docs" / "audit.md").read_text(encoding="utf-8")
    for pinned in (
        EXAMPLE_GENESIS,
        EXAMPLE_FIRST,
        EXAMPLE_INPUT_DIGEST,
        EXAMPLE_GENESIS_WITH_INPUT,
    ):
        assert pinned in page


def test_canonical_json_sorts_keys_has_no_spaces_and_keeps_unicode() -> None:
    assert audit.canonical({"b": 1, "a": ["é", None, True]}) == '{"a":["é",null,true],"b":1}'


def test_only_the_defined_fields_are_hashed() -> None:
    genesis = {"run_id": 1, "workflow_id": 2, "title": "t", "requested_by": None, "created_at": AT}

    assert audit.genesis_hash({**genesis, "status": "completed", "hash": "x"}) == (
        chain.genesis_of(genesis)
    )


def test_a_recorded_history_recomputes_to_the_definitions_hashes() -> None:
    run = run_with(*THREE)

    assert audit.recomputed(run) == chain.hashes_of(shape(run))


@pytest.mark.parametrize("kind", list(ActionKind))
def test_the_next_hash_extends_the_head_as_read_whatever_the_action_kind(kind: ActionKind) -> None:
    run = run_with(("approve", "maria", ""))._replace(current_step=STEPS[1])
    decision = Decision(kind, "finn", "ok", RunStatus.REJECTED, None, LATER)

    expected = chain.link(
        run.head_hash or "",
        {
            "run_id": 1,
            "step_id": STEPS[1].id,
            "step_name": "Finance",
            "action": kind,
            "actor": "finn",
            "comment": "ok",
            "created_at": LATER,
        },
        2,
    )
    assert audit.next_hash(run, decision) == expected


def test_a_run_stored_without_a_head_chains_to_the_empty_text() -> None:
    """Never to a head recomputed from its history: its audit shows the break."""
    chained = run_with(("approve", "maria", ""))._replace(current_step=STEPS[1])
    headless = chained._replace(head_hash=None)
    decision = Decision(ActionKind.APPROVE, "finn", "", RunStatus.IN_PROGRESS, STEPS[2], LATER)

    assert audit.head_of(headless) == ""
    assert audit.next_hash(headless, decision) == audit.next_hash(
        chained._replace(head_hash=""), decision
    )
    assert audit.next_hash(headless, decision) != audit.next_hash(chained, decision)


# -- verifying -----------------------------------------------------------------------


def test_an_untouched_history_verifies() -> None:
    audited = answer(run_with(*THREE))

    assert (audited["valid"], audited["first_invalid_seq"]) == (True, None)
    assert audited["genesis"]["hash"] == chain.genesis_of(audited["genesis"])
    assert chain.first_broken(audited) is None
    assert audited["head_hash"] == audited["entries"][-1]["hash"]


def test_a_chain_written_before_definitions_were_bound_verifies_without_any_version() -> None:
    run = run_with(*THREE)  # stored without definition_digest, as every run before
    audited = answer(run)

    assert not {"definition_digest", "definition_steps"} & set(audited["genesis"])
    assert not any("next_step_digest" in entry for entry in audited["entries"])
    assert (audited["valid"], audited["digest_mismatches"]) == (True, [])
    assert audit.verify_document(audited)[0]


def test_a_run_without_actions_verifies_against_its_genesis() -> None:
    audited = answer(run_with())

    assert audited["valid"] and audited["entries"] == []
    assert audited["head_hash"] == audited["genesis"]["hash"]


def edited(run: Run, seq: int, **values: Any) -> Run:
    actions = list(run.actions)
    actions[seq - 1] = actions[seq - 1]._replace(**values)
    return run._replace(actions=tuple(actions))


def without(run: Run, seq: int) -> Run:
    return run._replace(actions=run.actions[: seq - 1] + run.actions[seq:])


@pytest.mark.parametrize(
    "tamper, first_invalid",
    [
        (lambda run: edited(run, 2, actor="mallory"), 2),
        (lambda run: edited(run, 1, comment="Over budget"), 1),
        (lambda run: edited(run, 3, action="approve"), 3),
        (lambda run: edited(run, 2, hash=None), 2),
        (lambda run: edited(run, 3, hash="0" * 64), 3),
        (lambda run: without(run, 1), 1),
        (lambda run: without(run, 2), 2),
        (lambda run: without(run, 3), 3),
        (lambda run: run._replace(actions=(run.actions[1], run.actions[0], run.actions[2])), 1),
        (lambda run: run._replace(title="PO-1042: 13 laptops"), 1),
        (lambda run: run._replace(head_hash="f" * 64), 4),
        (lambda run: run._replace(head_hash=None), 4),
    ],
    ids=[
        "actor-edited",
        "comment-edited",
        "kind-edited",
        "hash-removed",
        "hash-replaced",
        "first-deleted",
        "middle-deleted",
        "last-deleted",
        "reordered",
        "genesis-edited",
        "head-altered",
        "head-removed",
    ],
)
def test_every_tampering_names_the_first_seq_it_breaks(tamper: Any, first_invalid: int) -> None:
    audited = answer(tamper(run_with(*THREE)))

    assert (audited["valid"], audited["first_invalid_seq"]) == (False, first_invalid)


def test_an_entry_added_behind_the_runs_back_is_named_even_with_a_correct_hash() -> None:
    run = run_with(*THREE)
    forged = run_with(*THREE, ("approve", "mallory", "")).actions[-1]

    audited = answer(run._replace(actions=(*run.actions, forged)))

    assert chain.first_broken(audited) is None  # every link holds: only the head tells
    assert (audited["valid"], audited["first_invalid_seq"]) == (False, 4)


def test_a_run_without_actions_whose_genesis_was_edited_is_invalid_at_seq_1() -> None:
    audited = answer(run_with()._replace(requested_by="mallory"))

    assert (audited["valid"], audited["first_invalid_seq"]) == (False, 1)


# -- the offline verifier --------------------------------------------------------------


def saved(tmp_path: Path, document: Any) -> str:
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_the_verifier_accepts_a_saved_valid_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = answer(run_with(*THREE))

    assert audit.main(["verify", saved(tmp_path, document)]) == 0
    assert capsys.readouterr().out == (
        f"valid: run 1, 3 entries, head_hash {document['head_hash']}\n"
    )


def test_the_verifier_recomputes_rather_than_trusting_the_answers_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = answer(run_with(*THREE))
    document["entries"][1]["comment"] = "edited in the file"

    assert audit.main(["verify", saved(tmp_path, document)]) == 1
    assert capsys.readouterr().out == "invalid: run 1, first invalid seq 2\n"


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d["genesis"].update(hash="0" * 64), "the genesis hash is not that"),
        (lambda d: d["genesis"].update(run_id=2), "the genesis is of another run"),
        (lambda d: d["entries"][0].update(seq=2), "first invalid seq 1"),
        (lambda d: d.pop("entries"), "not an audit answer"),
        (lambda d: d["entries"][2].pop("actor"), "entry 3 needs"),
        (lambda d: d.update(entries={}), "entries is not a list"),
        (lambda d: d["entries"][0].update(comment=float("nan")), "not JSON a chain holds"),
        (lambda d: d.update(input={"x": float("inf")}), "not JSON a chain holds"),
    ],
    ids=[
        "genesis-hash",
        "genesis-run",
        "seq",
        "no-entries",
        "entry-field",
        "entries-type",
        "nan",
        "infinity",
    ],
)
def test_the_verifier_refuses_an_altered_or_malformed_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, says: str
) -> None:
    document = answer(run_with(*THREE))
    change(document)

    assert audit.main(["verify", saved(tmp_path, document)]) == 1
    line = capsys.readouterr().out
    assert line.startswith("invalid: ") and says in line and line.count("\n") == 1


def test_the_verifier_says_so_for_a_file_that_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.json"
    path.write_bytes(b"\xff not json")

    assert audit.main(["verify", str(path)]) == 1
    assert audit.main(["verify", str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().out.count("is not a readable JSON file") == 2


@pytest.mark.parametrize("argv", [[], ["verify"], ["check", "x"], ["check", "a", "b"]])
def test_the_verifier_answers_2_to_a_wrong_command_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert audit.main(argv) == 2
    assert "usage: python -m chalicelib.domain.audit verify FILE" in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, verdict",
    [
        (lambda d: None, (0, "valid\n", "")),
        (lambda d: d["entries"][1].update(actor="mallory"), (1, "", "first invalid seq 2\n")),
        (
            lambda d: d["entries"].pop(),
            (1, "", "head_hash is not the last entry's, or the input is not the one bound\n"),
        ),
    ],
    ids=["untouched", "edited", "last-deleted"],
)
@pytest.mark.parametrize("run", [verifiers.run_page_python, verifiers.run_javascript])
def test_the_pages_verifiers_agree(tmp_path: Path, change: Any, verdict: Any, run: Any) -> None:
    document = answer(run_with(*THREE))
    change(document)

    done = run(tmp_path, document)

    assert (done.returncode, done.stdout) == verdict[:2]
    assert done.stderr.endswith(verdict[2])


def test_the_pages_javascript_verifier_is_the_file_it_names() -> None:
    assert verifiers.page_block("js") == verifiers.JS_VERIFIER.read_text(encoding="utf-8")


def delegated_returned_resubmitted() -> tuple[Run, dict[int, dict[str, Any]]]:
    """A run decided for a delegator, sent back, resubmitted with a new input,
    approved through an email link, reassigned and moved to version 2: every
    optional field of an entry in its chain; and the answers of its versions."""
    from chalicelib.domain import shapes, transitions, versioning
    from chalicelib.domain.lifecycle import ActionKind
    from chalicelib.domain.models import StepRule, Workflow

    steps = tuple(StepRule(name).stored(i, 1, i) for i, name in enumerate(("A", "B"), 1))
    workflow = Workflow(1, "W", "", AT, steps)
    newer = workflow._replace(steps=(StepRule("C").stored(3, 1, 1),), version=2)
    run = transitions.start_run(workflow, "PO", "ada", AT, {"amount": 5}).made(1).run
    for change in (
        lambda r: transitions.decide(r, ActionKind.APPROVE, "dave", "", steps[1:], LATER, "bob"),
        lambda r: transitions.decide(r, ActionKind.RETURN, "mo", "Fix it", (), LATER),
        lambda r: transitions.resubmit(r, workflow, "ada", "", {"amount": 7}, LATER),
        lambda r: transitions.decide(
            r, ActionKind.APPROVE, "cy", "", steps[1:], LATER, channel="email-link"
        ),
        lambda r: versioning.reassign(r, ["user:gil"], "ada", "Gil now", LATER),
        lambda r: versioning.move(r, newer, "C", "ada", "C first", LATER),
    ):
        run = change(run).after
    return run, {v.version: shapes.workflow_shape(v) for v in (workflow, newer)}


def test_both_verifiers_check_every_optional_field_and_the_input_they_bind(
    tmp_path: Path,
) -> None:
    run, versions = delegated_returned_resubmitted()
    document = shape(audit.audit_of(run, (), versions))
    entries = document["entries"]
    assert entries[0]["on_behalf_of"] == "bob" and "round" not in entries[0]
    assert entries[2]["action"] == "resubmit" and entries[2]["round"] == 2
    assert entries[2]["input_digest"] == chain.sha256(chain.canonical({"amount": 7}))
    assert entries[3]["channel"] == "email-link" and "channel" not in entries[0]
    assert document["valid"] and document["genesis"]["input_digest"]
    assert chain.first_broken(document) is None
    # The definitions bound: the genesis's, each arrival's step, the move's version.
    assert document["genesis"]["definition_digest"] == chain.definition_digest(versions[1], 2)
    b = chain.step_digest(versions[1]["steps"][1])
    a = chain.step_digest(versions[1]["steps"][0])
    assert [e.get("next_step_digest") for e in entries] == [b, None, a, b, None, None]
    assert entries[5]["definition_digest"] == chain.definition_digest(versions[2], 1)

    def verdicts(doc: dict[str, Any], given: Any = versions) -> set[bool]:
        holds = audit.verify_document(doc, list(given.values()))[0]
        return {holds, *verifiers.verdicts(tmp_path, doc, list(given.values())).values()}

    assert verdicts(document) == {True}
    assert verdicts({**document, "input": {"amount": 5}}) == {False}
    forged = json.loads(json.dumps(document))
    forged["entries"][0]["on_behalf_of"] = "eve"
    assert verdicts(forged) == {False}
    dropped = json.loads(json.dumps(document))
    del dropped["entries"][2]["round"]
    assert verdicts(dropped) == {False}
    rechanneled = json.loads(json.dumps(document))
    rechanneled["entries"][3]["channel"] = "slack"
    assert verdicts(rechanneled) == {False}
    assert (entries[4]["approvers"], entries[5]["workflow_version"]) == (["user:gil"], 2)
    for name, index, forged_value in (("approvers", 4, ["user:eve"]), ("workflow_version", 5, 3)):
        changed = json.loads(json.dumps(document))
        changed["entries"][index][name] = forged_value
        assert verdicts(changed) == {False}, name
    # A version not given, or given as it is not: no verifier confirms the chain.
    assert verdicts(document, {1: versions[1]}) == {False}
    renamed = json.loads(json.dumps(versions))
    renamed["2"]["steps"][0]["approvers"] = ["user:eve"]
    assert verdicts(document, {int(k): v for k, v in renamed.items()}) == {False}
    requorum = json.loads(json.dumps(versions))
    requorum["1"]["steps"][1]["required_approvals"] = 2
    assert verdicts(document, {int(k): v for k, v in requorum.items()}) == {False}
    # What only says which version it is, or when, is not its definition.
    retitled = json.loads(json.dumps(versions))
    retitled["1"].update(name="Other", retired=True, version_created_at=LATER)
    assert verdicts(document, {int(k): v for k, v in retitled.items()}) == {True}
