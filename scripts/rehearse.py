"""The deploy rehearsal: `make package`'s stack run as deployed, offline (docs/rehearsal.md).

    python scripts/rehearse.py [--dist dist] [--runtime .lambda-runtime/python]
                               [--mutations none|sample|all] [--api-type http|rest]

Exit status 0 when the rehearsal of dist/sam.json and dist/deployment.zip
passes, and so does the mutation check.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from scripts.expand_template import expand  # noqa: E402
from scripts.rehearsal import mutations as mutation_check  # noqa: E402
from scripts.rehearsal.rehearsal import Environment, Run  # noqa: E402

say = functools.partial(print, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dist", type=Path, default=PROJECT_DIR / "dist")
    parser.add_argument("--runtime", type=Path, default=PROJECT_DIR / ".lambda-runtime" / "python")
    parser.add_argument(
        "--mutations",
        choices=("none", "sample", "all"),
        default=os.environ.get("REHEARSAL_MUTATIONS") or "sample",
    )
    parser.add_argument(
        "--only",
        default="",
        help="check only the removals whose description contains this (e.g. ssm:GetParameter)",
    )
    parser.add_argument(
        "--api-type",
        choices=("http", "rest"),
        default=os.environ.get("REHEARSAL_API_TYPE") or None,
        help="the stack's ApiType parameter (default: the template's, http)",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    # The CloudFormation the SAM template becomes on deploy.
    body = expand(json.loads((args.dist / "sam.json").read_text()))
    code = (args.dist / "deployment.zip").read_bytes()
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as work:
        env = Environment(PROJECT_DIR, code, args.runtime.resolve(), Path(work), args.api_type)
        try:
            return rehearse(env, body, args.mutations, started, args.only)
        finally:
            env.close()


def rehearse(
    env: Environment, body: dict[str, object], mutations: str, started: float, only: str = ""
) -> int:
    say("Rehearsing the packaged stack on moto, IAM enforced ...")
    baseline = Run(env, body)
    outcome = baseline.execute()
    say(
        f"{outcome.stack}: {outcome.requests} requests through API Gateway, "
        + ", ".join(f"{name} {count}x" for name, count in sorted(outcome.invocations.items()))
        + f" ({outcome.seconds:.1f} s)"
    )
    for function in sorted(baseline.stack.functions.values(), key=lambda f: f.logical_id):
        used = sorted(outcome.allowed.get(baseline.stack.physical[function.role], set()))
        say(f"  {function.logical_id} as {function.role}: {', '.join(used)}")
    for denial in outcome.denials:
        say(f"  DENIED {denial.role or denial.principal}: {denial.action} on {denial.resource}")
    for failure in outcome.failures:
        say(f"  FAILED {failure}")
    if not outcome.passed:
        say(f"The rehearsal failed ({time.monotonic() - started:.0f} s).")
        return 1
    say(
        "The rehearsal passed: every answer as make run's, "
        "no AccessDenied, no import or file missing."
    )
    if mutations == "none":
        return 0
    found = mutation_check.listed(baseline)
    gaps = mutation_check.unused(found, baseline, outcome)
    for gap in gaps:
        say(f"  UNUSED  {gap}: the rehearsal never used it, so removing it would pass")
    chosen = found if mutations == "all" else mutation_check.sample(found)
    chosen = [m for m in chosen if only in str(m)]
    say(
        f"Mutation check: {len(chosen)} of the {len(found)} granted actions removed in turn"
        + (" (REHEARSAL_MUTATIONS=all for every one)" if mutations == "sample" else "")
        + " ..."
    )
    assert outcome.reference is not None
    missed = mutation_check.check(env, baseline, outcome.reference, chosen, say)
    took = time.monotonic() - started
    if missed or gaps:
        say(
            f"The mutation check failed: {missed} removals passed, "
            f"{len(gaps)} actions unused ({took:.0f} s)."
        )
        return 1
    say(f"Every removal made the rehearsal fail for its function ({took:.0f} s in all).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
