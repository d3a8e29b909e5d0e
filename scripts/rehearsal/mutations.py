"""The mutation check (docs/rehearsal.md): the rehearsal must fail when any one
granted action is gone. Each mutation (template.py) is deployed as a stack of
its own and rehearsed against `make run`'s recorded answers; it bites when
IAM refuses that action to (one of) its role(s). An action the first
rehearsal never used cannot bite, and is reported without a run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable

from scripts.rehearsal import template as tpl
from scripts.rehearsal.rehearsal import Environment, Outcome, Reference, Run


def listed(baseline: Run) -> list[tpl.Mutation]:
    roles = sorted({f.role for f in baseline.stack.functions.values()})
    return tpl.mutations(baseline.template, baseline.stack.resolve, roles)


def unused(
    mutations: Iterable[tpl.Mutation], baseline: Run, outcome: Outcome
) -> list[tpl.Mutation]:
    """Granted actions the first rehearsal never had allowed to (any of) their roles."""
    allowed = {
        role: outcome.allowed.get(name, set()) for role, name in baseline.stack.physical.items()
    }
    return [m for m in mutations if not any(m.action in allowed[role] for role in m.roles)]


def sample(mutations: list[tpl.Mutation]) -> list[tpl.Mutation]:
    """One action of each role's own policies, the same each time (the full sweep
    is REHEARSAL_MUTATIONS=all)."""
    chosen: dict[tuple[str, ...], tpl.Mutation] = {}
    for mutation in sorted(mutations, key=lambda m: hashlib.sha256(str(m).encode()).hexdigest()):
        if len(mutation.roles) == 1:
            chosen.setdefault(mutation.roles, mutation)
    return sorted(chosen.values(), key=str)


def check(
    env: Environment,
    baseline: Run,
    reference: Reference,
    mutations: list[tpl.Mutation],
    log: Callable[[str], None],
) -> int:
    """Each mutation rehearsed as a stack of its own, its verdict logged; how many
    did not bite."""
    missed = 0
    for mutation in mutations:
        started = time.monotonic()
        run = Run(env, mutation.apply(baseline.template.body), reference, watch=mutation)
        outcome = run.execute()
        physical = run.stack.physical if hasattr(run, "stack") else {}
        roles = {physical[r] for r in mutation.roles if r in physical}
        denial = next(
            (d for d in outcome.denials if d.action == mutation.action and d.role in roles), None
        )
        who = ", ".join(mutation.roles)
        if denial is not None:
            took = time.monotonic() - started
            log(f"  bites   {mutation}  [{who}]  denied on {denial.resource}  ({took:.1f} s)")
            continue
        missed += 1
        why = "failed otherwise: " + "; ".join(outcome.failures[:3])
        if not outcome.failures:
            why = "the rehearsal passed without it"
        log(f"  MISSED  {mutation}  [{who}]  {why}")
    return missed
