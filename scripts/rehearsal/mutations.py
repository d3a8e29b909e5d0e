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
from dataclasses import dataclass

from scripts.rehearsal import template as tpl
from scripts.rehearsal.rehearsal import Environment, Outcome, Reference, Run


@dataclass
class Verdict:
    mutation: tpl.Mutation
    bit: bool
    denial: str
    seconds: float
    failures: list[str]

    def line(self) -> str:
        who = ", ".join(self.mutation.roles)
        if self.bit:
            return f"  bites   {self.mutation}  [{who}]  {self.denial}  ({self.seconds:.1f} s)"
        if not self.failures:
            return f"  MISSED  {self.mutation}  [{who}]  the rehearsal passed without it"
        return f"  MISSED  {self.mutation}  [{who}]  failed otherwise: " + "; ".join(
            self.failures[:3]
        )


def listed(baseline: Run) -> list[tpl.Mutation]:
    roles = sorted({f.role for f in baseline.stack.functions.values()})
    return tpl.mutations(baseline.template, baseline.stack.resolve, roles)


def unused(
    mutations: Iterable[tpl.Mutation], baseline: Run, outcome: Outcome
) -> list[tpl.Mutation]:
    """Granted actions the first rehearsal never had allowed to (any of) their roles."""
    gaps = []
    for mutation in mutations:
        used = any(
            mutation.action in outcome.allowed.get(baseline.stack.physical[role], set())
            for role in mutation.roles
        )
        if not used:
            gaps.append(mutation)
    return gaps


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
) -> list[Verdict]:
    verdicts = []
    for mutation in mutations:
        started = time.monotonic()
        run = Run(env, mutation.apply(baseline.template.body), reference, watch=mutation)
        outcome = run.execute()
        physical = run.stack.physical if hasattr(run, "stack") else {}
        roles = {physical[r] for r in mutation.roles if r in physical}
        denial = next(
            (d for d in outcome.denials if d.action == mutation.action and d.role in roles), None
        )
        verdict = Verdict(
            mutation,
            bit=denial is not None,
            denial=f"denied on {denial.resource}" if denial is not None else "",
            seconds=time.monotonic() - started,
            failures=outcome.failures,
        )
        log(verdict.line())
        verdicts.append(verdict)
    return verdicts
