"""The SQLite cold start counted in instructions: a figure that does not move
from run to run, for changes too small for benchmark 3's clock to tell apart.

    .venv/bin/python -m bench.cold_start_instructions [--tree PATH ...]

`make bench-instructions` runs it (and installs valgrind when it is missing).
Each contender runs once under valgrind's callgrind, which counts the
instructions the process executes: the service serving GET /runs/{id} from a
file with one run (app.py, as benchmark 3 times it), the bare Chalice app
serving the same request, and an interpreter that reads the same event and
stops. The window benchmark 3 times, from before the import to the first
answer, is each contender's count minus the last one's; every process ends
with os._exit after its answer, so the interpreter's teardown stays out as it
does from the timed window. PYTHONHASHSEED is fixed: two runs on the same
code give the same counts to a few parts in a million.

`--tree PATH` counts the service of another checkout of this project too
(an older commit, say), against the same bare app, so two versions' ratios
can be compared without the noise of the clock.

What the count leaves out is what the kernel does: opening files, mapping
the C extensions, page faults. The clock's figure includes them; this one
says only whether the service's own work grew or shrank.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench._common import PROJECT_DIR, Figure, Report

# One cold start's window, as bench/cold_child.py times it, ended at once.
CHILD = """
import json, os, sys
MODE, EVENT = sys.argv[1], json.loads(sys.argv[2])
if MODE == "none":
    os._exit(0)
import time


class Context:
    function_name = "approval-workflows-dev"
    memory_limit_in_mb = 128
    aws_request_id = "cold"
    log_group_name = log_stream_name = "cold"


if MODE == "service":
    import app as served
else:
    from bench import bare_app as served
answer = served.app(EVENT, Context())
sys.stdout.write(str(answer["statusCode"]) + "\\n")
sys.stdout.flush()
os._exit(0)
"""

# A run to read, made by the tree's own code (the engine's API since 2026).
SETUP = """
from chalicelib import engine
from chalicelib.storage import create_storage
storage = create_storage()
workflow = engine.create_workflow(storage, "po", steps=["Manager", "Finance"])
print(engine.start_run(storage, workflow.id, "PO-1").id)
"""


def count(mode: str, event: str, tree: str, env: dict[str, str]) -> int:
    """The instructions one cold start of `mode` executes, by callgrind."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            CHILD,
            mode,
            event,
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind counted nothing for {mode}:\n{done.stderr}")
    if mode != "none" and done.stdout.splitlines()[-1:] != ["200"]:
        raise SystemExit(f"{mode} in {tree} did not answer 200:\n{done.stdout}{done.stderr}")
    return int(found.group(1))


def prepared(tree: str, database: str) -> tuple[dict[str, str], str]:
    """The environment of `tree`'s service on a file with one run, and the event
    that reads it; the tree's code compiled, as benchmark 3 does."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("WORKFLOW_")}
    env.update(
        PYTHONPATH=tree,
        PYTHONHASHSEED="0",
        WORKFLOW_STORAGE="sqlite",
        WORKFLOW_SQLITE_PATH=database,
    )
    made = subprocess.run(
        [sys.executable, "-c", SETUP], cwd=tree, env=env, capture_output=True, text=True
    )
    if made.returncode != 0:
        raise SystemExit(f"could not make a run with the code of {tree}:\n{made.stderr}")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "app.py", "chalicelib", "bench"],
        cwd=tree,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    from bench.cold_start import run_event

    return env, json.dumps(run_event(int(made.stdout.split()[-1])))


def main() -> None:
    parser = argparse.ArgumentParser(description="The SQLite cold start in instructions.")
    parser.add_argument("--tree", action="append", default=[], help="another checkout")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: `make bench-instructions` installs it")
    report = Report("cold_start_instructions", "3b. Cold start in instructions (SQLite)")
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as tmp:
        trees = [PROJECT_DIR, *(os.path.abspath(tree) for tree in args.tree)]
        env, event = prepared(PROJECT_DIR, os.path.join(tmp, "0.sqlite3"))
        none = count("none", event, PROJECT_DIR, env)
        bare = count("bare", event, PROJECT_DIR, env) - none
        report.add(Figure("bare Chalice app", bare / 1e6, "M instructions"))
        for number, tree in enumerate(trees):
            if number:
                env, event = prepared(tree, os.path.join(tmp, f"{number}.sqlite3"))
            count("service", event, tree, env)  # its files into the page cache first
            service = count("service", event, tree, env) - none
            name = "app.py" if tree == PROJECT_DIR else f"app.py of {tree}"
            report.add(Figure(name, service / 1e6, "M instructions"))
            report.add(Figure(f"{name} / bare", service / bare, "x"))
    report.print()


if __name__ == "__main__":
    main()
